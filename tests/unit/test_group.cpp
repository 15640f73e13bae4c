// Group state without MPI: nesting, the native-CCL hook calls, deferred work
// completed once at the outermost End, the first error reported and the
// state cleared after it; the public calls' codes before infinicclInit.
#include <gtest/gtest.h>
#include <infiniccl/infiniccl.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "backend/ccl/ccl_provider.h"
#include "comm/group.h"
#include "fake_ccl.h"

using infiniccl::DeferredWork;
using infiniccl::Group;
using infiniccl::Status;

namespace {

std::vector<std::string> g_log;

// The stand-in CCL (emulated device kind) in use in this process: Group's
// Start/End open and close its group; its depth shows when they did.
class InUseCcl {
 public:
  InUseCcl() {
    infiniccl::SetCclProviderForTesting(&provider_);
    infinicclUniqueId id{};
    std::unique_ptr<infiniccl::Backend> backend;
    EXPECT_TRUE(provider_.CreateComm(1, id, 0, &backend).ok());  // now used()
    infiniccl::g_group_depth = 0;
  }
  ~InUseCcl() {
    infiniccl::SetCclProviderForTesting(nullptr);
    infiniccl::FakeApi::group_end_result = infiniccl::FakeApi::kSuccess;
  }

 private:
  infiniccl::ccl::CclProviderImpl<infiniccl::FakeApi> provider_;
};

struct FakeWork : DeferredWork {
  std::string name;
  Status result;
  explicit FakeWork(std::string n, Status r = Status::Ok())
      : name(std::move(n)), result(std::move(r)) {}
  Status Complete() override {
    // The CCL's group is closed before any deferred work completes.
    g_log.push_back(name + (infiniccl::g_group_depth == 0 ? "" : " (CCL group open)"));
    return result;
  }
};

const char kA = 0, kB = 0;

TEST(Group, NestsAndCompletesOnceAtOutermostEnd) {
  g_log.clear();
  InUseCcl ccl;
  Group &g = Group::Current();
  ASSERT_TRUE(g.Start().ok());
  EXPECT_EQ(infiniccl::g_group_depth, 1);
  ASSERT_TRUE(g.Start().ok());
  EXPECT_EQ(g.depth(), 2);
  EXPECT_EQ(infiniccl::g_group_depth, 1);  // only the outermost Start opens it
  g.Deferred<FakeWork>(&kB, [] { return std::make_unique<FakeWork>("work b"); });
  g.Deferred<FakeWork>(&kA, [] { return std::make_unique<FakeWork>("work a"); });
  // Same key: the same object, not a second one.
  g.Deferred<FakeWork>(&kB, [] { return std::make_unique<FakeWork>("work b2"); });
  ASSERT_TRUE(g.End().ok());
  EXPECT_TRUE(g_log.empty());
  EXPECT_EQ(infiniccl::g_group_depth, 1);
  ASSERT_TRUE(g.End().ok());
  EXPECT_FALSE(g.active());
  // CCL end first (it only enqueues), then the works in creation order.
  EXPECT_EQ(infiniccl::g_group_depth, 0);
  EXPECT_EQ(g_log, (std::vector<std::string>{"work b", "work a"}));
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
  InUseCcl ccl;
  infiniccl::FakeApi::group_end_result = 5;  // the CCL's GroupEnd fails
  Group &g = Group::Current();
  ASSERT_TRUE(g.Start().ok());
  g.Deferred<FakeWork>(&kA, [] {
    return std::make_unique<FakeWork>("work a",
                                      Status(infinicclRemoteError, "truncated"));
  });
  const Status st = g.End();
  EXPECT_NE(st.code(), infinicclRemoteError);  // the first failure wins: the CCL's
  EXPECT_NE(st.message().find("native CCL group end"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("GroupEnd"), std::string::npos) << st.message();
  EXPECT_EQ(g_log, (std::vector<std::string>{"work a"}));
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
