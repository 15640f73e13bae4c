// What the library's own threads ask of the operating system.
//
// NameThisThread: the name `top -H`, `perf sched`, gdb and /proc show, so
// that a user (or we) can tell the library's threads from the application's:
// "iccl-engine" (a communicator's progress engine), "iccl-simstream" (an
// emulated stream's worker), "iccl-watchdog".
//
// WakeWithoutPreempting: a thread that sleeps as SCHED_BATCH, whose
// wake-ups never preempt the running thread (the Linux scheduler's rule),
// and works as SCHED_OTHER. Woken by an application thread that queued
// work for it and goes on (a call that returns at once), it does not take
// that thread's core: it runs on an idle core at once, or once that thread
// waits or its time slice ends. Everything it waits for while it works
// wakes it at once, as the application's threads are woken. Left alone where
// the thread is not SCHED_OTHER (an application that set a real-time policy)
// or the kernel refuses. (One nice step below the application at all times,
// tried first for the engine, made it a victim of priority inversion;
// docs/PERFORMANCE.md, "Device buffers on the emulated device".)
#pragma once

#ifdef __linux__
#include <pthread.h>
#include <sched.h>
#endif

namespace infiniccl {

// At most 15 characters (Linux's limit); a longer name is left unset.
inline void NameThisThread(const char *name) {
#ifdef __linux__
  (void)pthread_setname_np(pthread_self(), name);
#else
  (void)name;
#endif
}

// Owned by the thread it changes: construct and use it on that thread.
class WakeWithoutPreempting {
 public:
  WakeWithoutPreempting() {
#ifdef __linux__
    usable_ = sched_getscheduler(0) == SCHED_OTHER;
#endif
  }
  // Before the thread sleeps (true) and once it has work (false).
  void Sleeping(bool on) {
    if (!usable_ || on == batch_) return;
#ifdef __linux__
    sched_param none{};
    if (sched_setscheduler(0, on ? SCHED_BATCH : SCHED_OTHER, &none) == 0) batch_ = on;
#endif
  }

 private:
  bool usable_ = false;
  bool batch_ = false;
};

}  // namespace infiniccl
