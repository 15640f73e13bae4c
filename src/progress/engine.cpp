#include "progress/engine.h"

#include <unistd.h>

#include <set>

#include "core/dtype.h"
#include "core/log.h"
#include "core/threads.h"
#include "device/spin_wait.h"
#include "staging/staging_pool.h"

namespace infiniccl {

namespace {

constexpr size_t kMaxRetiring = 16;  // finished operations whose slots wait

// The error of a cancelled engine's operations (Cancel).
Status CancelledStatus(bool revoked) {
  if (revoked) {
    return Status(infinicclRemoteError,
                  "the communicator was revoked (infinicclCommRevoke) before its queued call "
                  "started; shrink it or destroy it");
  }
  return Status(infinicclInvalidUsage, "the communicator was aborted (infinicclCommAbort)");
}

// Gates that are host functions (DeviceRuntime::GateIsHostFunction) where a
// device runs its host functions one at a time (HostFunctionsSerialized,
// as CUDA and HIP do): a closed gate of one
// communicator holds back the host functions (gates) of every other stream.
// Two communicators' closed gates on one device can then wait for each other
// across ranks: rank 0's host-function thread inside B's gate while A's
// waits behind it, rank 1 the mirror image. So only one engine at a time
// has closed host-function gates on a device: a call queueing one waits on
// its caller's thread until every other engine's gates there are open. One
// engine's gates alone cannot form a cycle: its operations complete in call
// order on every rank, and none waits for a host function to run. Calls on
// two communicators of one device are then made in the same order on every
// rank, as NCCL asks of communicators that share a device; threads that
// drive one communicator each in no agreed order need stream memory waits
// or a runtime with a host-function thread per stream.
class HostFunctionGates {
 public:
  using Key = std::pair<DeviceRuntime *, int>;
  static HostFunctionGates &Get() {
    static auto *g = new HostFunctionGates();  // lives through exit
    return *g;
  }
  // One more closed gate of `engine` on `key`, once no other engine has any.
  void Acquire(const Key &key, const void *engine) {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [&] {
      auto it = closed_.find(key);
      return it == closed_.end() || (it->second.size() == 1 && it->second.count(engine));
    });
    ++closed_[key][engine];
  }
  // `n` of `engine`'s gates on `key` opened (or never queued).
  void Release(const Key &key, const void *engine, uint32_t n) {
    if (n == 0) return;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = closed_.find(key);
      if (it == closed_.end()) return;
      auto mine = it->second.find(engine);
      if (mine == it->second.end()) return;
      mine->second -= std::min(n, mine->second);
      if (mine->second != 0) return;
      it->second.erase(mine);
      if (it->second.empty()) closed_.erase(it);
    }
    cv_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::map<Key, std::map<const void *, uint32_t>> closed_;
};

}  // namespace

// Where a queued call's time went, for INFINICCL_DEBUG=TRACE (one line per
// call, as a blocking staged call's "staged ..." line): from the call's
// Enqueue to the engine taking it (picked_us), to the caller's stream
// reaching the call (the work before it and a one-chunk call's copies in:
// stream_wait_us), the operation itself (MPI, or the whole pipeline:
// run_us), and from the call to the gate opened (gate_us: all of it but a
// one-chunk call's copies out, which follow on the caller's stream).
class ProgressEngine::Timeline {
 public:
  using Clock = std::chrono::steady_clock;
  explicit Timeline(Clock::time_point queued)
      : on_(LogEnabled(LogLevel::kTrace)), queued_(queued) {
    Mark(&picked);
    stream_ready = ran = picked;  // a skipped call: nothing waited, nothing ran
  }
  void Mark(Clock::time_point *at) {
    if (on_) *at = Clock::now();
  }
  void Log(const Item &item, const std::string &name, bool skipped) const {
    if (!on_) return;
    const auto us = [](Clock::time_point from, Clock::time_point to) {
      return std::chrono::duration<double, std::micro>(to - from).count();
    };
    const Clock::time_point opened = Clock::now();
    const CollArgs &a = item.op.args;
    INFINICCL_TRACE(
        "queued %s %zu x %s #%llu on %s (path %s%s): picked_us=%.1f "
        "stream_wait_us=%.1f run_us=%.1f gate_us=%.1f",
        CollKindName(a.kind), a.count, DataTypeName(a.dtype),
        static_cast<unsigned long long>(item.op.seq), name.c_str(),
        PathName(item.op.path), skipped ? ", skipped" : "", us(queued_, picked),
        us(picked, stream_ready), us(stream_ready, ran), us(queued_, opened));
  }
  Clock::time_point picked, stream_ready, ran;

