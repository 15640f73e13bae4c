// The wait primitives of the shared-memory channel (shm_channel.h): how a
// rank waits for a counter another process posts. A wait has three steps:
// - it spins, never leaving its core, for kSpin: a rank that shares its core
//   with another busy process keeps its time slice, so a hand-over from a
//   rank running on another core costs no scheduling. Skipped when the
//   node's ranks outnumber its cores: the rank waited for may need this core.
// - it polls, yielding the core between polls, up to kPollBeforeSleep: it
//   stays runnable, so it is back within a time slice, while the rank it
//   waits for gets the core whenever it needs it (four ranks on two cores).
//   Calls on device buffers staged through the stages skip this step: their
//   waits are for a peer's device copies (hundreds of microseconds a chunk),
//   and a yield hands the core to any other busy process for a whole time
//   slice, where the futex's wake-up at the post gets the rank back at once.
// - it sleeps on the counter's futex, woken by the post (a long wait: a
//   rank still computing, or one that skipped the call), in slices of
//   kSleepSliceNs, so that it looks for CommAbort and departed peers.
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <cstdint>
#include <ctime>

namespace infiniccl {
namespace shm {

constexpr std::chrono::microseconds kSpin{50};
constexpr std::chrono::microseconds kPollBeforeSleep{1000};
// A sleeping waiter wakes at least this often to look for CommAbort and for
// peers that left (their mark in the segment); a peer's process is looked
// up in /proc every kPeerCheckEvery. A departure is seen within
// kPeerCheckEvery + kSleepSliceNs (60 ms), a mark at once (the leaving rank
// wakes the sleepers).
constexpr long kSleepSliceNs = 10 * 1000 * 1000;
constexpr std::chrono::milliseconds kPeerCheckEvery{50};

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// True once done() held within `limit`, without leaving the core.
template <class Done>
bool SpinOnCore(Done done, std::chrono::microseconds limit) {
  if (limit.count() <= 0) return done();
  const auto until = std::chrono::steady_clock::now() + limit;
  for (unsigned polls = 1;; ++polls) {
    if (done()) return true;
    CpuRelax();
    if ((polls & 63) == 0 && std::chrono::steady_clock::now() >= until) return done();
  }
}

// Whether counter `value` has reached `target`, compared wrapping (2^31
// chunks apart at most).
inline bool Reached(uint32_t value, uint32_t target) {
  return static_cast<int32_t>(value - target) >= 0;
}

// Sleeps while *word is `seen`, one slice at most.
inline void FutexWait(std::atomic<uint32_t> *word, uint32_t seen) {
  timespec slice{0, kSleepSliceNs};
  // Not FUTEX_PRIVATE: the word is in memory shared between processes.
  syscall(SYS_futex, reinterpret_cast<uint32_t *>(word), FUTEX_WAIT, seen, &slice, nullptr, 0);
}

inline void FutexWakeAll(std::atomic<uint32_t> *word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t *>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr,
          0);
}

}  // namespace shm
}  // namespace infiniccl
