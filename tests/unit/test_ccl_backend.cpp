// CclBackend<Api> against a recording stand-in CCL (no NCCL, no device): the
// calls it issues for each collective (native or grouped Send/Recv, with the
// offsets, element types and counts of the mapping), how CCL failures and
// asynchronous errors become statuses, and that groups stay balanced when a
// call inside fails. Compiles the template on every build.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backend/ccl/ccl_backend.h"
#include "fake_ccl.h"

namespace infiniccl {
namespace {

char g_send[1024];
char g_recv[1024];

CollArgs Args(CollKind kind, infinicclDataType_t dtype, size_t count, int root = 0,
              bool in_place = false) {
  return CollArgs{kind,         g_send, g_recv,  count,   dtype,
                  infinicclSum, root,   nullptr, in_place};
}

// The log as "Call(offset,count,peer)" with offsets from g_send / g_recv.
std::string Render(const std::vector<Issued> &log) {
  std::string out;
  for (const Issued &i : log) {
    const char *base = i.call == "Recv" ? g_recv : g_send;
    out += i.call + "(" + std::to_string(static_cast<const char *>(i.buf) - base) + "," +
           std::to_string(i.count) + "," + std::to_string(i.peer) + ") ";
  }
  return out;
}

TEST(CclBackend, NativeCallsWithMappedTypeAndCount) {
  FakeComm comm;
  {
    ccl::CclBackend<FakeNativeApi> b(&comm, 1, 3);
    EXPECT_STREQ(b.Name(), "FAKE");
    ASSERT_TRUE(b.Run(Args(CollKind::kBroadcast, infinicclInt16, 5, 2)).ok());
    ASSERT_TRUE(b.Run(Args(CollKind::kAllReduce, infinicclFloat16, 5)).ok());
    ASSERT_TRUE(b.Run(Args(CollKind::kAllToAll, infinicclUInt16, 4)).ok());
    ASSERT_TRUE(b.Run(Args(CollKind::kGather, infinicclInt32, 4, 1)).ok());
    ASSERT_TRUE(b.Run(Args(CollKind::kScatter, infinicclInt64, 4, 0)).ok());
  }
  EXPECT_TRUE(comm.destroyed);
  EXPECT_EQ(Render(comm.log),
            "Broadcast(0,10,2) AllReduce(0,5,-1) AlltoAll(0,8,-1) Gather(0,4,1) "
            "Scatter(0,4,0) ");
  EXPECT_EQ(comm.log[0].type, CclType::kInt8);  // 16-bit integers move as bytes
  EXPECT_EQ(comm.log[1].type, CclType::kFloat16);
  EXPECT_EQ(comm.log[3].type, CclType::kInt32);
  EXPECT_EQ(g_group_depth, 0);
}

TEST(CclBackend, NativeCallsMissingFromTheLoadedLibraryGoGrouped) {
  // Built against a CCL with AlltoAll, Gather and Scatter, run with an older
  // one loaded first: grouped Send/Recv, as without them.
  FakeComm comm;
  FakeNativeApi::loaded = false;
  {
    ccl::CclBackend<FakeNativeApi> b(&comm, 1, 3);
    ASSERT_TRUE(b.Run(Args(CollKind::kAllToAll, infinicclInt32, 4)).ok());
    ASSERT_TRUE(b.Run(Args(CollKind::kGather, infinicclInt32, 4, 1, true)).ok());
    ASSERT_TRUE(b.Run(Args(CollKind::kScatter, infinicclInt32, 4, 1, true)).ok());
  }
  FakeNativeApi::loaded = true;
  EXPECT_EQ(Render(comm.log),
            "Send(0,16,0) Recv(0,16,0) Send(16,16,1) Recv(16,16,1) Send(32,16,2) "
            "Recv(32,16,2) Recv(0,16,0) Recv(32,16,2) Send(0,16,0) Send(32,16,2) ");
  EXPECT_EQ(g_group_depth, 0);
}

TEST(CclBackend, GroupedAllToAllGatherScatter) {
  // Rank 1 of 3, 4 int32 per block = 16 bytes, moved as uint8.
  FakeComm comm;
  ccl::CclBackend<FakeApi> b(&comm, 1, 3);
  ASSERT_TRUE(b.Run(Args(CollKind::kAllToAll, infinicclInt32, 4)).ok());
  EXPECT_EQ(Render(comm.log),
            "Send(0,16,0) Recv(0,16,0) Send(16,16,1) Recv(16,16,1) Send(32,16,2) "
            "Recv(32,16,2) ");
  EXPECT_EQ(comm.log[0].type, CclType::kUint8);
  comm.log.clear();
  // Gather at the root (rank 1): a receive from every rank, its own block
  // by a send to itself; in place, its own block is already there.
  ASSERT_TRUE(b.Run(Args(CollKind::kGather, infinicclInt32, 4, 1)).ok());
  EXPECT_EQ(Render(comm.log), "Recv(0,16,0) Recv(16,16,1) Recv(32,16,2) Send(0,16,1) ");
  comm.log.clear();
  ASSERT_TRUE(b.Run(Args(CollKind::kGather, infinicclInt32, 4, 1, true)).ok());
  EXPECT_EQ(Render(comm.log), "Recv(0,16,0) Recv(32,16,2) ");
  comm.log.clear();
  ASSERT_TRUE(b.Run(Args(CollKind::kGather, infinicclInt32, 4, 2)).ok());  // not the root
  EXPECT_EQ(Render(comm.log), "Send(0,16,2) ");
  comm.log.clear();
  ASSERT_TRUE(b.Run(Args(CollKind::kScatter, infinicclInt32, 4, 1)).ok());
  EXPECT_EQ(Render(comm.log), "Send(0,16,0) Send(16,16,1) Send(32,16,2) Recv(0,16,1) ");
  comm.log.clear();
  ASSERT_TRUE(b.Run(Args(CollKind::kScatter, infinicclInt32, 4, 1, true)).ok());
  EXPECT_EQ(Render(comm.log), "Send(0,16,0) Send(32,16,2) ");
  comm.log.clear();
  ASSERT_TRUE(b.Run(Args(CollKind::kScatter, infinicclInt32, 4, 0)).ok());
  EXPECT_EQ(Render(comm.log), "Recv(0,16,0) ");
  EXPECT_EQ(g_group_depth, 0);
}

TEST(CclBackend, FailureBecomesAStatusAndTheGroupStaysBalanced) {
  FakeComm comm;
  ccl::CclBackend<FakeApi> b(&comm, 0, 2);
  comm.fail_call = 1;  // the first Recv of the grouped AllToAll
  const Status st = b.Run(Args(CollKind::kAllToAll, infinicclInt8, 3));
  EXPECT_EQ(st.code(), infinicclInvalidUsage);
  EXPECT_EQ(st.message(), "fakeRecv failed: fake error: fake detail");
  EXPECT_EQ(g_group_depth, 0);
  EXPECT_EQ(comm.log.size(), 2u);  // nothing more issued after the failure
  // A result code outside 0..7 is an internal error.
  comm.log.clear();
  comm.fail_call = 0;
  comm.fail_result = 42;
  EXPECT_EQ(b.Run(Args(CollKind::kAllReduce, infinicclFloat32, 3)).code(),
            infinicclInternalError);
  // In progress (non-blocking communicators) is not a failure.
  comm.log.clear();
  comm.fail_result = FakeApi::kInProgress;
  EXPECT_TRUE(b.Run(Args(CollKind::kAllReduce, infinicclFloat32, 3)).ok());
}

TEST(CclBackend, AsynchronousErrorIsReportedBeforeTheNextCall) {
  FakeComm comm;
  ccl::CclBackend<FakeApi> b(&comm, 0, 2);
  comm.async_error = 6;  // remote error
  const Status st = b.Run(Args(CollKind::kAllReduce, infinicclFloat32, 3));
  EXPECT_EQ(st.code(), infinicclRemoteError);
  EXPECT_NE(st.message().find("asynchronous error"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("fake detail"), std::string::npos) << st.message();
  EXPECT_TRUE(comm.log.empty());
}

// What infinicclCommGetAsyncError reports: nothing, then the CCL's error,
// without issuing any call.
TEST(CclBackend, AsyncErrorIsTheCclsAndIssuesNothing) {
  FakeComm comm;
  ccl::CclBackend<FakeApi> b(&comm, 0, 2);
  EXPECT_TRUE(b.AsyncError().ok());
  comm.async_error = 6;  // remote error
  const Status st = b.AsyncError();
  EXPECT_EQ(st.code(), infinicclRemoteError);
  EXPECT_NE(st.message().find("fake detail"), std::string::npos) << st.message();
  EXPECT_TRUE(comm.log.empty());
}

TEST(CclBackend, SplitNativeMakesABackendOverTheChildCommunicator) {
  FakeComm parent, child;
  parent.split_child = &child;
  ccl::CclBackend<FakeApi> b(&parent, 2, 4);
  std::unique_ptr<Backend> out;
  int rank = 0, size = 2;
  ASSERT_TRUE(b.SplitNative(1, 7, &rank, &size, &out).ok());
  EXPECT_EQ(rank, 0);  // known places are kept, the CCL is not asked
  EXPECT_EQ(size, 2);
  EXPECT_EQ(parent.split_color, 1);
  EXPECT_EQ(parent.split_key, 7);
  ASSERT_NE(out, nullptr);
  EXPECT_STREQ(out->Name(), "FAKE");
  // The new backend issues its calls on the child communicator.
  ASSERT_TRUE(out->Run(Args(CollKind::kAllReduce, infinicclFloat32, 3)).ok());
  EXPECT_EQ(child.log.size(), 1u);
  EXPECT_TRUE(parent.log.empty());
  out.reset();
  EXPECT_TRUE(child.destroyed);
  EXPECT_FALSE(parent.destroyed);
}

TEST(CclBackend, SplitNativeWithoutColorTakesPartAndGetsNothing) {
  FakeComm parent, child;
  parent.split_child = &child;
  ccl::CclBackend<FakeApi> b(&parent, 0, 2);
  std::unique_ptr<Backend> out;
  int rank = 0, size = 0;
  ASSERT_TRUE(b.SplitNative(-1, 0, &rank, &size, &out).ok());
  EXPECT_EQ(parent.split_color, -1);
  EXPECT_EQ(out, nullptr);
}

TEST(CclBackend, SplitNativeFailureIsAStatus) {
  FakeComm parent;
  parent.split_result = 5;  // invalid usage
  ccl::CclBackend<FakeApi> b(&parent, 0, 2);
  std::unique_ptr<Backend> out;
  int rank = 0, size = 1;
  const Status st = b.SplitNative(0, 0, &rank, &size, &out);
  EXPECT_EQ(st.code(), infinicclInvalidUsage);
  EXPECT_NE(st.message().find("fakeCommSplit failed"), std::string::npos) << st.message();
  EXPECT_EQ(out, nullptr);
}

// A communicator made without MPI learns the child's place from the CCL.
TEST(CclBackend, SplitNativeAsksTheCclForAnUnknownPlace) {
  FakeComm parent, child;
  parent.split_child = &child;
  child.user_rank = 1;
  child.count = 3;
  ccl::CclBackend<FakeApi> b(&parent, 4, 6);
  std::unique_ptr<Backend> out;
  int rank = -1, size = 0;
  ASSERT_TRUE(b.SplitNative(2, 0, &rank, &size, &out).ok());
  EXPECT_EQ(rank, 1);
  EXPECT_EQ(size, 3);
  ASSERT_NE(out, nullptr);
  // The backend uses that place: a grouped Gather at root 1 (this rank)
  // posts one Recv per rank of the 3, its own included (out of place).
  ASSERT_TRUE(out->Run(Args(CollKind::kGather, infinicclFloat32, 2, 1)).ok());
  int recvs = 0;
  for (const Issued &i : child.log) recvs += i.call == "Recv";
  EXPECT_EQ(recvs, 3);
}

TEST(CclBackend, SplitNativeFailingToAskIsAStatusAndLeaksNothing) {
  FakeComm parent, child;
  parent.split_child = &child;
  child.rank_result = 5;
  ccl::CclBackend<FakeApi> b(&parent, 0, 2);
  std::unique_ptr<Backend> out;
  int rank = -1, size = 0;
  const Status st = b.SplitNative(0, 0, &rank, &size, &out);
  EXPECT_EQ(st.code(), infinicclInvalidUsage);
  EXPECT_NE(st.message().find("CommUserRank"), std::string::npos) << st.message();
  EXPECT_EQ(out, nullptr);
  EXPECT_TRUE(child.destroyed);
}

TEST(CclBackend, AbortAbortsInsteadOfDestroying) {
  FakeComm comm;
  {
    ccl::CclBackend<FakeApi> b(&comm, 0, 2);
    b.Abort();
  }
  EXPECT_TRUE(comm.aborted);
  EXPECT_FALSE(comm.destroyed);  // destroying would wait for hung work
}

TEST(CclBackend, RevokeAbortsTheCclCommunicatorAndLaterCallsSayRevoked) {
  FakeComm comm;
  {
    ccl::CclBackend<FakeApi> b(&comm, 0, 2);
    ASSERT_TRUE(b.Run(Args(CollKind::kAllReduce, infinicclFloat32, 8)).ok());
    b.Revoke();
    // Queued and hung work ends: the communicator is aborted, not destroyed.
    EXPECT_TRUE(comm.aborted);
    EXPECT_FALSE(comm.destroyed);
    const Status run = b.Run(Args(CollKind::kAllReduce, infinicclFloat32, 8));
    EXPECT_EQ(run.code(), infinicclRemoteError);
    EXPECT_NE(run.message().find("revoked"), std::string::npos) << run.message();
    EXPECT_EQ(b.AsyncError().code(), infinicclRemoteError);
    std::unique_ptr<Backend> child;
    int rank = -1, size = 0;
    EXPECT_EQ(b.SplitNative(0, 0, &rank, &size, &child).code(), infinicclRemoteError);
    EXPECT_EQ(child, nullptr);
    b.Revoke();  // a second revoke (or the abort after it) aborts nothing twice
    b.Abort();
  }
  // One call issued (before the revoke); neither destroyed nor aborted again.
  EXPECT_EQ(comm.log.size(), 1u);
  EXPECT_EQ(comm.aborts, 1);
  EXPECT_FALSE(comm.destroyed);
  EXPECT_EQ(g_group_depth, 0);
}

TEST(CclBackend, UnsupportedIsTheMappingsAnswer) {
  FakeComm comm;
  ccl::CclBackend<FakeApi> b(&comm, 0, 2);
  EXPECT_NE(b.Unsupported(Args(CollKind::kAllReduce, infinicclInt16, 3)), nullptr);
  EXPECT_EQ(b.Unsupported(Args(CollKind::kAllGather, infinicclInt16, 3)), nullptr);
  CollArgs band = Args(CollKind::kAllReduce, infinicclInt32, 3);
  band.op = infinicclBand;
  EXPECT_NE(b.Unsupported(band), nullptr);
}

// The known-bug table: NCCL's one-rank Avg (NVIDIA/nccl issue 1950) from
// 2.10 up to, not including, 2.29.7; nothing else.
TEST(CclKnownBugs, NcclOneRankAvgBetween210And2297) {
  CollArgs avg = Args(CollKind::kAllReduce, infinicclFloat64, 65537);
  avg.op = infinicclAvg;
  const char *why = CclKnownBugReason("NCCL", 22803, 1, avg);
  ASSERT_NE(why, nullptr);
  EXPECT_NE(std::string(why).find("1950"), std::string::npos) << why;
  EXPECT_NE(CclKnownBugReason("NCCL", 21000, 1, avg), nullptr);
  EXPECT_NE(CclKnownBugReason("NCCL", 22906, 1, avg), nullptr);
  for (CollKind k : {CollKind::kReduce, CollKind::kReduceScatter}) {
    CollArgs other = avg;
    other.kind = k;
    EXPECT_NE(CclKnownBugReason("NCCL", 22803, 1, other), nullptr);
  }
  EXPECT_EQ(CclKnownBugReason("NCCL", 22907, 1, avg), nullptr);  // fixed
  EXPECT_EQ(CclKnownBugReason("NCCL", 20903, 1, avg), nullptr);  // before ncclAvg
  EXPECT_EQ(CclKnownBugReason("NCCL", -1, 1, avg), nullptr);     // version unknown
  EXPECT_EQ(CclKnownBugReason("NCCL", 22803, 2, avg), nullptr);  // two ranks
  EXPECT_EQ(CclKnownBugReason("MCCL", 22803, 1, avg), nullptr);
  CollArgs sum = avg;
  sum.op = infinicclSum;
  EXPECT_EQ(CclKnownBugReason("NCCL", 22803, 1, sum), nullptr);
  CollArgs bcast = Args(CollKind::kBroadcast, infinicclFloat64, 65537);
  bcast.op = infinicclAvg;  // ignored: not a reduction
  EXPECT_EQ(CclKnownBugReason("NCCL", 22803, 1, bcast), nullptr);
}

// The backend consults the table with its own version and size, so the
// route passes such a call over (and says why at INFO).
struct FakeNamedNcclApi : FakeApi {
  static constexpr const char *kName = "NCCL";
};

TEST(CclKnownBugs, BackendReportsTheBugAsUnsupported) {
  FakeComm comm;
  CollArgs avg = Args(CollKind::kAllReduce, infinicclFloat64, 65537);
  avg.op = infinicclAvg;
  ccl::CclBackend<FakeNamedNcclApi> buggy(&comm, 0, 1, 22803);
  ASSERT_NE(buggy.Unsupported(avg), nullptr);
  EXPECT_NE(std::string(buggy.Unsupported(avg)).find("1950"), std::string::npos);
  ccl::CclBackend<FakeNamedNcclApi> fixed(&comm, 0, 1, 22907);
  EXPECT_EQ(fixed.Unsupported(avg), nullptr);
  ccl::CclBackend<FakeNamedNcclApi> two(&comm, 0, 2, 22803);
  EXPECT_EQ(two.Unsupported(avg), nullptr);
}

}  // namespace
}  // namespace infiniccl
