// core/process_identity.h: how the shared-memory transport tells a peer
// process that is gone (exited, a zombie, its pid reused) from one that
// runs, and when it draws no conclusion (another pid namespace).
#include "core/process_identity.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

namespace infiniccl {
namespace {

TEST(ProcessIdentity, ThisProcessIsAlive) {
  const ProcessIdentity me = ThisProcess();
  EXPECT_EQ(me.pid, static_cast<int>(getpid()));
  EXPECT_NE(me.start_time, 0u);
  EXPECT_NE(me.pid_ns, 0u);
  EXPECT_EQ(Look(me), Liveness::kAlive);
  EXPECT_EQ(GoneWords(Liveness::kAlive), nullptr);
}

// The same pid with another start time: another process holds the pid.
TEST(ProcessIdentity, AnotherStartTimeIsAReusedPid) {
  ProcessIdentity other = ThisProcess();
  other.start_time += 1;
  EXPECT_EQ(Look(other), Liveness::kReused);
  EXPECT_STREQ(GoneWords(Liveness::kReused), "exited (its pid is another process's)");
}

// A pid read in another namespace means nothing here: no conclusion.
TEST(ProcessIdentity, AnotherNamespaceIsUnknown) {
  ProcessIdentity other = ThisProcess();
  other.pid_ns += 1;
  EXPECT_EQ(Look(other), Liveness::kUnknown);
  ProcessIdentity unread = ThisProcess();
  unread.start_time = 0;
  EXPECT_EQ(Look(unread), Liveness::kUnknown);
}

// A child that ends is a zombie until reaped, then gone.
TEST(ProcessIdentity, AChildEndsAsZombieThenExited) {
  int go[2];
  ASSERT_EQ(pipe(go), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    char c;
    close(go[1]);
    (void)!read(go[0], &c, 1);
    _exit(0);
  }
  close(go[0]);
  const ProcessIdentity id = IdentityOf(child);
  EXPECT_NE(id.start_time, 0u);
  EXPECT_EQ(Look(id), Liveness::kAlive);
  close(go[1]);  // the child reads end of file and exits
  Liveness seen = Liveness::kAlive;
  for (int i = 0; i < 500 && seen == Liveness::kAlive; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    seen = Look(id);
  }
  EXPECT_EQ(seen, Liveness::kZombie);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_EQ(Look(id), Liveness::kExited);
  EXPECT_STREQ(GoneWords(Liveness::kExited), "exited");
}

}  // namespace
}  // namespace infiniccl
