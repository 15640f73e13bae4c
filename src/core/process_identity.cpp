#include "core/process_identity.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace infiniccl {

namespace {

enum class Stat { kRead, kGone, kUnknown };

// Fields 3 (the state) and 22 (the start time) of /proc/<pid>/stat. kGone
// only when kill() agrees that no such process exists (a /proc that hides
// other users' processes reads as unknown).
Stat ReadStat(int pid, char *state, uint64_t *start) {
  char path[64], buf[1024];
  std::snprintf(path, sizeof path, "/proc/%d/stat", pid);
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return kill(pid, 0) != 0 && errno == ESRCH ? Stat::kGone : Stat::kUnknown;
  const ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return Stat::kUnknown;
  buf[n] = '\0';
  // The name (field 2) is in parentheses and may hold anything: the fields
  // start after the last ')'.
  const char *p = std::strrchr(buf, ')');
  if (p == nullptr || p[1] != ' ') return Stat::kUnknown;
  p += 2;
  *state = *p;
  for (int field = 3; field < 22; ++field) {
    p = std::strchr(p, ' ');
    if (p == nullptr) return Stat::kUnknown;
    ++p;
  }
  *start = std::strtoull(p, nullptr, 10);
  return Stat::kRead;
}

uint64_t PidNamespace() {
  struct stat st;
  if (stat("/proc/self/ns/pid", &st) != 0) return 0;
  return static_cast<uint64_t>(st.st_ino);
}

}  // namespace

ProcessIdentity IdentityOf(int pid) {
  ProcessIdentity id;
  id.pid = pid;
  id.pid_ns = PidNamespace();
  char state = 0;
  if (ReadStat(pid, &state, &id.start_time) != Stat::kRead) id.start_time = 0;
  return id;
}

ProcessIdentity ThisProcess() { return IdentityOf(static_cast<int>(getpid())); }

Liveness Look(const ProcessIdentity &who) {
  if (who.pid <= 0 || who.pid_ns == 0 || who.start_time == 0) return Liveness::kUnknown;
  if (who.pid_ns != PidNamespace()) return Liveness::kUnknown;
  char state = 0;
  uint64_t start = 0;
  switch (ReadStat(who.pid, &state, &start)) {
    case Stat::kGone: return Liveness::kExited;
    case Stat::kUnknown: return Liveness::kUnknown;
    case Stat::kRead: break;
  }
  if (start != who.start_time) return Liveness::kReused;
  if (state == 'Z' || state == 'X') return Liveness::kZombie;
  return Liveness::kAlive;
}

const char *GoneWords(Liveness l) {
  switch (l) {
    case Liveness::kExited: return "exited";
    case Liveness::kZombie: return "exited (a zombie)";
    case Liveness::kReused: return "exited (its pid is another process's)";
    default: return nullptr;
  }
}

}  // namespace infiniccl
