// Shrink and grow called in ways the header refuses or must survive, on any
// MPI, at 3 ranks, run by tests/fault/CMakeLists.txt through run_shrink.sh
// (each rank that ends as expected prints "SHRINK PASS rank=R").
//
//   test_shrink_list differ   ranks 0 and 1 exclude rank 2 and rank 2 excludes
//                             rank 1 (INFINICCL_SHRINK_DEFAULT): every rank's
//                             Shrink returns InvalidUsage within 10 s, no new
//                             communicator; then the parent sums exactly.
//   test_shrink_list destroy  (INFINICCL_CHECK=1) rank 2 leaves without
//                             destroying the parent; ranks 0 and 1 shrink it
//                             away, sum exactly on the new communicator,
//                             destroy it and then the parent: each call
//                             succeeds within 10 s.
//   test_shrink_list grow_arg rank 0 passes a NULL command to CommGrow: every
//                             rank's Grow returns InvalidArgument within 10 s
//                             (no process is started); then the parent sums
//                             exactly.
//   test_shrink_list grow_bind (INFINICCL_DEVICE=sim, 8 emulated devices) the
//                             ranks bind devices 5, 6, 7 by devlist, and grow by
//                             one started process (`grow_bind_child`): each old
//                             rank keeps its device (one of 5, 6, 7) in the grown
//                             communicator,
//                             and the started process takes device 3 (its local
//                             rank among the four, not rank 0's device or 0);
//                             the four sum exactly. Needs MPI_Comm_spawn.
//   test_shrink_list skip split|shrink|grow|destroy
//                             (under tests/fault/fault_harness.py --mode skip
//                             --victim 1) rank 1 sleeps instead of making the
//                             call; the others' call waits for it, and their
//                             watchdog names the call and rank 1 only. destroy
//                             with INFINICCL_CHECK=1 (a destroy that waits).
#include <infiniccl/infiniccl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "comm/communicator.h"
#include "comm/runtime.h"

