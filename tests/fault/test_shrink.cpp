// Going on without a rank: infinicclCommShrink, infinicclCommRevoke and
// infinicclCommGetFailedRanks, run under mpirun by tests/fault/CMakeLists.txt.
//
//   test_shrink exclude [grow]   the last rank leaves (destroys its communicator
//                                and finalises) and the others shrink it away
//                                (INFINICCL_SHRINK_DEFAULT); any MPI. First the
//                                bad arguments: each returns InvalidArgument and
//                                leaves the communicator usable. `grow`: then a
//                                started process joins them (CommGrow, as below).
//                                `grow-die`: the started process SIGKILLs itself
//                                before it joins; every survivor's CommGrow
//                                returns an error within 60 s, and the shrunk
//                                communicator still sums exactly (ULFM).
//   test_shrink kill host|device|mixed [nogrow]
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
//                                `mixed`: the first half of the ranks on the
//                                device, the others on the host (with
//                                INFINICCL_HIERARCHY=1 and the emulated CCL: two
//                                groups on one node, the two-level path).
//                                With INFINICCL_SIM_CCL=1 the device calls go to the
//                                EMULATED CCL, and every new communicator must
//                                have one too.
//                                Needs an MPI that tolerates failures (Open MPI 5
//                                under `mpirun --with-ft ulfm`).
//   test_shrink cycles N host|device
//                                N kill-and-grow cycles on 4 ranks: in each the
//                                last rank (a started process from the second
//                                on) SIGKILLs itself mid-loop, the others see
//                                it, shrink with INFINICCL_SHRINK_ABORT, abort
//                                the old communicator and grow back to 4 with a
//                                started process (`test_shrink cycle-child`),
//                                summing exactly at every size. The first rank's
//                                resident and shared memory, its threads and
//                                the library's /dev/shm entries, read after
//                                cycle 5 and after the last, stay flat. ULFM as
//                                `kill`.
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
#include <dirent.h>
#include <malloc.h>
#include <string>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

int g_rank = -1;
bool g_mixed = false;  // `kill mixed`: the first half of the ranks on the device

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
  ~Buffers() {
    if (!device) return;
    infinicclSimFree(send);
    infinicclSimFree(recv);
    infinicclSimStreamDestroy(stream);
  }
  Buffers(const Buffers &) = delete;
  Buffers &operator=(const Buffers &) = delete;
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
  infinicclStagingStats before{}, after{};
  Check(infinicclGetStagingStats(&before), nullptr, "infinicclGetStagingStats");
  for (int iter = 0; iter < 3; ++iter) {
    b.Fill(rank, iter);
    Check(b.AllReduce(comm), comm, "infinicclAllReduce on the shrunk communicator");
    if (!b.Exact(size, iter)) std::_Exit(3);
  }
  // With the emulated CCL (INFINICCL_SIM_CCL=1) the new communicator has
  // one too: its device calls are neither staged nor given to MPI.
  Check(infinicclGetStagingStats(&after), nullptr, "infinicclGetStagingStats");
  const char *ccl = std::getenv("INFINICCL_SIM_CCL");
  if (device && !g_mixed && ccl != nullptr && std::strcmp(ccl, "1") == 0 &&
      (after.staged_calls != before.staged_calls || after.direct_calls != before.direct_calls)) {
    std::fprintf(stderr, "test_shrink rank %d: the communicator of %d ranks has no CCL: %llu "
                 "staged and %llu direct device call(s)\n", g_rank, size,
                 after.staged_calls - before.staged_calls,
                 after.direct_calls - before.direct_calls);
    std::_Exit(3);
  }
}

// Back to `size` ranks: one started process (`test_shrink child`) joins
// `sub`, and the grown communicator sums exactly.
// With `dies`, the started process (`test_shrink child-die`) SIGKILLs itself
// before it joins: CommGrow must return an error, not hang, and leave `sub`
// as it was.
void GrowBack(infinicclComm_t sub, int rank, int size, bool device, bool dies = false) {
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) std::_Exit(3);
  self[n] = '\0';
  char child[] = "child", child_die[] = "child-die", where[] = "device", host[] = "host";
  char *const args[] = {dies ? child_die : child, device ? where : host, nullptr};
  infinicclComm_t grown = nullptr;
  if (dies) {
    const auto start = Clock::now();
    const infinicclResult_t r = infinicclCommGrow(sub, 1, self, args, &grown);
    const double took = Seconds(start);
    std::printf("rank %d: CommGrow with a started process that died: %s after %.2f s: %s\n",
                rank, infinicclGetErrorString(r), took, infinicclGetLastError(sub));
    if (r == infinicclSuccess || grown != nullptr || took > 60) {
      std::fprintf(stderr, "test_shrink rank %d: CommGrow returned %s (comm %p) after %.2f s; "
                   "an error within 60 s was expected\n", rank, infinicclGetErrorString(r),
                   static_cast<void *>(grown), took);
      std::_Exit(1);
    }
    SumsExact(sub, rank, size - 1, device);
    return;
  }
  Check(infinicclCommGrow(sub, 1, self, args, &grown), sub, "infinicclCommGrow");
  SumsExact(grown, rank, size, device);
  Check(infinicclCommDestroy(grown), grown, "infinicclCommDestroy (grown)");
}

