// Group state without MPI: nesting, the native-CCL hook calls, deferred work
// completed once at the outermost End, the first error reported and the
// state cleared after it; the public calls' codes before infinicclInit.
#include <gtest/gtest.h>
#include <infiniccl/infiniccl.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "comm/group.h"

using infiniccl::CclGroupHook;
using infiniccl::DeferredWork;
using infiniccl::Group;
using infiniccl::Status;

namespace {

std::vector<std::string> g_log;

struct FakeHook : CclGroupHook {
  Status end_status;
  const char *Name() const override { return "FakeCCL"; }
  Status GroupStart() override {
    g_log.push_back("ccl start");
    return Status::Ok();
  }
  Status GroupEnd() override {
    g_log.push_back("ccl end");
    return end_status;
  }
};

struct FakeWork : DeferredWork {
  std::string name;
  Status result;
  explicit FakeWork(std::string n, Status r = Status::Ok())
      : name(std::move(n)), result(std::move(r)) {}
  Status Complete() override {
    g_log.push_back(name);
    return result;
  }
};

const char kA = 0, kB = 0;

TEST(Group, NestsAndCompletesOnceAtOutermostEnd) {
  g_log.clear();
  FakeHook hook;
  infiniccl::RegisterCclGroupHook(&hook);
  Group &g = Group::Current();
  ASSERT_TRUE(g.Start().ok());
  ASSERT_TRUE(g.Start().ok());
  EXPECT_EQ(g.depth(), 2);
  g.Deferred<FakeWork>(&kB, [] { return std::make_unique<FakeWork>("work b"); });
  g.Deferred<FakeWork>(&kA, [] { return std::make_unique<FakeWork>("work a"); });
  // Same key: the same object, not a second one.
  g.Deferred<FakeWork>(&kB, [] { return std::make_unique<FakeWork>("work b2"); });
  ASSERT_TRUE(g.End().ok());
  EXPECT_EQ(g_log, (std::vector<std::string>{"ccl start"}));
  ASSERT_TRUE(g.End().ok());
  EXPECT_FALSE(g.active());
  // CCL end first (it only enqueues), then the works in creation order.
  EXPECT_EQ(g_log,
            (std::vector<std::string>{"ccl start", "ccl end", "work b", "work a"}));
  infiniccl::UnregisterCclGroupHook(&hook);
}

TEST(Group, EndWithoutStartIsInvalidUsage) {
  const Status st = Group::Current().End();
  EXPECT_EQ(st.code(), infinicclInvalidUsage);
  EXPECT_NE(st.message().find("GroupStart"), std::string::npos);
}

TEST(Group, CallErrorIsReportedAfterEverythingCompleted) {
  g_log.clear();
  Group &g = Group::Current();
  ASSERT_TRUE(g.Start().ok());
  g.NoteCallError(
      Status(infinicclInvalidArgument, "infinicclSend: peer 9 is out of range"));
  g.NoteCallError(Status(infinicclInvalidArgument, "infinicclRecv: second"));
  g.Deferred<FakeWork>(&kA, [] { return std::make_unique<FakeWork>("work a"); });
  const Status st = g.End();
  EXPECT_EQ(st.code(), infinicclInvalidArgument);
  EXPECT_NE(st.message().find("2 calls in this group failed"), std::string::npos);
  EXPECT_NE(st.message().find("peer 9"), std::string::npos);
  EXPECT_EQ(g_log, (std::vector<std::string>{"work a"}));
  // Cleared: the next group is clean.
  ASSERT_TRUE(g.Start().ok());
  EXPECT_TRUE(g.End().ok());
}

TEST(Group, CompletionAndHookErrors) {
  g_log.clear();
  FakeHook hook;
  hook.end_status = Status(infinicclSystemError, "launch failed");
  infiniccl::RegisterCclGroupHook(&hook);
  Group &g = Group::Current();
  ASSERT_TRUE(g.Start().ok());
  g.Deferred<FakeWork>(&kA, [] {
    return std::make_unique<FakeWork>("work a",
                                      Status(infinicclRemoteError, "truncated"));
  });
  const Status st = g.End();
  EXPECT_EQ(st.code(), infinicclSystemError);  // the first failure wins
  EXPECT_NE(st.message().find("FakeCCL"), std::string::npos);
  EXPECT_EQ(g_log, (std::vector<std::string>{"ccl start", "ccl end", "work a"}));
  infiniccl::UnregisterCclGroupHook(&hook);
}

TEST(Group, StateBelongsToTheThread) {
  Group &g = Group::Current();
  ASSERT_TRUE(g.Start().ok());
  bool other_active = true;
  infinicclResult_t other_end = infinicclSuccess;
  std::thread t([&] {
    other_active = Group::Current().active();
    other_end = infinicclGroupEnd();  // this thread never started one
  });
  t.join();
  EXPECT_FALSE(other_active);
  EXPECT_EQ(other_end, infinicclInvalidUsage);
  EXPECT_TRUE(g.active());
  EXPECT_TRUE(g.End().ok());
}

TEST(Group, PublicCallsNeedNoInit) {
  EXPECT_EQ(infinicclGroupEnd(), infinicclInvalidUsage);
  EXPECT_EQ(infinicclGroupStart(), infinicclSuccess);
  EXPECT_EQ(infinicclGroupStart(), infinicclSuccess);
  EXPECT_EQ(infinicclGroupEnd(), infinicclSuccess);
  EXPECT_EQ(infinicclGroupEnd(), infinicclSuccess);
  EXPECT_EQ(infinicclGroupEnd(), infinicclInvalidUsage);
}

}  // namespace
