#include "device/sim/sim_stream.h"

#include "core/threads.h"

#ifdef __linux__
#include <sched.h>
#endif

namespace infiniccl {

SimStream::SimStream(const char *thread_name) : worker_([this, thread_name] { Run(thread_name); }) {}

SimStream::~SimStream() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  work_cv_.notify_one();
  worker_.join();
}

void SimStream::Enqueue(std::function<void()> work) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(work));
    ++enqueued_;
  }
  work_cv_.notify_one();
}

void SimStream::Synchronize() {
  const uint64_t target = enqueued_.load(std::memory_order_acquire);
  if (SpinFor([&] { return done_.load(std::memory_order_acquire) >= target; },
              kHostSyncSpin)) {
    return;
  }
  std::unique_lock<std::mutex> lock(mutex_);
  while (done_ < target) {
    if (target < wake_at_) wake_at_ = target;
    done_cv_.wait(lock);
  }
}

void SimStream::Run(const char *thread_name) {
  NameThisThread(thread_name);
#ifdef __linux__
  // An emulated copy engine stands for hardware beside the CPU, not for the
  // core its rank is bound to (mpirun binds each rank to one core by
  // default): its thread may run on any core the process's cgroup allows.
  // Left bound, the "copy engine" would take turns with the rank's own MPI
  // work and no copy would overlap anything. The kernel keeps only the
  // allowed CPUs of the full mask; if it refuses, the thread stays as it is.
  cpu_set_t all;
  CPU_ZERO(&all);
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) CPU_SET(cpu, &all);
  (void)sched_setaffinity(0, sizeof(all), &all);
#endif
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    if (queue_.empty() && !stop_) {
      lock.unlock();
      SpinFor([&] { return enqueued_.load(std::memory_order_acquire) > done_.load(); });
      lock.lock();
    }
    work_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stop_ and drained
    std::function<void()> work = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    work();
    lock.lock();
    if (++done_ >= wake_at_) {
      wake_at_ = UINT64_MAX;  // waiters still short of their target set it again
      done_cv_.notify_all();
    }
  }
}

}  // namespace infiniccl
