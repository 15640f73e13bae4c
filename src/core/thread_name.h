// NameThisThread: the name `top -H`, `perf sched`, gdb and /proc show for
// one of the library's threads, so that a user (or we) can tell them from
// the application's: "iccl-engine" (a communicator's progress engine),
// "iccl-simstream" (an emulated stream's worker), "iccl-watchdog".
#pragma once

#ifdef __linux__
#include <pthread.h>
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

}  // namespace infiniccl
