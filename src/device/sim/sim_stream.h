// SimStream: one emulated copy engine. Work items run in FIFO order on a
// worker thread; Synchronize waits until everything queued so far is done.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace infiniccl {

// An emulated event: recording enqueues a marker; the event completes when
// the stream reaches it.
struct SimEvent {
  std::mutex mutex;
  std::condition_variable cv;
  uint64_t recorded = 0;   // generation of the last Record
  uint64_t completed = 0;  // generation the stream has reached
};

class SimStream {
 public:
  SimStream();
  ~SimStream();  // drains the queue, then joins the worker
  SimStream(const SimStream &) = delete;
  SimStream &operator=(const SimStream &) = delete;

  void Enqueue(std::function<void()> work);
  void Synchronize();

 private:
  void Run();

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  uint64_t enqueued_ = 0, done_ = 0;
  bool stop_ = false;
  std::thread worker_;
};

}  // namespace infiniccl
