// SimStream: one emulated copy engine. Work items run in FIFO order on a
// worker thread; Synchronize waits until everything queued so far is done.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "device/spin_wait.h"

namespace infiniccl {

// An emulated event: recording enqueues a marker; the event completes when
// the stream reaches it. Each record is a new generation.
class SimEvent {
 public:
  // A new generation (EventRecord), or the last one recorded (what a wait
  // waits for).
  uint64_t Record() {
    std::lock_guard<std::mutex> lock(mutex_);
    return ++recorded_;
  }
  uint64_t Last() {
    std::lock_guard<std::mutex> lock(mutex_);
    return recorded_;
  }
  // The stream has reached `generation`'s marker.
  void Complete(uint64_t generation) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (Reached(generation)) return;
      completed_.store(generation, std::memory_order_release);
    }
    cv_.notify_all();
  }
  // Whether the stream has reached the last generation recorded (true
  // when none was).
  bool Done() {
    std::lock_guard<std::mutex> lock(mutex_);
    return Reached(recorded_);
  }
  // `spin`: kSpinBeforeSleep on a stream (the device), kHostSyncSpin on a
  // host thread (EventSynchronize).
  void Wait(uint64_t generation, std::chrono::microseconds spin = kSpinBeforeSleep) {
    if (SpinFor([&] { return Reached(generation); }, spin)) return;
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [&] { return Reached(generation); });
  }

 private:
  bool Reached(uint64_t generation) const {
    return completed_.load(std::memory_order_acquire) >= generation;
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  uint64_t recorded_ = 0;                // generation of the last Record
  std::atomic<uint64_t> completed_{0};   // generation the stream has reached
};

class SimStream {
 public:
  // `thread_name`: what top -H and gdb show for its worker.
  explicit SimStream(const char *thread_name = "iccl-simstream");
  ~SimStream();  // drains the queue, then joins the worker
  SimStream(const SimStream &) = delete;
  SimStream &operator=(const SimStream &) = delete;

  void Enqueue(std::function<void()> work);
  // Everything queued so far has run (a host thread's wait: kHostSyncSpin).
  void Synchronize();

 private:
  void Run(const char *thread_name);

  std::mutex mutex_;
  std::condition_variable work_cv_;  // the worker waits for work or stop_
  std::condition_variable done_cv_;  // Synchronize waits for done_
  std::deque<std::function<void()>> queue_;
  // Written under mutex_, read without it by the polls before a wait.
  std::atomic<uint64_t> enqueued_{0}, done_{0};
  // The smallest done_ a Synchronize waits for: the worker wakes waiters
  // only then, not after every item (a wake-up costs several us).
  uint64_t wake_at_ = UINT64_MAX;
  bool stop_ = false;
  std::thread worker_;
};

}  // namespace infiniccl
