// INFINICCL_CHECK=1 at 2-4 ranks (ctest sets it): each field that can
// differ between ranks is made to differ on the last rank, and every rank
// must get an error whose message names the field and the ranks, exactly;
// a rank that skips a collective is reported the same way; matching calls
// still give exact results, and the communicator stays usable after every
// mismatch.
#include <mpi.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "api/cross_check.h"
#include "core/config.h"
#include "comm/runtime.h"
#include "test_util.h"

using namespace itest;

namespace {

int g_n = 1;
int g_last = 0;
infinicclComm_t g_comm = nullptr;

// "0", "0,1", "0-2": the ranks before the last, as the library writes them.
std::string Others() {
  if (g_last == 1) return "0";
  if (g_last == 2) return "0,1";
  return "0-" + std::to_string(g_last - 1);
}

// The call's result on this rank is `rc`; every rank but `rejected_rank`
// expects InvalidUsage with "INFINICCL_CHECK: <detail>" in its message.
void ExpectMismatchOn(infinicclComm_t comm, const char *what, infinicclResult_t rc,
                      const std::string &detail, int rejected_rank = -1) {
  if (g_rank == rejected_rank) {
    CHECK(rc == infinicclInvalidArgument, "%s: rejected rank got %d", what, int(rc));
    return;
  }
  CHECK(rc == infinicclInvalidUsage, "%s: got %d (%s)", what, int(rc), ResultName(rc));
  const std::string msg = infinicclGetLastError(comm);
  const std::string want = "INFINICCL_CHECK: " + detail;
  CHECK(msg.find(want) != std::string::npos, "%s: message \"%s\" lacks \"%s\"", what,
        msg.c_str(), want.c_str());
  const std::string me = "this is rank " + std::to_string(g_rank);
  CHECK(msg.find(me) != std::string::npos, "%s: message lacks \"%s\"", what, me.c_str());
}
void ExpectMismatch(const char *what, infinicclResult_t rc, const std::string &detail,
                    int rejected_rank = -1) {
  ExpectMismatchOn(g_comm, what, rc, detail, rejected_rank);
}

infinicclResult_t AllReduce(size_t count, infinicclDataType_t dt, infinicclRedOp_t op) {
  std::vector<int64_t> buf(8, 1);  // room for 8 elements of any type
  return infinicclAllReduce(buf.data(), buf.data(), count, dt, op, g_comm, nullptr);
}
infinicclResult_t Bcast(size_t count, int root) {
  std::vector<int32_t> buf(8, 1);
  return infinicclBcast(buf.data(), count, infinicclInt32, root, g_comm, nullptr);
}

// The sequence number this rank's next collective on `comm` will carry (its
// own count of collective calls there, plus one).
uint64_t NextSeqOf(infinicclComm_t comm) {
  std::shared_ptr<infiniccl::Communicator> c;
  if (!infiniccl::Runtime::Lookup(comm, &c).ok() || !c) return 0;
  return c->seq() + 1;
}
std::string Num(uint64_t n) {
  return std::to_string(n);
}

// A matching AllReduce after a mismatch: the communicator still works.
void ExpectWorks(const char *after) {
  int64_t v[2] = {g_rank + 1, 2 * (g_rank + 1)};
  CHECK_RC(infinicclAllReduce(v, v, 2, infinicclInt64, infinicclSum, g_comm, nullptr),
           infinicclSuccess);
  const int64_t s = int64_t(g_n) * (g_n + 1) / 2;
  CHECK(v[0] == s && v[1] == 2 * s, "AllReduce after %s gave %lld", after,
        (long long)v[0]);
}

void FieldMismatches() {
  const bool last = g_rank == g_last;
  const std::string L = std::to_string(g_last);
  const std::string n = Num(NextSeqOf(g_comm));
  infinicclResult_t rc = last ? Bcast(4, 0) : AllReduce(4, infinicclInt32, infinicclSum);
  ExpectMismatch("operation", rc,
                 "operation differs: rank " + Others() + " AllReduce #" + n + ", rank " +
                     L + " Broadcast #" + n);
  ExpectWorks("operation");

  rc = AllReduce(last ? 8 : 4, infinicclInt32, infinicclSum);
  ExpectMismatch("count", rc,
                 "count differs: rank " + Others() + " count=4, rank " + L + " count=8");
  ExpectWorks("count");

  rc = AllReduce(last ? 0 : 4, infinicclInt32, infinicclSum);
  ExpectMismatch("count 0", rc,
                 "count differs: rank " + Others() + " count=4, rank " + L + " count=0");
  ExpectWorks("count 0");

  rc = AllReduce(4, last ? infinicclFloat32 : infinicclInt32, infinicclSum);
  ExpectMismatch("datatype", rc,
                 "datatype differs: rank " + Others() + " datatype=int32, rank " + L +
                     " datatype=float32");
  ExpectWorks("datatype");

  rc = AllReduce(4, infinicclInt32, last ? infinicclMax : infinicclSum);
  ExpectMismatch("op", rc,
                 "op differs: rank " + Others() + " op=sum, rank " + L + " op=max");
  ExpectWorks("op");

  rc = AllReduce(4, infinicclInt32, last ? infinicclBxor : infinicclBor);
  ExpectMismatch("bitwise op", rc,
                 "op differs: rank " + Others() + " op=bor, rank " + L + " op=bxor");
  ExpectWorks("bitwise op");

  rc = Bcast(4, last ? 1 : 0);
  ExpectMismatch("root", rc,
                 "root differs: rank " + Others() + " root=0, rank " + L + " root=1");
  ExpectWorks("root");

  // The last rank's own arguments are invalid: it fails with its own reason,
  // the others learn of it instead of waiting.
  rc = AllReduce(4, last ? static_cast<infinicclDataType_t>(99) : infinicclInt32,
                 infinicclSum);
  ExpectMismatch(
      "rejected", rc,
      "argument validation differs: rank " + Others() + " valid, rank " + L + " rejected",
      g_last);
  ExpectWorks("rejected arguments");

  // A bitwise op on a floating type is rejected the same way.
  rc = AllReduce(4, last ? infinicclFloat32 : infinicclInt32, infinicclBand);
  ExpectMismatch(
      "bitwise on float", rc,
      "argument validation differs: rank " + Others() + " valid, rank " + L + " rejected",
      g_last);
  ExpectWorks("bitwise on float");

  // Every rank different: one group per rank.
  rc = AllReduce(size_t(g_rank) + 1, infinicclInt32, infinicclSum);
  std::string all = "count differs:";
  for (int r = 0; r < g_n; ++r)
    all += (r ? ", rank " : " rank ") + std::to_string(r) +
           " count=" + std::to_string(r + 1);
  ExpectMismatch("all counts", rc, all);
  ExpectWorks("all counts");
}

// Sequence numbers only differ when ranks disagree on how many collectives
// ran (e.g. INFINICCL_CHECK set on some ranks only), which the public API
// cannot produce safely; drive the check itself with a skewed number.
void SequenceMismatch() {
  std::shared_ptr<infiniccl::Communicator> c;
  CHECK(infiniccl::Runtime::Lookup(g_comm, &c).ok());
  if (!c) return;
  int32_t buf[4] = {};
  infiniccl::CollArgs args{infiniccl::CollKind::kAllReduce,
                           buf,
                           buf,
                           4,
                           infinicclInt32,
                           infinicclSum,
                           0,
                           nullptr,
                           true};
  infiniccl::Status st =
      infiniccl::CrossCheck(*c, args, g_rank == g_last ? 100 : 99, true);
  CHECK(st.code() == infinicclInvalidUsage, "got %d", int(st.code()));
  const std::string want = "INFINICCL_CHECK: sequence number differs: rank " + Others() +
                           " seq=99, rank " + std::to_string(g_last) + " seq=100";
  CHECK(st.message().find(want) != std::string::npos, "\"%s\" lacks \"%s\"",
        st.message().c_str(), want.c_str());
}

// The program means to run AllReduce then Broadcast three times; the last
// rank skips the AllReduce of round 1. Everyone is told in that round, the
// rounds after it run normally.
void SkippedCollective() {
  const std::string L = std::to_string(g_last);
  for (int round = 0; round < 3; ++round) {
    int64_t v = g_rank + round;
    infinicclResult_t rc = infinicclSuccess;
    const bool skip = round == 1 && g_rank == g_last;
    const std::string n = Num(NextSeqOf(g_comm));
    if (!skip) {
      rc = infinicclAllReduce(&v, &v, 1, infinicclInt64, infinicclSum, g_comm, nullptr);
      const int64_t want = int64_t(g_n) * (g_n - 1) / 2 + int64_t(g_n) * round;
      if (rc == infinicclSuccess)
        CHECK(v == want, "round %d: AllReduce gave %lld, expected %lld", round,
              (long long)v, (long long)want);
    }
    if (rc == infinicclSuccess) {
      int64_t b = g_rank == 0 ? 1000 + round : -1;
      rc = infinicclBcast(&b, 1, infinicclInt64, 0, g_comm, nullptr);
      if (rc == infinicclSuccess)
        CHECK(b == 1000 + round, "round %d: Bcast gave %lld", round, (long long)b);
    }
    if (round == 1) {
      ExpectMismatch("skipped AllReduce", rc,
                     "operation differs: rank " + Others() + " AllReduce #" + n +
                         ", rank " + L + " Broadcast #" + n);
    } else {
      CHECK(rc == infinicclSuccess, "round %d: %s", round, infinicclGetLastError(g_comm));
    }
  }
}

// A loop in which the last rank skips iteration 3 of ten identical
// AllReduces. MPI matches each rank's n-th call with the others' n-th, and
// those look alike (same operation, count, dtype and sequence number: each
// rank numbers the calls it makes), so iterations 3-8 are summed across
// iterations and no check can tell (documented). Where the ranks' calls
// first differ, every rank must learn it: the others' tenth AllReduce meets
// the last rank's CommDestroy. Before CommDestroy took part in the check,
// the others waited there forever.
void SkipLoop() {
  infinicclComm_t comm = nullptr;
  CHECK_RC(infinicclCommInitAll(&comm, 0, nullptr), infinicclSuccess);
  const std::string L = std::to_string(g_last);
  const bool skipper = g_rank == g_last;
  int calls = 0;
  for (int it = 0; it < 10; it++) {
    if (skipper && it == 3) continue;  // the last rank skips one
    int v = it, out = -1;
    const infinicclResult_t rc =
        infinicclAllReduce(&v, &out, 1, infinicclInt32, infinicclSum, comm, nullptr);
    ++calls;
    if (it < 3) {
      CHECK(rc == infinicclSuccess && out == g_n * it, "it %d: rc %d out %d", it, int(rc),
            out);
    } else if (it < 9 || skipper) {
      CHECK(rc == infinicclSuccess, "it %d: rc %d (%s)", it, int(rc),
            infinicclGetLastError(comm));
    } else {
      // The ranks that did not skip, in their tenth call.
      ExpectMismatchOn(comm, "skip loop, tenth AllReduce", rc,
                       "operation differs: rank " + Others() + " AllReduce #10, rank " +
                           L + " CommDestroy after #9");
      // The communicator is now known to be out of step: further calls are
      // refused at once instead of waiting for a rank that has left.
      int w = 0;
      const infinicclResult_t again =
          infinicclAllReduce(&w, &w, 1, infinicclInt32, infinicclSum, comm, nullptr);
      CHECK(again == infinicclInvalidUsage, "call after divergence: %d", int(again));
      CHECK(std::string(infinicclGetLastError(comm)).find("no longer agree") !=
                std::string::npos,
            "%s", infinicclGetLastError(comm));
    }
  }
  CHECK(calls == (skipper ? 9 : 10), "%d calls", calls);
  const infinicclResult_t destroyed = infinicclCommDestroy(comm);
  if (skipper) {
    // Told too, and the communicator is released all the same.
    CHECK(destroyed == infinicclInvalidUsage, "CommDestroy on the skipper: %d",
          int(destroyed));
    const std::string msg = infinicclGetLastError(nullptr);
    const std::string want = "INFINICCL_CHECK: operation differs: rank " + Others() +
                             " AllReduce #10, rank " + L + " CommDestroy after #9";
    CHECK(msg.find(want) != std::string::npos, "\"%s\" lacks \"%s\"", msg.c_str(),
          want.c_str());
    CHECK(msg.find("this is rank " + L) != std::string::npos, "%s", msg.c_str());
  } else {
    CHECK(destroyed == infinicclSuccess, "CommDestroy: %d (%s)", int(destroyed),
          infinicclGetLastError(nullptr));
  }
  CHECK(infinicclCommDestroy(comm) == infinicclInvalidUsage, "handle still live");
}

// A skip followed by a different collective: caught at that collective, on
// every rank, with the sequence numbers; the rank that skipped retries its
// Broadcast (which the others are now making) and all is in step again.
void SkipThenBroadcast() {
  const std::string L = std::to_string(g_last);
  const bool skipper = g_rank == g_last;
  const uint64_t first = NextSeqOf(g_comm);
  for (int it = 0; it < 5; ++it) {
    if (skipper && it == 2) continue;
    int64_t v = it;
    const infinicclResult_t rc =
        infinicclAllReduce(&v, &v, 1, infinicclInt64, infinicclSum, g_comm, nullptr);
    if (it < 2) CHECK(rc == infinicclSuccess && v == int64_t(g_n) * it, "it %d", it);
    if (it == 4 && !skipper) {
      const std::string n = Num(first + 4);
      ExpectMismatch("AllReduce met Broadcast", rc,
                     "operation differs: rank " + Others() + " AllReduce #" + n +
                         ", rank " + L + " Broadcast #" + n);
    }
  }
  int64_t b = g_rank == 0 ? 4242 : -1;
  infinicclResult_t rc = infinicclBcast(&b, 1, infinicclInt64, 0, g_comm, nullptr);
  if (skipper) {
    const std::string n = Num(first + 4);
    ExpectMismatch("Broadcast met AllReduce", rc,
                   "operation differs: rank " + Others() + " AllReduce #" + n +
                       ", rank " + L + " Broadcast #" + n);
    rc = infinicclBcast(&b, 1, infinicclInt64, 0, g_comm, nullptr);  // the retry
  }
  CHECK(rc == infinicclSuccess && b == 4242, "Broadcast: rc %d b %lld (%s)", int(rc),
        (long long)b, infinicclGetLastError(g_comm));
  ExpectWorks("skip then Broadcast");
}

// INFINICCL_CHECK=1 on every rank but the last: agreed when the communicator
// is made (on everywhere), so a mismatch is still reported on every rank
// instead of the checking ranks waiting for an exchange the last never makes.
void CheckOnSomeRanks() {
  setenv("INFINICCL_CHECK", g_rank == g_last ? "0" : "1", 1);
  infiniccl::ReloadGlobalConfig();
  infinicclComm_t comm = nullptr;
  CHECK_RC(infinicclCommInitAll(&comm, 0, nullptr), infinicclSuccess);
  std::vector<int32_t> buf(8, 1);
  const infinicclResult_t rc =
      infinicclAllReduce(buf.data(), buf.data(), g_rank == g_last ? 8 : 4, infinicclInt32,
                         infinicclSum, comm, nullptr);
  ExpectMismatchOn(comm, "check on some ranks", rc,
                   "count differs: rank " + Others() + " count=4, rank " +
                       std::to_string(g_last) + " count=8");
  CHECK_RC(infinicclCommDestroy(comm), infinicclSuccess);
  setenv("INFINICCL_CHECK", "1", 1);
  infiniccl::ReloadGlobalConfig();
}

// With the check on, matching calls give exact results.
void MatchingCalls() {
  const int n = g_n;
  std::vector<int32_t> send(n * 2), recv(n * 2, -1);
  for (int i = 0; i < n * 2; ++i) send[i] = 100 * g_rank + i;
  CHECK_RC(
      infinicclAllGather(send.data(), recv.data(), 2, infinicclInt32, g_comm, nullptr),
      infinicclSuccess);
  for (int r = 0; r < n; ++r)
    CHECK(recv[2 * r] == 100 * r && recv[2 * r + 1] == 100 * r + 1, "AllGather block %d",
          r);
  int32_t block = -1;
  CHECK_RC(infinicclReduceScatter(send.data(), &block, 1, infinicclInt32, infinicclSum,
                                  g_comm, nullptr),
           infinicclSuccess);
  CHECK(block == 100 * n * (n - 1) / 2 + n * g_rank, "ReduceScatter gave %d", block);
  int32_t red = g_rank + 1, out = -1;
  CHECK_RC(infinicclReduce(&red, &out, 1, infinicclInt32, infinicclMax, g_last, g_comm,
                           nullptr),
           infinicclSuccess);
  if (g_rank == g_last) CHECK(out == n, "Reduce max gave %d", out);
  CHECK_RC(infinicclAllReduce(nullptr, nullptr, 0, infinicclInt32, infinicclSum, g_comm,
                              nullptr),
           infinicclSuccess);
  // Point-to-point calls are not checked (and must not disturb the check).
  int32_t p = g_rank == 0 ? 77 : -1;
  if (g_rank == 0)
    CHECK_RC(infinicclSend(&p, 1, infinicclInt32, g_last, g_comm, nullptr),
             infinicclSuccess);
  if (g_rank == g_last) {
    CHECK_RC(infinicclRecv(&p, 1, infinicclInt32, 0, g_comm, nullptr), infinicclSuccess);
    CHECK(p == 77, "Recv gave %d", p);
  }
  ExpectWorks("matching calls");
}

}  // namespace

int main(int argc, char **argv) {
  CHECK_RC(infinicclInit(&argc, &argv), infinicclSuccess);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_n);
  g_last = g_n - 1;
  CHECK(infiniccl::GlobalConfig().check, "run with INFINICCL_CHECK=1");
  CHECK(g_n >= 2, "needs 2 or more ranks");
  CHECK_RC(infinicclCommInitAll(&g_comm, 0, nullptr), infinicclSuccess);
  if (g_n >= 2 && infiniccl::GlobalConfig().check) {
    MatchingCalls();
    FieldMismatches();
    SequenceMismatch();
    SkippedCollective();
    SkipThenBroadcast();
    MatchingCalls();
    SkipLoop();
    CheckOnSomeRanks();
  }
  CHECK_RC(infinicclCommDestroy(g_comm), infinicclSuccess);
  const long total = TotalFailures();
  std::printf("[rank %d/%d] test_check: %ld failures\n", g_rank, g_n, g_failures);
  CHECK_RC(infinicclFinalize(), infinicclSuccess);
  return g_failures == 0 && total == 0 ? 0 : 1;
}
