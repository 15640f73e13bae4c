// ProgressEngine: a communicator's queue of device-buffer operations that go
// through MPI (staged, direct, two-level), run by one thread of its own in
// call order, so that each such call returns at once, ordered on the
// caller's stream as NCCL's calls are (docs/architecture/progress-engine.md).
//
// Enqueue (the caller's thread): records an event on the caller's stream
// (what the operation reads is ready once the stream reaches it), queues a
// gate wait after it on the same stream (work queued after the call runs
// only once the engine opens the gate), and hands the operation over.
// The engine's thread: waits for the event, runs the operation with its
// copies on the engine's own non-blocking stream (the caller's stream is
// held by the gate), opens the gate. An operation that fails opens its gate
// all the same (the results are undefined), becomes the engine's error,
// and every operation queued after it is skipped (gate opened, not run):
// its ranks no longer agree on what MPI calls come next.
//
// One engine (one thread) per communicator, started by its first queued
// operation: operations of one communicator reach MPI in call order on every
// rank, and two communicators driven by two threads in different orders on
// different ranks cannot block each other, which one thread per process
// would (docs/PERFORMANCE.md, "Device buffers on the emulated device").
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/coll_args.h"
#include "core/status.h"
#include "device/device_runtime.h"
#include "progress/inflight.h"

namespace infiniccl {

struct QueuedOp {
  CollArgs args;             // validated; args.stream is the caller's stream
  uint64_t seq = 0;          // collective sequence number (0: Send/Recv)
  Path path = Path::kNone;
  DeviceRuntime *device = nullptr;  // the runtime of the device buffers
  int device_id = 0;
  // Runs the operation on `a` (args with the engine's stream) and returns
  // once its results are in place.
  std::function<Status(const CollArgs &a)> run;
  // After the operation completed, failed or was skipped.
  std::function<void(const Status &)> done;
  // Optional. `after_gate`: run by Enqueue on the caller's thread right
  // after the gate wait, to queue work on the caller's stream behind the
  // gate (a one-chunk staged call's copies out, staging/pipeline.h); if it
  // fails, the operation fails with its error. `retire`: run on the engine's
  // thread after the gate opened, to wait for that work and release what it
  // used: before the next operation on the same stream starts (whose work
  // follows it there, so the wait costs nothing), else once the queue is
  // empty (or many are waiting); it must wait for nothing but work queued
  // behind this operation's own gate.
  std::function<Status()> after_gate;
  std::function<void()> retire;
};

class ProgressEngine {
 public:
  // `name`: how messages name the communicator ("comm 0x... rank 1 of 4").
  explicit ProgressEngine(std::string name);
  // Finishes the queued work (as ncclCommDestroy does), then stops.
  ~ProgressEngine();
  ProgressEngine(const ProgressEngine &) = delete;
  ProgressEngine &operator=(const ProgressEngine &) = delete;

  // Queues `op` and returns without waiting for the device or MPI. Fails
  // (nothing queued) with the engine's error once an operation has failed.
  Status Enqueue(QueuedOp op);

