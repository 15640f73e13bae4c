// Going on without a rank: infinicclCommShrink, infinicclCommRevoke and
// infinicclCommGetFailedRanks, run under mpirun by tests/fault/CMakeLists.txt.
//
//   test_shrink exclude [grow]   the last rank leaves (destroys its communicator
//                                and finalises) and the others shrink it away
//                                (INFINICCL_SHRINK_DEFAULT); any MPI. First the
//                                bad arguments: each returns InvalidArgument and
//                                leaves the communicator usable. `grow`: then a
//                                started process joins them (CommGrow, as below).
//   test_shrink kill host|device [nogrow]
//                                the last rank SIGKILLs itself in the middle of a
//                                loop of 1 MiB AllReduces (host buffers, or
//                                EMULATED device buffers queued on a stream,
//                                INFINICCL_DEVICE=sim). Each survivor's failing
//                                call returns within 10 s of its last good one,
//                                and a Broadcast and an AllReduce after it
//                                return errors within 10 s too;
//                                GetFailedRanks names exactly the dead rank;
//                                ShrinkAbort gives a communicator of the others
//                                in their order, whose AllReduces are exact;
//                                then CommGrow starts one process (`test_shrink
//                                child`) that joins them, and the grown
//                                communicator's AllReduces are exact (not with
//                                `nogrow`).
//                                Needs an MPI that tolerates failures (Open MPI 5
//                                under `mpirun --with-ft ulfm`).
//   test_shrink revoke           rank 0 revokes instead of joining an AllReduce:
//                                every other rank's AllReduce returns
//                                RemoteError; then all shrink (nothing excluded)
//                                and sum exactly. ULFM as `kill`.
//
// Every surviving rank prints "SHRINK PASS rank=R" at the end; the runner
// counts them (the killed rank makes mpirun's own exit status non-zero).
#include <infiniccl/infiniccl.h>
#include <infiniccl/infiniccl_sim.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

int g_rank = -1;

[[noreturn]] void Fail(const char *what, infinicclResult_t rc, infinicclComm_t comm) {
  std::fprintf(stderr, "test_shrink rank %d: %s: %s (%s)\n", g_rank, what,
               infinicclGetErrorString(rc), comm ? infinicclGetLastError(comm) : "");
  std::fflush(stderr);
  std::_Exit(3);
}

void Check(infinicclResult_t rc, infinicclComm_t comm, const char *what) {
  if (rc != infinicclSuccess) Fail(what, rc, comm);
}

void Expect(infinicclResult_t rc, infinicclResult_t want, infinicclComm_t comm,
            const char *what) {
  if (rc != want) {
    std::fprintf(stderr, "test_shrink rank %d: %s returned %s, expected %s (%s)\n", g_rank,
                 what, infinicclGetErrorString(rc), infinicclGetErrorString(want),
                 infinicclGetLastError(comm));
    std::_Exit(3);
  }
}

using Clock = std::chrono::steady_clock;
double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

// Buffers on the host or on the emulated device, with one stream.
struct Buffers {
  bool device;
  size_t count;
  std::vector<int> host_send, host_recv;
  void *send = nullptr, *recv = nullptr, *stream = nullptr;

