// Which process a pid names, so that a peer process's end is told apart from
// a pid that lives on in another process: the pid with the process's start
// time (field 22 of /proc/<pid>/stat, in clock ticks since boot) and the pid
// namespace it was read in. Another start time is another process (the pid
// was reused); a pid of another namespace names nothing here, so nothing is
// concluded from it.
#pragma once

#include <cstdint>

namespace infiniccl {

struct ProcessIdentity {
  int pid = 0;
  uint64_t start_time = 0;  // 0: unknown
  uint64_t pid_ns = 0;      // inode of /proc/self/ns/pid; 0: unknown
};

// This process.
ProcessIdentity ThisProcess();
// The identity of `pid` as this process sees it (start time 0 if unreadable).
ProcessIdentity IdentityOf(int pid);

enum class Liveness {
  kAlive,
  kExited,   // no such process (kill() and /proc agree)
  kZombie,   // ended, not yet reaped
  kReused,   // the pid is another process's
  kUnknown,  // another pid namespace, or nothing readable: no conclusion
};
Liveness Look(const ProcessIdentity &who);
// "exited", "exited (a zombie)", "exited (its pid is another process's)";
// null for kAlive and kUnknown.
const char *GoneWords(Liveness l);

}  // namespace infiniccl
