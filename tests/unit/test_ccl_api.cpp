// The public API's CCL-only paths (GetUniqueId / CommInitRank, no MPI, no
// infinicclInit) against the recording stand-in CCL on the EMULATED device:
// what a GPU run of nccl_device_test's bootstrap does, on a machine without
// one. Before this test existed, CommSplit and CommAbort of such a
// communicator returned "not initialised" on the GPU and nothing here
// noticed.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>
#include <infiniccl/infiniccl.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backend/ccl/ccl_provider.h"
#include "device/registry.h"
#include "device/sim/sim_runtime.h"
#include "fake_ccl.h"

namespace infiniccl {
namespace {

using FakeProvider = ccl::CclProviderImpl<FakeApi>;

class CclApi : public ::testing::Test {
 protected:
  void SetUp() override {
    sim_ = &DeviceRegistry::EnableSim();
    SetCclProviderForTesting(&provider_);
    infinicclUniqueId id;
    ASSERT_EQ(infinicclGetUniqueId(&id), infinicclSuccess) << infinicclGetLastError(nullptr);
    ASSERT_EQ(infinicclCommInitRank(&comm_, 1, id, 0), infinicclSuccess)
        << infinicclGetLastError(nullptr);
    // The communicator the route sees; its CCL's log shows what reached it.
    fake_ = FakeApi::last_made;
    ASSERT_NE(fake_, nullptr) << "CommInitRank did not reach the stand-in CCL";
  }
  void TearDown() override {
    if (comm_ != nullptr) {
      EXPECT_EQ(infinicclCommDestroy(comm_), infinicclSuccess);
    }
    SetCclProviderForTesting(nullptr);
  }

  void *DeviceAlloc(size_t bytes) {
    void *p = nullptr;
    EXPECT_TRUE(sim_->Malloc(&p, bytes).ok());
    allocations_.push_back(p);
    return p;
  }
  void Upload(void *d, const std::vector<double> &h) {
    ASSERT_TRUE(sim_->MemcpyAsync(d, h.data(), h.size() * sizeof(double),
                                  CopyKind::kHostToDevice, nullptr)
                    .ok());
    ASSERT_TRUE(sim_->StreamSynchronize(nullptr).ok());
  }
  std::vector<double> Download(const void *d, size_t n) {
    std::vector<double> h(n);
    EXPECT_TRUE(
        sim_->MemcpyAsync(h.data(), d, n * sizeof(double), CopyKind::kDeviceToHost, nullptr)
            .ok());
    EXPECT_TRUE(sim_->StreamSynchronize(nullptr).ok());
    return h;
  }
  ~CclApi() override {
    for (void *p : allocations_) (void)sim_->Free(p);
  }

