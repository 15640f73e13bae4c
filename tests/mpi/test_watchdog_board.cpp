// What the watchdog's ERROR line says about the other ranks, from the
// node's shared-memory sequence board, without waiting for a real time-out:
// each rank puts itself where the case needs it (entering a call through
// the communicator's own BeginCall, returning from a refused call, leaving
// the communicator), then rank 0 asks for the description the watchdog
// would write. Needs 2 or more ranks on one node.
//
//   - ranks in different operations at the same sequence number are named
//     with their operations ("rank 0 in AllReduce #1002, rank 1 in
//     Broadcast #1002: the ranks have called different collectives");
//   - a rank that returned from the call (its arguments were refused) is
//     named as such, not counted as "inside it";
//   - a rank that destroyed the communicator is named as having left.
#include <mpi.h>

#include <memory>
#include <string>

#include "core/coll_args.h"
#include "comm/runtime.h"
#include "comm/watchdog.h"
#include "test_util.h"

using namespace itest;
using infiniccl::CollKind;

namespace {

int g_n = 1;

std::shared_ptr<infiniccl::Communicator> Inner(infinicclComm_t comm) {
  std::shared_ptr<infiniccl::Communicator> c;
  CHECK(infiniccl::Runtime::Lookup(comm, &c).ok());
  return c;
}

infiniccl::CollArgs Args(CollKind kind) {
  return infiniccl::CollArgs{kind,         nullptr, nullptr, 1,    infinicclInt32,
                             infinicclSum, 0,       nullptr, false};
}

void ExpectHas(const std::string &text, const std::string &want, const char *what) {
  CHECK(text.find(want) != std::string::npos, "%s: \"%s\" lacks \"%s\"", what,
        text.c_str(), want.c_str());
}

}  // namespace

int main(int argc, char **argv) {
  CHECK_RC(infinicclInit(&argc, &argv), infinicclSuccess);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_n);
  const int last = g_n - 1;
  const std::string L = std::to_string(last);
  infinicclComm_t comm = nullptr, other = nullptr;
  CHECK_RC(infinicclCommInitAll(&comm, 0, nullptr), infinicclSuccess);
  CHECK_RC(infinicclCommInitAll(&other, 0, nullptr), infinicclSuccess);
  auto c = Inner(comm), o = Inner(other);
  if (!c || !o || c->board() == nullptr) {
    std::printf("[rank %d] no shared-memory board here; nothing to test\n", g_rank);
    infinicclFinalize();
    return 0;
  }

  // 1. The last rank in Broadcast #1002, the others in AllReduce #1002.
  c->BeginCall(Args(g_rank == last ? CollKind::kBroadcast : CollKind::kAllReduce), 1002);
  MPI_Barrier(MPI_COMM_WORLD);
  if (g_rank == 0) {
    const std::string s = infiniccl::Watchdog::DescribeOthers(
        *c, 1002, static_cast<int>(CollKind::kAllReduce));
    ExpectHas(s, "ranks that have not reached it: none", "different operations");
    ExpectHas(s, "rank 0 in AllReduce #1002", "different operations");
    ExpectHas(s, "rank " + L + " in Broadcast #1002", "different operations");
    ExpectHas(
        s,
        "the ranks have called different collectives; one rank skipped or added a call",
        "different operations");
    CHECK(s.find("every rank of this node is inside it") == std::string::npos, "%s",
          s.c_str());
  }
  MPI_Barrier(MPI_COMM_WORLD);
  c->EndCall();

  // 2. The last rank's arguments are refused (INFINICCL_CHECK off: it
  // returns at once); the others are inside the same call.
  const uint64_t seq = c->seq() + 1;
  if (g_rank == last) {
    int x = 0;
    CHECK_RC(infinicclAllReduce(&x, &x, 1, static_cast<infinicclDataType_t>(99),
                                infinicclSum, comm, nullptr),
             infinicclInvalidArgument);
  } else {
    CHECK(c->NextSeq() == seq);
    c->BeginCall(Args(CollKind::kAllReduce), seq);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (g_rank == 0) {
    const std::string s = infiniccl::Watchdog::DescribeOthers(
        *c, seq, static_cast<int>(CollKind::kAllReduce));
    ExpectHas(s, "returned from it", "refused arguments");
    ExpectHas(s, L + "(result " + std::to_string(int(infinicclInvalidArgument)) + ")",
              "refused arguments");
    CHECK(s.find("every rank of this node is inside it") == std::string::npos, "%s",
          s.c_str());
  }
  MPI_Barrier(MPI_COMM_WORLD);
  c->EndCall();

  // 3. The last rank destroys `other` while the others are in its first call.
  if (g_rank == last) {
    o.reset();
    CHECK_RC(infinicclCommDestroy(other), infinicclSuccess);
  } else {
    o->BeginCall(Args(CollKind::kAllReduce), o->NextSeq());
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (g_rank == 0) {
    const std::string s = infiniccl::Watchdog::DescribeOthers(
        *o, 1, static_cast<int>(CollKind::kAllReduce));
    ExpectHas(s, "ranks that have not reached it: " + L + ";", "left");
    ExpectHas(s, "rank " + L + " has left: it destroyed the communicator", "left");
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (g_rank != last) {
    o->EndCall();
    o.reset();
    CHECK_RC(infinicclCommDestroy(other), infinicclSuccess);
  }
  c.reset();
  CHECK_RC(infinicclCommDestroy(comm), infinicclSuccess);
  const long total = TotalFailures();
  std::printf("[rank %d/%d] test_watchdog_board: %ld failures\n", g_rank, g_n,
              g_failures);
  CHECK_RC(infinicclFinalize(), infinicclSuccess);
  return g_failures == 0 && total == 0 ? 0 : 1;
}