  Buffers(bool on_device, size_t n) : device(on_device), count(n), host_send(n), host_recv(n) {
    if (device) {
      Check(infinicclSimMalloc(&send, n * sizeof(int)), nullptr, "infinicclSimMalloc");
      Check(infinicclSimMalloc(&recv, n * sizeof(int)), nullptr, "infinicclSimMalloc");
      Check(infinicclSimStreamCreate(&stream), nullptr, "infinicclSimStreamCreate");
    } else {
      send = host_send.data();
      recv = host_recv.data();
    }
  }
  void Fill(int rank, int iter) {
    for (size_t i = 0; i < count; ++i) host_send[i] = (rank + 1) * static_cast<int>(i % 7 + iter % 5);
    if (device) {
      Check(infinicclSimMemcpy(send, host_send.data(), count * sizeof(int), stream), nullptr,
            "infinicclSimMemcpy");
    }
  }
  // The AllReduce, and for device buffers the stream's completion; the
  // first error of either.
  infinicclResult_t AllReduce(infinicclComm_t comm) {
    infinicclResult_t rc =
        infinicclAllReduce(send, recv, count, infinicclInt32, infinicclSum, comm, stream);
    if (rc != infinicclSuccess || !device) return rc;
    Check(infinicclSimStreamSynchronize(stream), nullptr, "infinicclSimStreamSynchronize");
    infinicclResult_t async = infinicclSuccess;
    Check(infinicclCommGetAsyncError(comm, &async), comm, "infinicclCommGetAsyncError");
    return async;
  }
  // Whether the result is the sum over `ranks` ranks numbered 0..ranks-1.
  bool Exact(int ranks, int iter) {
    if (device) {
      Check(infinicclSimMemcpy(host_recv.data(), recv, count * sizeof(int), stream), nullptr,
            "infinicclSimMemcpy");
      Check(infinicclSimStreamSynchronize(stream), nullptr, "infinicclSimStreamSynchronize");
    }
    const int ranks_sum = ranks * (ranks + 1) / 2;
    for (size_t i = 0; i < count; ++i) {
      if (host_recv[i] != ranks_sum * static_cast<int>(i % 7 + iter % 5)) {
        std::fprintf(stderr, "test_shrink rank %d: element %zu is %d, expected %d\n", g_rank, i,
                     host_recv[i], ranks_sum * static_cast<int>(i % 7 + iter % 5));
        return false;
      }
    }
    return true;
  }
};

// A few exact AllReduces on `comm` of `size` ranks.
void SumsExact(infinicclComm_t comm, int expect_rank, int expect_size, bool device) {
  int rank = -1, size = -1;
  Check(infinicclCommUserRank(comm, &rank), comm, "infinicclCommUserRank");
  Check(infinicclCommCount(comm, &size), comm, "infinicclCommCount");
  if (rank != expect_rank || size != expect_size) {
    std::fprintf(stderr, "test_shrink rank %d: new communicator rank %d of %d, expected %d of %d\n",
                 g_rank, rank, size, expect_rank, expect_size);
    std::_Exit(3);
  }
  Buffers b(device, 1 << 18);
  for (int iter = 0; iter < 3; ++iter) {
    b.Fill(rank, iter);
    Check(b.AllReduce(comm), comm, "infinicclAllReduce on the shrunk communicator");
    if (!b.Exact(size, iter)) std::_Exit(3);
  }
}

// Back to `size` ranks: one started process (`test_shrink child`) joins
// `sub`, and the grown communicator sums exactly.
void GrowBack(infinicclComm_t sub, int rank, int size, bool device) {
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) std::_Exit(3);
  self[n] = '\0';
  char child[] = "child", where[] = "device", host[] = "host";
  char *const args[] = {child, device ? where : host, nullptr};
  infinicclComm_t grown = nullptr;
  Check(infinicclCommGrow(sub, 1, self, args, &grown), sub, "infinicclCommGrow");
  SumsExact(grown, rank, size, device);
  Check(infinicclCommDestroy(grown), grown, "infinicclCommDestroy (grown)");
}

int Exclude(infinicclComm_t comm, int rank, int size, bool grow) {
  const int last = size - 1;
  infinicclComm_t sub = nullptr;
  if (rank == last) {
    Check(infinicclCommDestroy(comm), comm, "infinicclCommDestroy");
    return 0;
  }
  // Bad arguments: refused before anything is sent, comm still usable.
  const int self[] = {rank};
  const int twice[] = {last, last};
  const int outside[] = {size};
  Expect(infinicclCommShrink(comm, self, 1, &sub, INFINICCL_SHRINK_DEFAULT),
         infinicclInvalidArgument, comm, "shrink excluding the caller");
  Expect(infinicclCommShrink(comm, twice, 2, &sub, INFINICCL_SHRINK_DEFAULT),
         infinicclInvalidArgument, comm, "shrink listing a rank twice");
  Expect(infinicclCommShrink(comm, outside, 1, &sub, INFINICCL_SHRINK_DEFAULT),
         infinicclInvalidArgument, comm, "shrink of a rank out of range");
  Expect(infinicclCommShrink(comm, &last, 1, &sub, 7), infinicclInvalidArgument, comm,
         "shrink with unknown flags");
  Expect(infinicclCommShrink(comm, &last, 1, nullptr, 0), infinicclInvalidArgument, comm,
         "shrink with newcomm NULL");
  Expect(infinicclCommRevoke(comm, 3), infinicclInvalidArgument, comm, "revoke with flags 3");
  int count = 1;
  Expect(infinicclCommGetFailedRanks(comm, nullptr, &count), infinicclInvalidArgument, comm,
         "GetFailedRanks with ranks NULL");
  Expect(infinicclCommGetFailedRanks(comm, nullptr, nullptr), infinicclInvalidArgument, comm,
         "GetFailedRanks with count NULL");
  Check(infinicclCommShrink(comm, &last, 1, &sub, INFINICCL_SHRINK_DEFAULT), comm,
        "infinicclCommShrink");
  SumsExact(sub, rank, size - 1, false);
  if (grow) GrowBack(sub, rank, size, false);
  Check(infinicclCommDestroy(sub), sub, "infinicclCommDestroy (shrunk)");
  Check(infinicclCommDestroy(comm), comm, "infinicclCommDestroy");
  std::printf("SHRINK PASS rank=%d\n", rank);
  return 0;
}