  FakeProvider provider_;
  DeviceRuntime *sim_ = nullptr;
  infinicclComm_t comm_ = nullptr;
  FakeComm *fake_ = nullptr;
  std::vector<void *> allocations_;
};

// Two processes without MPI, each on a device of its own (a CCL takes one
// rank per device): rank 0's CCL id travels through the bootstrap to rank
// 1, whose CCL is made with it.
TEST(CclApiTwoProcesses, RankZerosCclIdReachesTheOtherRank) {
  DeviceRegistry::EnableSim();
  FakeProvider provider;
  SetCclProviderForTesting(&provider);
  infinicclUniqueId id;
  ASSERT_EQ(infinicclGetUniqueId(&id), infinicclSuccess) << infinicclGetLastError(nullptr);
  const pid_t child = fork();
  if (child == 0) {
    infinicclComm_t c = nullptr;
    int count = 0, rank = -1;
    bool ok = DeviceRegistry::Get(DeviceKind::kSim)->SetDevice(1).ok() &&
              infinicclCommInitRank(&c, 2, id, 1) == infinicclSuccess &&
              infinicclCommCount(c, &count) == infinicclSuccess && count == 2 &&
              infinicclCommUserRank(c, &rank) == infinicclSuccess && rank == 1;
    for (char b : FakeApi::last_id.bytes) ok = ok && b == 42;
    _exit(ok ? 0 : 1);
  }
  FakeApi::id_byte = 42;  // this process's, rank 0's, CCL id
  infinicclComm_t comm = nullptr;
  EXPECT_EQ(infinicclCommInitRank(&comm, 2, id, 0), infinicclSuccess)
      << infinicclGetLastError(nullptr);
  FakeApi::id_byte = 7;
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "rank 1 did not get rank 0's CCL id, or no communicator of 2";
  int rank = -1;
  EXPECT_EQ(infinicclCommUserRank(comm, &rank), infinicclSuccess);
  EXPECT_EQ(rank, 0);
  EXPECT_EQ(infinicclCommDestroy(comm), infinicclSuccess);
  SetCclProviderForTesting(nullptr);
}

// Two processes without MPI on one device: no CCL (it takes one rank per
// device); the communicator is the node's shared memory, and a host
// AllReduce through it is exact.
TEST(CclApiTwoProcesses, RanksOnOneDeviceGetSharedMemoryWithoutTheCcl) {
  DeviceRegistry::EnableSim();
  FakeProvider provider;
  SetCclProviderForTesting(&provider);
  std::memset(&FakeApi::last_id, 0, sizeof FakeApi::last_id);
  infinicclUniqueId id;
  ASSERT_EQ(infinicclGetUniqueId(&id), infinicclSuccess) << infinicclGetLastError(nullptr);
  const auto sum = [](infinicclComm_t c, int rank) {
    int32_t in[4] = {rank + 1, 2, -rank, 40}, out[4] = {0, 0, 0, 0};
    return infinicclAllReduce(in, out, 4, infinicclInt32, infinicclSum, c, nullptr) ==
               infinicclSuccess &&
           out[0] == 3 && out[1] == 4 && out[2] == -1 && out[3] == 80;
  };
  const pid_t child = fork();
  if (child == 0) {
    infinicclComm_t c = nullptr;
    bool ok = infinicclCommInitRank(&c, 2, id, 1) == infinicclSuccess && sum(c, 1);
    for (char b : FakeApi::last_id.bytes) ok = ok && b == 0;  // no CCL communicator made
    ok = ok && infinicclCommDestroy(c) == infinicclSuccess;
    _exit(ok ? 0 : 1);
  }
  infinicclComm_t comm = nullptr;
  EXPECT_EQ(infinicclCommInitRank(&comm, 2, id, 0), infinicclSuccess)
      << infinicclGetLastError(nullptr);
  EXPECT_TRUE(sum(comm, 0)) << infinicclGetLastError(comm);
  for (char b : FakeApi::last_id.bytes) EXPECT_EQ(b, 0) << "a CCL communicator was made";
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "rank 1: no communicator, a wrong sum, or a CCL communicator made";
  EXPECT_EQ(infinicclCommDestroy(comm), infinicclSuccess);
  SetCclProviderForTesting(nullptr);
}

TEST_F(CclApi, SplitWithoutInitIsTheCclsSplit) {
  infinicclComm_t child = nullptr;
  ASSERT_EQ(infinicclCommSplit(comm_, 5, 0, &child), infinicclSuccess)
      << infinicclGetLastError(comm_);
  ASSERT_NE(child, nullptr);
  int n = 0, r = -1;
  ASSERT_EQ(infinicclCommCount(child, &n), infinicclSuccess);
  ASSERT_EQ(infinicclCommUserRank(child, &r), infinicclSuccess);
  EXPECT_EQ(n, 1);
  EXPECT_EQ(r, 0);
  EXPECT_EQ(infinicclCommDestroy(child), infinicclSuccess);

  infinicclComm_t none = reinterpret_cast<infinicclComm_t>(0x1);
  ASSERT_EQ(infinicclCommSplit(comm_, INFINICCL_SPLIT_NOCOLOR, 0, &none), infinicclSuccess)
      << infinicclGetLastError(comm_);
  EXPECT_EQ(none, nullptr);
}

TEST_F(CclApi, AbortWithoutInit) {
  ASSERT_EQ(infinicclCommAbort(comm_), infinicclSuccess) << infinicclGetLastError(comm_);
  EXPECT_EQ(infinicclCommDestroy(comm_), infinicclInvalidUsage);  // gone
  comm_ = nullptr;
}

// A one-rank reduction never reaches the CCL (NCCL's one-rank Avg kernel has
// dropped tail elements) and is exact at a count that is a multiple of
// nothing in particular, for every op, in and out of place.
TEST_F(CclApi, OneRankReductionsAreACopyAndNeverReachTheCcl) {
  const size_t n = 65537;
  std::vector<double> h(n);
  for (size_t i = 0; i < n; ++i) h[i] = static_cast<double>(i % 1000) * 0.5 - 17.0;
  void *send = DeviceAlloc(n * sizeof(double));
  void *recv = DeviceAlloc(n * sizeof(double));
  const infinicclRedOp_t ops[] = {infinicclSum, infinicclProd, infinicclMax, infinicclMin,
                                  infinicclAvg};
  for (infinicclRedOp_t op : ops) {
    for (int kind = 0; kind < 3; ++kind) {
      for (bool in_place : {false, true}) {
        Upload(send, h);
        Upload(recv, std::vector<double>(n, -1.0));
        void *out = in_place ? send : recv;
        infinicclResult_t rc;
        if (kind == 0) {
          rc = infinicclAllReduce(send, out, n, infinicclFloat64, op, comm_, nullptr);
        } else if (kind == 1) {
          rc = infinicclReduce(send, out, n, infinicclFloat64, op, 0, comm_, nullptr);
        } else {
          rc = infinicclReduceScatter(send, out, n, infinicclFloat64, op, comm_, nullptr);
        }
        ASSERT_EQ(rc, infinicclSuccess) << infinicclGetLastError(comm_);
        ASSERT_TRUE(sim_->StreamSynchronize(nullptr).ok());
        EXPECT_EQ(Download(out, n), h) << "kind " << kind << " op " << op << " in place "
                                       << in_place;
      }
    }
  }
  EXPECT_TRUE(fake_->log.empty()) << fake_->log.size() << " call(s) reached the CCL, first "
                                  << fake_->log.front().call;
  // Not a reduction: the CCL's (the stand-in proves the route reaches it).
  ASSERT_EQ(infinicclBroadcast(send, recv, n, infinicclFloat64, 0, comm_, nullptr),
            infinicclSuccess);
  ASSERT_EQ(fake_->log.size(), 1u);
  EXPECT_EQ(fake_->log[0].call, "Broadcast");
}

// On a capturing stream: a one-rank AllReduce between device buffers is one
// device copy, recorded into the graph and run at each launch on the input
// of that launch; a Broadcast is the CCL's (left to it); a one-rank
// AllReduce into host memory is refused and records nothing.
TEST_F(CclApi, CaptureRecordsTheOneRankCopyAndLeavesTheCclItsCalls) {
  auto *sim = static_cast<SimRuntime *>(sim_);
  const size_t n = 4099;
  void *send = DeviceAlloc(n * sizeof(double));
  void *recv = DeviceAlloc(n * sizeof(double));
  std::vector<double> host_out(n, -3.0);
  void *s = nullptr;
  ASSERT_TRUE(sim->StreamCreate(&s).ok());
  Upload(recv, std::vector<double>(n, -1.0));
  ASSERT_TRUE(sim->BeginCapture(s).ok());
  ASSERT_EQ(infinicclAllReduce(send, recv, n, infinicclFloat64, infinicclSum, comm_, s),
            infinicclSuccess)
      << infinicclGetLastError(comm_);
  EXPECT_EQ(infinicclAllReduce(send, host_out.data(), n, infinicclFloat64, infinicclSum,
                               comm_, s),
            infinicclInvalidUsage);
  EXPECT_NE(std::string(infinicclGetLastError(comm_)).find("cannot be captured"),
            std::string::npos)
      << infinicclGetLastError(comm_);
  ASSERT_EQ(infinicclBroadcast(send, recv, n, infinicclFloat64, 0, comm_, s),
            infinicclSuccess);
  std::shared_ptr<SimGraph> graph;
  ASSERT_TRUE(sim->EndCapture(s, &graph).ok());  // valid: nothing synchronised it
  EXPECT_EQ(graph->nodes.size(), 1u);            // the copy (the stand-in queues nothing)
  ASSERT_EQ(fake_->log.size(), 1u);
  EXPECT_EQ(fake_->log[0].call, "Broadcast");
  EXPECT_EQ(Download(recv, n), std::vector<double>(n, -1.0));  // recorded, not run
  EXPECT_EQ(host_out, std::vector<double>(n, -3.0));
  for (int launch = 0; launch < 2; ++launch) {
    std::vector<double> h(n);
    for (size_t i = 0; i < n; ++i) h[i] = static_cast<double>(i % 501) - 250.0 * launch;
    Upload(send, h);
    ASSERT_TRUE(sim->LaunchGraph(*graph, s).ok());
    ASSERT_TRUE(sim->StreamSynchronize(s).ok());
    EXPECT_EQ(Download(recv, n), h) << "launch " << launch;
  }
  ASSERT_TRUE(sim->StreamDestroy(s).ok());
}

}  // namespace
}  // namespace infiniccl