int Exclude(infinicclComm_t comm, int rank, int size, bool grow, bool grow_dies) {
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
  if (grow || grow_dies) GrowBack(sub, rank, size, false, grow_dies);
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

// The victim's side of a cycle: AllReduces until the fifth, then SIGKILL.
[[noreturn]] void DieMidLoop(infinicclComm_t comm, int rank, int size, bool device) {
  Buffers b(device, 1 << 18);
  for (int iter = 0;; ++iter) {
    if (iter == 5) raise(SIGKILL);
    b.Fill(rank, iter);
    Check(b.AllReduce(comm), comm, "infinicclAllReduce before the kill");
    if (!b.Exact(size, iter)) std::_Exit(3);
  }
}

// The survivors' side: AllReduces until one fails, then the failure agreed
// on, the shrink and the old communicator aborted. Returns the shrunk one.
infinicclComm_t SurviveKill(infinicclComm_t comm, int rank, int size, bool device) {
  Buffers b(device, 1 << 18);
  infinicclResult_t rc = infinicclSuccess;
  for (int iter = 0; iter < 1000 && rc == infinicclSuccess; ++iter) {
    b.Fill(rank, iter);
    rc = b.AllReduce(comm);
    if (rc == infinicclSuccess && !b.Exact(size, iter)) std::_Exit(3);
  }
  if (rc == infinicclSuccess) Fail("1000 AllReduces and no failure seen", rc, comm);
  int failed[8] = {-1, -1, -1, -1, -1, -1, -1, -1}, count = 8;
  Check(infinicclCommGetFailedRanks(comm, failed, &count), comm, "infinicclCommGetFailedRanks");
  if (count != 1 || failed[0] != size - 1) {
    std::fprintf(stderr, "test_shrink rank %d: GetFailedRanks gave %d rank(s), first %d\n", rank,
                 count, failed[0]);
    std::_Exit(3);
  }
  infinicclComm_t sub = nullptr;
  Check(infinicclCommShrink(comm, failed, count, &sub, INFINICCL_SHRINK_ABORT), comm,
        "infinicclCommShrink(INFINICCL_SHRINK_ABORT)");
  Check(infinicclCommAbort(comm), comm, "infinicclCommAbort (the parent)");
  return sub;
}

// What the cycles watch: the heap's bytes in use (malloc's own count:
// live allocations, whatever the allocator's fragmentation makes of the
// resident set), /proc/self/status's VmRSS and RssShmem (KiB), the
// process's threads and the library's entries in /dev/shm.
struct Footprint {
  long heap_kib = 0, rss_kib = 0, shmem_kib = 0;
  int threads = 0, shm_entries = 0;
  static Footprint Now() {
    Footprint f;
    const struct mallinfo2 m = mallinfo2();
    f.heap_kib = static_cast<long>((m.uordblks + m.hblkhd) / 1024);
    if (FILE *st = std::fopen("/proc/self/status", "r")) {
      char line[256];
      while (std::fgets(line, sizeof line, st)) {
        std::sscanf(line, "VmRSS: %ld", &f.rss_kib);
        std::sscanf(line, "RssShmem: %ld", &f.shmem_kib);
        std::sscanf(line, "Threads: %d", &f.threads);
      }
      std::fclose(st);
    }
    if (DIR *d = opendir("/dev/shm")) {
      while (dirent *e = readdir(d)) {
        if (std::strncmp(e->d_name, "infiniccl-", 10) == 0) ++f.shm_entries;
      }
      closedir(d);
    }
    return f;
  }
};

int Cycles(infinicclComm_t comm, int rank, int size, bool device, int cycles) {
  if (size != 4) {
    std::fprintf(stderr, "test_shrink cycles: runs on 4 ranks\n");
    return 2;
  }
  if (rank == size - 1) DieMidLoop(comm, rank, size, device);
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return 1;
  self[n] = '\0';
  Footprint early;
  for (int c = 0; c < cycles; ++c) {
    infinicclComm_t sub = SurviveKill(comm, rank, size, device);
    SumsExact(sub, rank, size - 1, device);
    std::string left = std::to_string(cycles - c - 1);
    char child[] = "cycle-child", where[] = "device", host[] = "host";
    char *const args[] = {child, device ? where : host, left.data(), nullptr};
    infinicclComm_t grown = nullptr;
    Check(infinicclCommGrow(sub, 1, self, args, &grown), sub, "infinicclCommGrow");
    Check(infinicclCommDestroy(sub), sub, "infinicclCommDestroy (shrunk)");
    SumsExact(grown, rank, size, device);
    comm = grown;
    if (c == 4) early = Footprint::Now();
  }
  const Footprint late = Footprint::Now();  // as `early`: one grown communicator
  Check(infinicclCommDestroy(comm), comm, "infinicclCommDestroy (grown)");
  if (rank == 0 && cycles > 5) {
    std::printf("rank 0 after cycle 5 and after cycle %d: heap in use %ld -> %ld KiB, VmRSS "
                "%ld -> %ld KiB, RssShmem %ld -> %ld KiB, threads %d -> %d, /dev/shm entries "
                "%d -> %d\n",
                cycles, early.heap_kib, late.heap_kib, early.rss_kib, late.rss_kib,
                early.shmem_kib, late.shmem_kib, early.threads, late.threads, early.shm_entries,
                late.shm_entries);
    // Flat: no segment (3 or 9 MiB per rank of the node), engine thread or
    // /dev/shm entry kept per cycle. The heap in use grows by Open MPI's own
    // state for each started job: a plain MPI program of the same cycles
    // (kill, revoke, shrink, spawn, merge) keeps 255 KiB more per cycle with
    // Open MPI 5.0.11, this one 265 KiB (the extra: the MPI communicator of
    // each aborted communicator, left to MPI_Finalize), host and device
    // alike. 300 KiB per cycle are allowed: a leaked 1 MiB buffer per cycle
    // fails. (The resident set is printed, not bounded: on device buffers
    // the allocator's fragmentation around the 1 MiB buffers makes it grow
    // beyond the heap in use.)
    const long heap_bound = 300L * (cycles - 5) + 2048;
    if (late.heap_kib - early.heap_kib > heap_bound ||
        late.shmem_kib - early.shmem_kib > 2048 || late.threads > early.threads ||
        late.shm_entries > early.shm_entries) {
      std::fprintf(stderr, "test_shrink rank 0: memory, threads or /dev/shm grew over the "
                   "cycles\n");
      return 1;
    }
  }
  std::printf("SHRINK PASS rank=%d\n", rank);
  return 0;
}

// A started process: joins, sums, and is the next cycle's victim while
// cycles are left (left > 0).
int CycleChild(bool device, int left) {
  infinicclComm_t grown = nullptr;
  Check(infinicclCommGrow(nullptr, 0, nullptr, nullptr, &grown), nullptr,
        "infinicclCommGrow (started process)");
  int rank = -1, size = 0;
  Check(infinicclCommUserRank(grown, &rank), grown, "infinicclCommUserRank");
  Check(infinicclCommCount(grown, &size), grown, "infinicclCommCount");
  g_rank = rank;
  SumsExact(grown, size - 1, size, device);
  if (left > 0) DieMidLoop(grown, rank, size, device);
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
  if (argc > 2 && std::strcmp(argv[1], "kill") == 0 && std::strcmp(argv[2], "mixed") == 0) {
    // The second half of the ranks (by the launcher's numbering) without the
    // emulated device: a group of their own, beside the device ranks'.
    const char *r = std::getenv("OMPI_COMM_WORLD_RANK");
    const char *n = std::getenv("OMPI_COMM_WORLD_SIZE");
    if (r != nullptr && n != nullptr && std::atoi(r) >= std::atoi(n) / 2) {
      unsetenv("INFINICCL_DEVICE");
    }
  }
  Check(infinicclInit(&argc, &argv), nullptr, "infinicclInit");
  // A started process: "child host|device" joins and sums; "cycle-child
  // host|device N" is also the next cycle's victim while N > 0; "child-die"
  // dies before it joins.
  if (std::strcmp(argv[1], "child-die") == 0) raise(SIGKILL);
  const bool cycle = std::strcmp(argv[1], "cycle-child") == 0;
  if (cycle || std::strcmp(argv[1], "child") == 0) {
    const int rc = CycleChild(argc > 2 && std::strcmp(argv[2], "device") == 0,
                              cycle && argc > 3 ? std::atoi(argv[3]) : 0);
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
    rc = Exclude(comm, rank, size, argc > 2 && std::strcmp(argv[2], "grow") == 0,
                 argc > 2 && std::strcmp(argv[2], "grow-die") == 0);
  } else if (std::strcmp(argv[1], "kill") == 0 && argc > 2) {
    g_mixed = std::strcmp(argv[2], "mixed") == 0;
    rc = Kill(comm, rank, size,
              std::strcmp(argv[2], "device") == 0 || (g_mixed && rank < size / 2),
              !(argc > 3 && std::strcmp(argv[3], "nogrow") == 0));
  } else if (std::strcmp(argv[1], "cycles") == 0 && argc > 3) {
    rc = Cycles(comm, rank, size, std::strcmp(argv[3], "device") == 0, std::atoi(argv[2]));
  } else if (std::strcmp(argv[1], "revoke") == 0) {
    rc = Revoke(comm, rank, size);
  } else {
    std::fprintf(stderr, "test_shrink: unknown mode '%s'\n", argv[1]);
  }
  std::fflush(stdout);
  Check(infinicclFinalize(), nullptr, "infinicclFinalize");
  return rc;
}