int Kill(infinicclComm_t comm, int rank, int size, bool device, bool grow) {
  const int victim = size - 1;
  Buffers b(device, 1 << 18);  // 1 MiB of int32
  auto last_good = Clock::now();
  infinicclResult_t rc = infinicclSuccess;
  for (int iter = 0; iter < 1000; ++iter) {
    if (rank == victim && iter == 5) raise(SIGKILL);
    b.Fill(rank, iter);
    rc = b.AllReduce(comm);
    if (rc != infinicclSuccess) break;
    if (!b.Exact(size, iter)) return 1;
    last_good = Clock::now();
  }
  if (rc == infinicclSuccess) {
    std::fprintf(stderr, "test_shrink rank %d: 1000 AllReduces and no failure seen\n", rank);
    return 1;
  }
  const double waited = Seconds(last_good);
  std::printf("rank %d: failing call returned %s %.2f s after the last good one: %s\n", rank,
              infinicclGetErrorString(rc), waited, infinicclGetLastError(comm));
  if (waited > 10.0) {
    std::fprintf(stderr, "test_shrink rank %d: the failure took %.2f s to show (bound 10 s)\n",
                 rank, waited);
    return 1;
  }
  // Later calls on the failed communicator fail as quickly: each survivor
  // stopped at its own point of the failed call, so a call that waited on
  // a live peer there could wait forever. A Broadcast (4 KiB of host
  // memory: shared memory at the default) and an AllReduce.
  {
    std::vector<int> small(1024, rank);
    const auto start = Clock::now();
    const infinicclResult_t bcast = infinicclBroadcast(
        small.data(), small.data(), small.size(), infinicclInt32, 0, comm, nullptr);
    const infinicclResult_t sum = infinicclAllReduce(
        small.data(), small.data(), small.size(), infinicclInt32, infinicclSum, comm, nullptr);
    const double took = Seconds(start);
    std::printf("rank %d: Broadcast and AllReduce after the failure returned %s and %s in "
                "%.2f s: %s\n", rank, infinicclGetErrorString(bcast),
                infinicclGetErrorString(sum), took, infinicclGetLastError(comm));
    if (bcast == infinicclSuccess || sum == infinicclSuccess || took > 10.0) {
      std::fprintf(stderr, "test_shrink rank %d: calls after the failure: %s, %s in %.2f s "
                   "(expected errors within 10 s)\n", rank, infinicclGetErrorString(bcast),
                   infinicclGetErrorString(sum), took);
      return 1;
    }
  }
  int failed[8] = {-1, -1, -1, -1, -1, -1, -1, -1}, count = 8;
  Check(infinicclCommGetFailedRanks(comm, failed, &count), comm, "infinicclCommGetFailedRanks");
  if (count != 1 || failed[0] != victim) {
    std::fprintf(stderr, "test_shrink rank %d: GetFailedRanks gave %d rank(s), first %d; "
                 "expected exactly rank %d\n", rank, count, failed[0], victim);
    return 1;
  }
  infinicclComm_t sub = nullptr;
  Check(infinicclCommShrink(comm, failed, count, &sub, INFINICCL_SHRINK_ABORT), comm,
        "infinicclCommShrink(INFINICCL_SHRINK_ABORT)");
  SumsExact(sub, rank, size - 1, device);
  Check(infinicclCommAbort(comm), comm, "infinicclCommAbort (the parent)");
  if (!grow) {
    Check(infinicclCommDestroy(sub), sub, "infinicclCommDestroy (shrunk)");
    std::printf("SHRINK PASS rank=%d\n", rank);
    return 0;
  }
  GrowBack(sub, rank, size, device);
  Check(infinicclCommDestroy(sub), sub, "infinicclCommDestroy (shrunk)");
  std::printf("SHRINK PASS rank=%d\n", rank);
  return 0;
}