 private:
  bool on_;
  Clock::time_point queued_;
};

ProgressEngine::ProgressEngine(std::string name)
    : name_(std::move(name)), owner_pid_(getpid()) {}

template <typename F>
Status ProgressEngine::Guarded(const char *what, F &&f) {
  // An exception in a queued operation's closure (bad_alloc, say) would end
  // the process from this thread: it becomes the operation's error instead,
  // and the gate opens as for any failure.
  try {
    return f();
  } catch (const std::exception &e) {
    return MakeStatus(infinicclSystemError, "the queued operation's %s step threw: %s", what,
                      e.what());
  } catch (...) {
    return MakeStatus(infinicclSystemError, "the queued operation's %s step threw", what);
  }
}

ProgressEngine::~ProgressEngine() {
  Drain();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  work_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  for (auto &[key, d] : devices_) {
    // On the destroying thread: its current device is put back afterwards.
    DeviceRuntime *device = key.first;
    int current = -1;
    const bool had = device->GetDevice(&current).ok();
    device->SetDevice(key.second);
    for (void *e : d.events) device->EventDestroy(e);
    if (d.stream != nullptr) {
      device->StreamSynchronize(d.stream);
      device->StreamDestroy(d.stream);
    }
    if (d.gate != nullptr) device->GateDestroy(d.gate);
    if (had) device->SetDevice(current);
  }
}

Status ProgressEngine::Enqueue(QueuedOp op) {
  // Read only for TRACE's line: no clock read on the call's path otherwise.
  const auto queued = LogEnabled(LogLevel::kTrace)
                          ? std::chrono::steady_clock::now()
                          : std::chrono::steady_clock::time_point{};
  DeviceRuntime &device = *op.device;
  const DeviceKey key{op.device, op.device_id};
  // Released below unless the gate is queued; then when it opens.
  const bool host_function = device.GateIsHostFunction() && device.HostFunctionsSerialized();
  if (host_function) HostFunctionGates::Get().Acquire(key, this);
  uint32_t unqueued = host_function ? 1 : 0;
  struct Unqueued {
    const DeviceKey &key;
    const void *engine;
    uint32_t &n;
    ~Unqueued() { HostFunctionGates::Get().Release(key, engine, n); }
  } release_unqueued{key, this, unqueued};
  std::unique_lock<std::mutex> lock(mutex_);
  if (failed_.load(std::memory_order_relaxed)) return error_;
  // A child of fork() has this object but not its thread: its queued call
  // would wait for a thread that does not exist.
  if (owner_pid_ != getpid()) {
    return Status(infinicclInvalidUsage,
                  "the communicator was made before fork(); a child process cannot use "
                  "it (make a new one in the child)");
  }
  // The thread before the gate: a gate queued for a thread that could not
  // start would never open.
  if (!thread_.joinable()) {
    try {
      thread_ = std::thread(&ProgressEngine::Loop, this);
    } catch (const std::exception &e) {
      return MakeStatus(infinicclSystemError, "cannot start the progress engine's thread: %s",
                        e.what());
    }
  }
  // Written once, before any operation for the device is queued: the
  // engine's thread reads it when it opens a gate (under gate_mutex_ only).
  const auto [entry, made] = devices_.try_emplace(key);
  PerDevice &d = entry->second;
  if (made) d.host_function = host_function;
  if (d.gate == nullptr) INFINICCL_RETURN_IF_ERROR(device.GateCreate(&d.gate));
  void *event = nullptr;
  if (!d.events.empty()) {
    event = d.events.back();
    d.events.pop_back();
  } else {
    INFINICCL_RETURN_IF_ERROR(device.EventCreate(&event));
  }
  // What the operation reads: the caller's stream up to here.
  Status st = device.EventRecord(event, op.args.stream);
  // What reads its results: the caller's stream from here, once opened.
  const uint32_t target = d.queued + 1;
  if (st.ok()) st = device.GateWait(op.args.stream, d.gate, target);
  if (!st.ok()) {
    d.events.push_back(event);
    return st;
  }
  d.queued = target;
  unqueued = 0;  // released as the gate opens
  // Work behind the gate on the caller's stream; the operation is queued
  // whatever happens, so that its gate opens.
  Status behind;
  if (op.after_gate) behind = op.after_gate();
  if (!behind.ok()) op.run = [behind](const CollArgs &) { return behind; };
  pending_.fetch_add(1, std::memory_order_acq_rel);
  queue_.push_back(Item{std::move(op), event, target, queued});
  lock.unlock();
  work_cv_.notify_one();
  return behind;
}