namespace {

int g_rank = -1;

[[noreturn]] void Die(const char *what, infinicclResult_t rc, infinicclComm_t comm) {
  std::fprintf(stderr, "test_shrink_list rank %d: %s: %s (%s)\n", g_rank, what,
               infinicclGetErrorString(rc), infinicclGetLastError(comm));
  std::fflush(stderr);
  std::_Exit(3);
}

void Check(infinicclResult_t rc, infinicclComm_t comm, const char *what) {
  if (rc != infinicclSuccess) Die(what, rc, comm);
}

using Clock = std::chrono::steady_clock;

// `what` returned `got` after `since`: it must be `want` within 10 s.
void Expect(infinicclResult_t got, infinicclResult_t want, Clock::time_point since,
            infinicclComm_t comm, const char *what) {
  const double s = std::chrono::duration<double>(Clock::now() - since).count();
  if (got != want) {
    std::fprintf(stderr, "test_shrink_list rank %d: %s returned %s, expected %s (%s)\n",
                 g_rank, what, infinicclGetErrorString(got), infinicclGetErrorString(want),
                 infinicclGetLastError(comm));
    std::_Exit(3);
  }
  if (s > 10.0) {
    std::fprintf(stderr, "test_shrink_list rank %d: %s took %.1f s (bound 10 s)\n", g_rank,
                 what, s);
    std::_Exit(3);
  }
  std::printf("rank %d: %s returned %s after %.2f s (%s)\n", g_rank, what,
              infinicclGetErrorString(got), s,
              got == infinicclSuccess ? "" : infinicclGetLastError(comm));
}

// An AllReduce of rank+1 over `comm` of `size` ranks, whose ranks are
// `members` of the parent: the sum of members[i]+1 in every element.
void ExactSum(infinicclComm_t comm, const std::vector<int> &members) {
  constexpr size_t kCount = 1000;
  int me = -1;
  Check(infinicclCommUserRank(comm, &me), comm, "infinicclCommUserRank");
  std::vector<int> send(kCount, members[static_cast<size_t>(me)] + 1), recv(kCount, -1);
  Check(infinicclAllReduce(send.data(), recv.data(), kCount, infinicclInt32, infinicclSum, comm,
                           nullptr),
        comm, "infinicclAllReduce");
  int want = 0;
  for (int m : members) want += m + 1;
  for (size_t i = 0; i < kCount; ++i) {
    if (recv[i] != want) {
      std::fprintf(stderr, "test_shrink_list rank %d: element %zu is %d, expected %d\n", g_rank,
                   i, recv[i], want);
      std::_Exit(3);
    }
  }
}

int Differ(infinicclComm_t comm) {
  ExactSum(comm, {0, 1, 2});  // every rank arrives together
  const int list[1] = {g_rank == 2 ? 1 : 2};
  infinicclComm_t sub = nullptr;
  const auto t0 = Clock::now();
  const infinicclResult_t rc =
      infinicclCommShrink(comm, list, 1, &sub, INFINICCL_SHRINK_DEFAULT);
  Expect(rc, infinicclInvalidUsage, t0, comm, "infinicclCommShrink (lists differ)");
  if (sub != nullptr) Die("a new communicator after InvalidUsage", rc, comm);
  ExactSum(comm, {0, 1, 2});
  return 0;
}

int Destroy(infinicclComm_t comm) {
  ExactSum(comm, {0, 1, 2});
  if (g_rank == 2) return 0;  // leaves: no Shrink, no Destroy
  const int list[1] = {2};
  infinicclComm_t sub = nullptr;
  auto t0 = Clock::now();
  Expect(infinicclCommShrink(comm, list, 1, &sub, INFINICCL_SHRINK_DEFAULT), infinicclSuccess,
         t0, comm, "infinicclCommShrink");
  ExactSum(sub, {0, 1});
  t0 = Clock::now();
  Expect(infinicclCommDestroy(sub), infinicclSuccess, t0, nullptr,
         "infinicclCommDestroy (new)");
  t0 = Clock::now();
  Expect(infinicclCommDestroy(comm), infinicclSuccess, t0, nullptr,
         "infinicclCommDestroy (parent)");
  return 1;  // destroyed
}

int GrowArg(infinicclComm_t comm) {
  ExactSum(comm, {0, 1, 2});
  char self[] = "test_shrink_list";
  infinicclComm_t grown = nullptr;
  const auto t0 = Clock::now();
  const infinicclResult_t rc =
      infinicclCommGrow(comm, 1, g_rank == 0 ? nullptr : self, nullptr, &grown);
  Expect(rc, infinicclInvalidArgument, t0, comm, "infinicclCommGrow (NULL command on rank 0)");
  if (grown != nullptr) Die("a grown communicator after InvalidArgument", rc, comm);
  ExactSum(comm, {0, 1, 2});
  return 0;
}

// The device `comm` is bound to on this rank (the library's record).
int BoundDevice(infinicclComm_t comm) {
  std::shared_ptr<infiniccl::Communicator> c;
  if (!infiniccl::Runtime::Lookup(comm, &c).ok()) Die("Runtime::Lookup", infinicclInvalidArgument, comm);
  return c->binding().device;
}

void ExpectDevice(infinicclComm_t comm, int want, const char *which) {
  const int got = BoundDevice(comm);
  std::printf("rank %d: %s bound to device %d\n", g_rank, which, got);
  if (got != want) {
    std::fprintf(stderr, "test_shrink_list rank %d: %s is bound to device %d, expected %d\n",
                 g_rank, which, got, want);
    std::_Exit(3);
  }
}

int GrowBind(infinicclComm_t comm, const char *self) {
  // devlist[local rank]: the launcher's local ranks need not follow the
  // ranks' order (Open MPI 5's do not always).
  const int mine = BoundDevice(comm);
  std::printf("rank %d: the parent bound to device %d\n", g_rank, mine);
  if (mine < 5 || mine > 7) Die("the parent is not bound by devlist", infinicclInternalError, comm);
  char child[] = "grow_bind_child";
  char *const args[] = {child, nullptr};
  infinicclComm_t grown = nullptr;
  const auto t0 = Clock::now();
  Expect(infinicclCommGrow(comm, 1, self, args, &grown), infinicclSuccess, t0, comm,
         "infinicclCommGrow");
  ExpectDevice(grown, mine, "the grown communicator");
  ExactSum(grown, {0, 1, 2, 3});
  Check(infinicclCommDestroy(grown), nullptr, "infinicclCommDestroy (grown)");
  return 0;
}

// The started process of grow_bind.
int GrowBindChild() {
  infinicclComm_t grown = nullptr;
  Check(infinicclCommGrow(nullptr, 0, nullptr, nullptr, &grown), nullptr,
        "infinicclCommGrow (started process)");
  Check(infinicclCommUserRank(grown, &g_rank), grown, "infinicclCommUserRank");
  ExpectDevice(grown, 3, "the grown communicator (started)");
  ExactSum(grown, {0, 1, 2, 3});
  Check(infinicclCommDestroy(grown), nullptr, "infinicclCommDestroy (grown)");
  std::printf("SHRINK PASS rank=%d (started)\n", g_rank);
  std::fflush(stdout);
  Check(infinicclFinalize(), nullptr, "infinicclFinalize");
  return 0;
}

// Rank 1 sleeps (alive, outside the library) while the others make `call`.
int Skip(infinicclComm_t comm, const char *call) {
  ExactSum(comm, {0, 1, 2});
  std::printf("READY rank=%d pid=%d\n", g_rank, static_cast<int>(getpid()));
  std::fflush(stdout);
  if (g_rank == 1) {
    sleep(60);
    return 0;
  }
  infinicclComm_t out = nullptr;
  infinicclResult_t rc = infinicclSuccess;
  if (std::strcmp(call, "split") == 0) {
    rc = infinicclCommSplit(comm, 0, g_rank, &out);
  } else if (std::strcmp(call, "shrink") == 0) {
    rc = infinicclCommShrink(comm, nullptr, 0, &out, INFINICCL_SHRINK_DEFAULT);
  } else if (std::strcmp(call, "grow") == 0) {
    char self[] = "test_shrink_list";
    rc = infinicclCommGrow(comm, 1, self, nullptr, &out);
  } else {
    rc = infinicclCommDestroy(comm);
  }
  // The watchdog ends the job before the call returns.
  std::fprintf(stderr, "test_shrink_list rank %d: %s returned %s without rank 1\n", g_rank,
               call, infinicclGetErrorString(rc));
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: test_shrink_list differ|destroy|grow_arg|grow_bind|skip CALL\n");
    return 2;
  }
  Check(infinicclInit(&argc, &argv), nullptr, "infinicclInit");
  if (std::strcmp(argv[1], "grow_bind_child") == 0) return GrowBindChild();
  const bool bind = std::strcmp(argv[1], "grow_bind") == 0;
  infinicclComm_t comm = nullptr;
  int size = 0;
  Check(infinicclGetSize(&size), nullptr, "infinicclGetSize");
  const int devlist[3] = {5, 6, 7};
  Check(infinicclCommInitAll(&comm, bind ? 3 : size, bind ? devlist : nullptr), nullptr,
        "infinicclCommInitAll");
  Check(infinicclCommUserRank(comm, &g_rank), comm, "infinicclCommUserRank");
  if (size != 3) {
    std::fprintf(stderr, "test_shrink_list: needs 3 ranks, not %d\n", size);
    return 2;
  }
  int destroyed = 0;
  if (std::strcmp(argv[1], "differ") == 0) {
    destroyed = Differ(comm);
  } else if (std::strcmp(argv[1], "destroy") == 0) {
    destroyed = Destroy(comm);
  } else if (std::strcmp(argv[1], "grow_arg") == 0) {
    destroyed = GrowArg(comm);
  } else if (bind) {
    destroyed = GrowBind(comm, argv[0]);
  } else if (std::strcmp(argv[1], "skip") == 0 && argc > 2) {
    destroyed = Skip(comm, argv[2]);
    std::_Exit(3);
  } else {
    std::fprintf(stderr, "test_shrink_list: unknown mode '%s'\n", argv[1]);
    return 2;
  }
  if (!destroyed && !(std::strcmp(argv[1], "destroy") == 0 && g_rank == 2))
    Check(infinicclCommDestroy(comm), comm, "infinicclCommDestroy");
  std::printf("SHRINK PASS rank=%d\n", g_rank);
  std::fflush(stdout);
  Check(infinicclFinalize(), nullptr, "infinicclFinalize");
  return 0;
}
