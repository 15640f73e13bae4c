// SpinFor: the first part of a wait on the emulated device and on the host
// side of a gate, before the thread sleeps on a condition variable.
//
// A GPU does not sleep: its copy engines pick up queued work at once, a
// stream memory operation polls, and cudaStreamSynchronize /
// cudaEventSynchronize spin on the host by default (cudaDeviceScheduleAuto
// with fewer busy contexts than cores). The emulated device's threads
// sleeping on every wait instead charged each hand-over a thread wake-up
// (5-15 us here, more under load), which the hardware does not have. They
// now poll for a bounded time first (yielding, so that on an oversubscribed
// machine the thread that will satisfy the wait gets the core), then sleep.
#pragma once

#include <chrono>
#include <thread>

namespace infiniccl {

// How long a waiter polls before it sleeps: longer than a hand-over between
// threads that are running, short enough that a thread waiting for a long
// copy, MPI call or emulated kernel costs next to nothing. 30, 50 and 100 us
// measured alike (docs/PERFORMANCE.md, "Device buffers on the emulated device").
constexpr std::chrono::microseconds kSpinBeforeSleep{30};

// How long a host thread's synchronize (StreamSynchronize, EventSynchronize)
// polls before it sleeps. CUDA's polls for the whole wait by default
// (cudaDeviceScheduleAuto, with fewer contexts than cores), so a thread
// waiting for a call's results is running when they arrive. Waking one
// instead added 5-8 us to a queued staged call + synchronize at 64 KiB
// (medians, docs/PERFORMANCE.md, "Device buffers on the emulated device"). Bounded,
// unlike CUDA: the emulated device's copy engines are threads that need the
// cores, and a wait that outlasts this (a kernel, a long copy) is not a
// hand-over.
constexpr std::chrono::microseconds kHostSyncSpin{300};

// True once `done()` held within `limit`; false if the time ran out first.
template <class Done>
bool SpinFor(Done done, std::chrono::microseconds limit = kSpinBeforeSleep) {
  if (done()) return true;
  if (limit.count() <= 0) return false;
  const auto until = std::chrono::steady_clock::now() + limit;
  for (unsigned polls = 1;; ++polls) {
    if (done()) return true;
    if ((polls & 15) == 0) {
      if (std::chrono::steady_clock::now() >= until) return done();
      std::this_thread::yield();
    }
  }
}

}  // namespace infiniccl