Status ProgressEngine::Drain() {
  if (!Busy()) return Error();
  std::unique_lock<std::mutex> lock(mutex_);
  idle_cv_.wait(lock, [&] { return pending_.load(std::memory_order_acquire) == 0; });
  return error_;
}

Status ProgressEngine::Error() const {
  if (!failed()) return Status::Ok();
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

void ProgressEngine::Cancel(bool revoked) {
  std::lock_guard<std::mutex> lock(mutex_);
  cancel_ = true;
  if (!failed_.load()) {
    error_ = CancelledStatus(revoked);
    cancel_revoked_.store(revoked);
    failed_.store(true, std::memory_order_release);
  }
  // Queued operations are skipped by the thread (gates opened in order). An
  // operation past its stream wait runs on: MPI or its copies may still
  // write its results, so its gate (and those after it: a gate is one
  // counter) opens only when it ends. Otherwise the gates open now, so no
  // stream waits for work that will not run; after this, no operation
  // starts and no `done` is called (gate_mutex_).
  std::lock_guard<std::mutex> gates(gate_mutex_);
  if (started_) return;
  for (auto &[key, d] : devices_) {
    if (d.gate != nullptr) OpenGate(key, d, d.queued);
  }
}

void ProgressEngine::OpenGate(const DeviceKey &key, PerDevice &d, uint32_t target) {
  if (target == d.opened || !GateReached(target, d.opened)) return;
  const uint32_t opened = target - d.opened;
  d.opened = target;
  key.first->GateOpen(d.gate, target);
  if (d.host_function) HostFunctionGates::Get().Release(key, this, opened);
}

namespace {
// Engines DestroyLater has not finished destroying, by their names (an
// empty name: nothing but `also`).
struct Destroying {
  std::mutex mutex;
  std::condition_variable done;
  std::multiset<std::string> pending;
};
Destroying &Pending() {
  static auto *d = new Destroying();  // lives through exit
  return *d;
}
}  // namespace

void ProgressEngine::DestroyLater(std::unique_ptr<ProgressEngine> engine,
                                  std::function<void()> also) {
  Destroying &d = Pending();
  std::string name = engine != nullptr ? engine->name_ : std::string();
  std::multiset<std::string>::iterator entry;
  {
    std::lock_guard<std::mutex> lock(d.mutex);
    entry = d.pending.insert(std::move(name));
  }
  // On the heap, reached through one pointer: nothing that `also` holds is
  // copied, so all of it goes on the thread that runs it.
  struct Job {
    ProgressEngine *engine;
    std::function<void()> also;
  };
  auto *job = new Job{engine.release(), std::move(also)};
  auto finish = [job, &d, entry] {
    delete job->engine;
    if (job->also) job->also();
    delete job;
    std::lock_guard<std::mutex> lock(d.mutex);
    d.pending.erase(entry);
    if (d.pending.empty()) d.done.notify_all();
  };
  try {
    std::thread(finish).detach();
  } catch (const std::exception &) {
    finish();
  }
}

std::vector<std::string> ProgressEngine::WaitDestroyed(std::chrono::milliseconds bound) {
  Destroying &d = Pending();
  std::unique_lock<std::mutex> lock(d.mutex);
  if (d.done.wait_for(lock, bound, [&] { return d.pending.empty(); })) return {};
  return std::vector<std::string>(d.pending.begin(), d.pending.end());
}

void ProgressEngine::Finish(Item &item, PerDevice &d, const Status &status) {
  // The error first: whoever the open gate wakes must find it.
  if (!status.ok() && !failed_.load(std::memory_order_relaxed)) {
    std::string what = MakeStatus(status.code(), "queued %s #%llu on %s (path %s) failed: ",
                                  CollKindName(item.op.args.kind),
                                  static_cast<unsigned long long>(item.op.seq),
                                  name_.c_str(), PathName(item.op.path))
                           .message();
    LogPrint(LogLevel::kWarn, "%s%s; the stream was released (results undefined); later "
             "calls on the communicator return this error",
             what.c_str(), status.message().c_str());
    std::lock_guard<std::mutex> lock(mutex_);
    if (!failed_.load(std::memory_order_relaxed)) {
      error_ = Status(status.code(), what + status.message());
      failed_.store(true, std::memory_order_release);
    }
  }
  // Not under mutex_: the gate wakes the caller's stream (and through it
  // the caller, whose next call needs mutex_), which may preempt this
  // thread at once; the caller then waited, lock held by a thread not
  // running, up to a time slice (docs/PERFORMANCE.md, "Device buffers on the emulated device").
  // Under gate_mutex_: once Cancel has returned, no `done` runs (an aborted
  // communicator is freed without waiting for this thread).
  std::lock_guard<std::mutex> lock(gate_mutex_);
  if (item.op.done && !cancel_.load()) {
    (void)Guarded("done", [&] {
      item.op.done(status);
      return Status::Ok();
    });
  }
  OpenGate({item.op.device, item.op.device_id}, d, item.target);
  started_ = false;
}

void ProgressEngine::Retire(const DeviceRuntime *device, const void *stream) {
  std::vector<Retiring> keep;
  for (Retiring &r : retire_) {
    if (device == nullptr || (r.device == device && r.stream == stream)) {
      (void)Guarded("retire", [&] {
        r.retire();
        return Status::Ok();
      });
    } else {
      keep.push_back(std::move(r));
    }
  }
  retire_.swap(keep);
}

void ProgressEngine::Loop() {
  // Pinned frees wait for the device, whose streams wait for this thread's
  // gates: another thread does them (staging_pool.h).
  StagingPool::DeferFreesOnThisThread();
  NameThisThread("iccl-engine");
  // Asleep for its next call, the thread does not preempt the caller that
  // queues it, which returns and goes on queueing kernels (core/threads.h).
  WakeWithoutPreempting quiet;
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    if (queue_.empty() && !stop_) {
      // The next call often comes at once (a training step's buckets).
      lock.unlock();
      if (!SpinFor([&] { return pending_.load(std::memory_order_acquire) != 0; })) {
        quiet.Sleeping(true);  // woken by a call: not in the caller's way
      }
      lock.lock();
    }
    work_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stop_ and nothing left
    Item item = std::move(queue_.front());
    queue_.pop_front();
    const bool skip = failed_.load(std::memory_order_relaxed) || cancel_;
    const Status skipped = error_;
    PerDevice &d = devices_[{item.op.device, item.op.device_id}];
    running_.store(true, std::memory_order_release);
    lock.unlock();
    quiet.Sleeping(false);  // woken by its copies and MPI: at once
    // What earlier operations left behind their gates on this stream comes
    // before this operation's event there: waited for now at no cost, and
    // their staging slots go back to the pool before the next call leases
    // one. Left for an empty queue, the slots of back-to-back calls waited
    // behind a queue that never emptied, and each call leased a new one.
    Retire(item.op.device, item.op.args.stream);

    DeviceRuntime &device = *item.op.device;
    Timeline times(item.queued);
    Status st = skipped;
    if (!skip) {
      inflight_.Publish(item.op.args, item.op.seq, ++tokens_);
      inflight_.SetPath(item.op.path);
      waiting_stream_.store(true, std::memory_order_relaxed);
      st = device.SetDevice(item.op.device_id);
      // The work queued before the call on the caller's stream.
      if (st.ok()) st = device.EventSynchronize(item.event);
      times.Mark(&times.stream_ready);
      waiting_stream_.store(false, std::memory_order_relaxed);
      {
        // Aborted while it waited for the stream: not started after all.
        std::lock_guard<std::mutex> gates(gate_mutex_);
        if (cancel_.load()) {
          if (st.ok()) st = CancelledStatus(cancel_revoked_.load());
        } else {
          started_ = st.ok();
        }
      }
      if (st.ok() && d.stream == nullptr) st = device.StreamCreateNonBlocking(&d.stream);
      if (st.ok()) {
        CollArgs a = item.op.args;
        a.stream = d.stream;
        st = Guarded("run", [&] { return item.op.run(a); });
      }
      times.Mark(&times.ran);
      inflight_.End();
    }
    Finish(item, d, st);
    times.Log(item, name_, skip);

    if (item.op.retire) {
      retire_.push_back(Retiring{item.op.device, item.op.args.stream, std::move(item.op.retire)});
    }
    item.op = QueuedOp{};  // its closures (and what they hold) go here
    lock.lock();
    d.events.push_back(item.event);
    // What finished operations used, once nothing waits to run (and before
    // Drain returns): each waits only for copies behind an open gate.
    if (!retire_.empty() && (queue_.empty() || retire_.size() >= kMaxRetiring)) {
      lock.unlock();
      Retire(nullptr, nullptr);
      lock.lock();
    }
    running_.store(false, std::memory_order_release);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      // Drain's waiters woken with mutex_ free, as the gate above.
      lock.unlock();
      idle_cv_.notify_all();
      lock.lock();
    }
  }
}

}  // namespace infiniccl