  // Operations queued and not yet finished: one atomic load.
  bool Busy() const { return pending_.load(std::memory_order_acquire) != 0; }
  // Blocks until every queued operation has finished; the engine's error.
  Status Drain();
  // The first failure of a queued operation ("queued AllReduce #12 ...:
  // message"), or Ok.
  Status Error() const;
  bool failed() const { return failed_.load(std::memory_order_acquire); }
  // infinicclCommAbort: operations not yet started (queued, or waiting for
  // the caller's stream to reach them) are skipped and their gates opened;
  // the one started (past its stream wait), if any, is left to finish, and
  // its gate opens when it ends. The engine's error: InvalidUsage "aborted",
  // or with `revoked` (infinicclCommRevoke) RemoteError "revoked".
  void Cancel(bool revoked = false);
  // Whether an operation is running (not merely queued).
  bool running() const { return running_.load(std::memory_order_acquire); }
  // Whether an operation has started its work (MPI, copies): what an abort
  // cannot take back.
  bool started() {
    std::lock_guard<std::mutex> lock(gate_mutex_);
    return started_;
  }
  // Destroys a cancelled engine on a thread of its own, then runs `also`:
  // its thread may still wait for a stream held by a long kernel, and the
  // aborting caller does not wait for it (as ncclCommAbort does not).
  static void DestroyLater(std::unique_ptr<ProgressEngine> engine,
                           std::function<void()> also = nullptr);
  // Returns once every engine given to DestroyLater is destroyed (Finalize,
  // before MPI and the device runtimes go), or after `bound`: then the names
  // of the engines still being destroyed (their threads wait for a stream
  // held by a kernel that has not ended), empty when all are gone.
  static std::vector<std::string> WaitDestroyed(std::chrono::milliseconds bound);

  // What the engine's thread runs now, for the watchdog; `stage()` says
  // whether it still waits for the caller's stream to reach the call.
  const InFlight &inflight() const { return inflight_; }
  bool waiting_for_stream() const { return waiting_stream_.load(std::memory_order_relaxed); }

 private:
  using DeviceKey = std::pair<DeviceRuntime *, int>;
  struct PerDevice {
    void *gate = nullptr;
    uint32_t queued = 0;           // the last target handed out
    uint32_t opened = 0;           // the gate's value (gate_mutex_): only moves forward
    bool host_function = false;    // its gate is a host function (engine.cpp)
    void *stream = nullptr;        // the engine's copy stream (engine thread only)
    std::vector<void *> events;    // free events
  };
  struct Item {
    QueuedOp op;
    void *event;      // recorded on the caller's stream
    uint32_t target;  // its gate's value that releases the caller's stream
    std::chrono::steady_clock::time_point queued;  // for TRACE's line
  };
  class Timeline;  // a queued call's TRACE line (engine.cpp)

  void Loop();
  // f() as a Status; an exception it throws becomes a SystemError naming
  // `what` (engine thread).
  template <typename F>
  static Status Guarded(const char *what, F &&f);
  void Finish(Item &item, PerDevice &d, const Status &status);
  // Opens `d`'s gate up to `target` unless it is open that far already
  // (gate_mutex_ held).
  void OpenGate(const DeviceKey &key, PerDevice &d, uint32_t target);

  const std::string name_;
  const int owner_pid_;  // the process that made it (fork: a child has no thread)
  // mutex_: the queue, devices_ and the error; gate_mutex_ (taken after
  // mutex_ where both are): the gates' opened values, so that the engine's
  // thread opens a gate without holding what Enqueue needs.
  mutable std::mutex mutex_;
  std::mutex gate_mutex_;
  std::condition_variable work_cv_, idle_cv_;
  std::deque<Item> queue_;
  struct Retiring {
    DeviceRuntime *device;
    void *stream;  // the caller's stream the work behind the gate is on
    std::function<void()> retire;
  };
  // Runs (and forgets) the retires of work on `device`'s `stream`, or all
  // of them when `device` is null. Engine thread only.
  void Retire(const DeviceRuntime *device, const void *stream);
  std::vector<Retiring> retire_;  // engine thread only
  std::map<DeviceKey, PerDevice> devices_;  // under mutex_
  std::atomic<int> pending_{0};
  std::atomic<bool> running_{false};
  std::atomic<bool> failed_{false};
  std::atomic<bool> waiting_stream_{false};
  Status error_;  // under mutex_
  std::atomic<bool> cancel_{false};
  std::atomic<bool> cancel_revoked_{false};  // Cancel(true): the error says "revoked"
  bool started_ = false;  // under gate_mutex_: an operation past its stream wait
  bool stop_ = false;
  std::thread thread_;
  InFlight inflight_;
  uint64_t tokens_ = 0;
};

}  // namespace infiniccl