// A process the survivors started: it joins them and sums with them.
int Child(bool device) {
  infinicclComm_t grown = nullptr;
  Check(infinicclCommGrow(nullptr, 0, nullptr, nullptr, &grown), nullptr,
        "infinicclCommGrow (started process)");
  int rank = -1, size = 0;
  Check(infinicclCommUserRank(grown, &rank), grown, "infinicclCommUserRank");
  Check(infinicclCommCount(grown, &size), grown, "infinicclCommCount");
  g_rank = rank;
  SumsExact(grown, size - 1, size, device);
  Check(infinicclCommDestroy(grown), grown, "infinicclCommDestroy (grown)");
  std::printf("SHRINK PASS rank=%d (started)\n", rank);
  return 0;
}

int Revoke(infinicclComm_t comm, int rank, int size) {
  Buffers b(false, 1024);
  b.Fill(rank, 0);
  if (rank == 0) {
    sleep(1);  // the others are inside their AllReduce by now
    Check(infinicclCommRevoke(comm, 0), comm, "infinicclCommRevoke");
    Expect(b.AllReduce(comm), infinicclRemoteError, comm, "AllReduce after a revoke");
  } else {
    const auto start = Clock::now();
    Expect(b.AllReduce(comm), infinicclRemoteError, comm, "AllReduce a peer revoked");
    std::printf("rank %d: revoked call returned after %.2f s: %s\n", rank, Seconds(start),
                infinicclGetLastError(comm));
  }
  infinicclComm_t sub = nullptr;
  Check(infinicclCommShrink(comm, nullptr, 0, &sub, INFINICCL_SHRINK_ABORT), comm,
        "infinicclCommShrink of a revoked communicator");
  SumsExact(sub, rank, size, false);
  Check(infinicclCommDestroy(sub), sub, "infinicclCommDestroy (shrunk)");
  Check(infinicclCommDestroy(comm), comm, "infinicclCommDestroy (revoked)");
  std::printf("SHRINK PASS rank=%d\n", rank);
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: test_shrink exclude | kill host|device | revoke\n");
    return 2;
  }
  infinicclComm_t comm = nullptr;
  Check(infinicclInit(&argc, &argv), nullptr, "infinicclInit");
  if (std::strcmp(argv[1], "child") == 0) {
    const int rc = Child(argc > 2 && std::strcmp(argv[2], "device") == 0);
    std::fflush(stdout);
    Check(infinicclFinalize(), nullptr, "infinicclFinalize");
    return rc;
  }
  Check(infinicclCommInitAll(&comm, 0, nullptr), nullptr, "infinicclCommInitAll");
  int rank = 0, size = 1;
  Check(infinicclCommUserRank(comm, &rank), comm, "infinicclCommUserRank");
  Check(infinicclCommCount(comm, &size), comm, "infinicclCommCount");
  g_rank = rank;
  if (size < 3) {
    std::fprintf(stderr, "test_shrink: needs at least 3 ranks\n");
    return 2;
  }
  int rc = 2;
  if (std::strcmp(argv[1], "exclude") == 0) {
    rc = Exclude(comm, rank, size, argc > 2 && std::strcmp(argv[2], "grow") == 0);
  } else if (std::strcmp(argv[1], "kill") == 0 && argc > 2) {
    rc = Kill(comm, rank, size, std::strcmp(argv[2], "device") == 0,
              !(argc > 3 && std::strcmp(argv[3], "nogrow") == 0));
  } else if (std::strcmp(argv[1], "revoke") == 0) {
    rc = Revoke(comm, rank, size);
  } else {
    std::fprintf(stderr, "test_shrink: unknown mode '%s'\n", argv[1]);
  }
  std::fflush(stdout);
  Check(infinicclFinalize(), nullptr, "infinicclFinalize");
  return rc;
}
