// Soak: mixed collectives of random sizes, dtypes, ops and roots, on host
// and EMULATED device buffers, for a bounded time, every result checked
// against independently computed values (test_util.h).
//
//   test_soak [seconds=100] [seed=7]
//
// The random choices come from one seeded generator that every rank steps
// identically, so all ranks agree on each call without communicating. Rank
// 0 keeps time; one AllReduce per call tells every rank when to stop.
//
// After a warm-up (every kind at the largest size, on both kinds of buffer,
// plus one communicator created and destroyed), the process must stay flat:
// staging bytes held and their peak, open file descriptors, and mappings of
// the watchdog's shared-memory boards (a communicator is created and
// destroyed every few hundred calls to exercise that).
#include <dirent.h>
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>

#include "device/registry.h"
#include "test_util.h"

using namespace itest;

namespace {

constexpr size_t kMaxCount = 6000;  // elements per rank (or per block)
constexpr int kKinds = 8;
const char *const kKindNames[kKinds] = {"AllReduce", "Reduce",    "ReduceScatter",
                                        "Broadcast", "AllGather", "Gather",
                                        "Scatter",   "AllToAll"};

int g_n = 1;
infiniccl::DeviceRuntime *g_dev = nullptr;

struct Buffers {
  size_t bytes;
  std::vector<unsigned char> hs, hr;  // host
  void *ds = nullptr, *dr = nullptr;  // emulated device
  explicit Buffers(size_t b) : bytes(b), hs(b), hr(b) {
    if (!g_dev->Malloc(&ds, b).ok() || !g_dev->Malloc(&dr, b).ok()) std::abort();
  }
  ~Buffers() {
    g_dev->Free(ds);
    g_dev->Free(dr);
  }
};

void Copy(void *dst, const void *src, size_t bytes, infiniccl::CopyKind kind) {
  if (bytes == 0) return;
  if (!g_dev->MemcpyAsync(dst, src, bytes, kind, nullptr).ok() ||
      !g_dev->StreamSynchronize(nullptr).ok())
    std::abort();
}

struct Call {
  int kind;
  infinicclDataType_t dt;
  infinicclRedOp_t op;
  size_t count;
  int root;
  bool device;
  uint64_t seed;
};

// One call: fill, run, check. Returns false on a failed call or wrong value.
bool Run(infinicclComm_t comm, Buffers &b, const Call &c) {
  const int me = g_rank, n = g_n;
  const size_t es = Info(c.dt).size, cnt = c.count;
  size_t send_elems = cnt, recv_elems = cnt;
  switch (c.kind) {
    case 2: send_elems = cnt * n; break;  // ReduceScatter
    case 4:
    case 5: recv_elems = cnt * n; break;               // AllGather, Gather
    case 6: send_elems = cnt * n; break;               // Scatter
    case 7: send_elems = recv_elems = cnt * n; break;  // AllToAll
    default: break;
  }
  unsigned char *s = b.hs.data(), *r = b.hr.data();
  const bool reduction = c.kind <= 2;
  for (size_t i = 0; i < send_elems; ++i) {
    if (reduction) {
      Encode(c.dt, s, i, ReduceValue(c.dt, c.op, c.seed, me, i));
    } else {
      Encode(c.dt, s, i, DataValue(c.dt, c.seed, me, i));
    }
  }
  std::memset(r, 0x5A, recv_elems * es);
  void *sp = s, *rp = r;
  if (c.device) {
    Copy(b.ds, s, send_elems * es, infiniccl::CopyKind::kHostToDevice);
    Copy(b.dr, r, recv_elems * es, infiniccl::CopyKind::kHostToDevice);
    sp = b.ds;
    rp = b.dr;
  }
  infinicclResult_t rc = infinicclSuccess;
  switch (c.kind) {
    case 0: rc = infinicclAllReduce(sp, rp, cnt, c.dt, c.op, comm, nullptr); break;
    case 1: rc = infinicclReduce(sp, rp, cnt, c.dt, c.op, c.root, comm, nullptr); break;
    case 2: rc = infinicclReduceScatter(sp, rp, cnt, c.dt, c.op, comm, nullptr); break;
    case 3: rc = infinicclBroadcast(sp, rp, cnt, c.dt, c.root, comm, nullptr); break;
    case 4: rc = infinicclAllGather(sp, rp, cnt, c.dt, comm, nullptr); break;
    case 5: rc = infinicclGather(sp, rp, cnt, c.dt, c.root, comm, nullptr); break;
    case 6: rc = infinicclScatter(sp, rp, cnt, c.dt, c.root, comm, nullptr); break;
    case 7: rc = infinicclAllToAll(sp, rp, cnt, c.dt, comm, nullptr); break;
  }
  if (rc != infinicclSuccess) {
    CHECK(false, "%s failed: %s", kKindNames[c.kind], infinicclGetLastError(comm));
    return false;
  }
  if (c.device) Copy(r, b.dr, recv_elems * es, infiniccl::CopyKind::kDeviceToHost);
  const bool receives = !((c.kind == 1 || c.kind == 5) && me != c.root);
  if (!receives) return true;
  for (size_t i = 0; i < recv_elems; ++i) {
    double want = 0;
    switch (c.kind) {
      case 0:
      case 1: want = ExpectedReduce(c.dt, c.op, c.seed, n, i); break;
      case 2: want = ExpectedReduce(c.dt, c.op, c.seed, n, me * cnt + i); break;
      case 3: want = DataValue(c.dt, c.seed, c.root, i); break;
      case 4:
      case 5: want = DataValue(c.dt, c.seed, int(i / cnt), i % cnt); break;
      case 6: want = DataValue(c.dt, c.seed, c.root, me * cnt + i); break;
      case 7: want = DataValue(c.dt, c.seed, int(i / cnt), me * cnt + i % cnt); break;
    }
    const double got = Decode(c.dt, r, i);
    if (!Matches(c.dt, reduction ? c.op : infinicclSum, got, want)) {
      CHECK(false, "%s %s %s count=%zu root=%d %s: element %zu is %g, expected %g",
            kKindNames[c.kind], Info(c.dt).name, OpName(c.op), cnt, c.root,
            c.device ? "device" : "host", i, got, want);
      return false;
    }
  }
  return true;
}

int OpenFds() {
  int n = 0;
  if (DIR *d = opendir("/proc/self/fd")) {
    while (readdir(d) != nullptr) ++n;
    closedir(d);
  }
  return n;
}

int BoardMappings() {
  std::ifstream maps("/proc/self/maps");
  int n = 0;
  for (std::string line; std::getline(maps, line);)
    if (line.find("infiniccl-seq") != std::string::npos) ++n;
  return n;
}

// A short-lived communicator: one call, then destroyed.
bool CommCycle() {
  infinicclComm_t c = nullptr;
  int v = g_rank + 1, sum = 0;
  if (infinicclCommInitAll(&c, 0, nullptr) != infinicclSuccess) return false;
  const bool ok = infinicclAllReduce(&v, &sum, 1, infinicclInt32, infinicclSum, c,
                                     nullptr) == infinicclSuccess &&
                  sum == g_n * (g_n + 1) / 2;
  return infinicclCommDestroy(c) == infinicclSuccess && ok;
}

}  // namespace

int main(int argc, char **argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 100.0;
  const unsigned seed = argc > 2 ? unsigned(std::atoi(argv[2])) : 7u;
  if (infinicclInit(&argc, &argv) != infinicclSuccess) return 2;
  infinicclComm_t comm = nullptr;
  if (infinicclCommInitAll(&comm, 0, nullptr) != infinicclSuccess) return 2;
  infinicclCommUserRank(comm, &g_rank);
  infinicclCommCount(comm, &g_n);
  g_dev = &infiniccl::DeviceRegistry::EnableSim();
  {
    Buffers buf(kMaxCount * size_t(g_n) * 8);

    // Warm-up: each kind at the largest size on both buffer kinds.
    for (int kind = 0; kind < kKinds; ++kind)
      for (bool device : {false, true})
        Run(comm, buf, {kind, infinicclFloat64, infinicclSum, kMaxCount, 0, device, 1});
    CHECK(CommCycle(), "communicator create/destroy failed: %s", SafeLastError());
    infinicclStagingStats base{};
    infinicclGetStagingStats(&base);
    const int base_fds = OpenFds(), base_maps = BoardMappings();

    std::mt19937_64 rng(seed);
    const auto start = std::chrono::steady_clock::now();
    long calls = 0, device_calls = 0, checkpoints = 0;
    for (;;) {
      Call c;
      c.kind = int(rng() % kKinds);
      c.dt = infinicclDataType_t(rng() % infinicclNumTypes);
      c.op = infinicclRedOp_t(rng() % infinicclNumOps);
      if (IsBitwise(c.op) && Info(c.dt).is_float) c.op = infinicclSum;  // integer types only
      // Log-uniform 1..kMaxCount: many small calls, some large.
      c.count =
          std::min<size_t>(kMaxCount, size_t(std::exp2(double(rng() % 1300) / 100.0)));
      c.root = int(rng() % uint64_t(g_n));
      c.device = rng() % 2;
      c.seed = rng();
      Run(comm, buf, c);  // a failure is counted; the agreement below stops all ranks
      ++calls;
      device_calls += c.device;
      if (calls % 256 == 0) {
        CHECK(CommCycle(), "communicator create/destroy failed: %s", SafeLastError());
        infinicclStagingStats now{};
        infinicclGetStagingStats(&now);
        CHECK(now.bytes_held <= base.bytes_held &&
                  now.peak_bytes_held == base.peak_bytes_held,
              "staging grew after warm-up: held %llu (was %llu), peak %llu (was %llu)",
              now.bytes_held, base.bytes_held, now.peak_bytes_held, base.peak_bytes_held);
        CHECK(OpenFds() <= base_fds, "open fds %d, %d after warm-up", OpenFds(),
              base_fds);
        CHECK(BoardMappings() <= base_maps, "%d board mappings, %d after warm-up",
              BoardMappings(), base_maps);
        ++checkpoints;
      }
      // Stop when rank 0's time is up or any rank has failed: one call.
      const double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      int stop_here = g_failures > 0 || (g_rank == 0 && elapsed >= seconds), stop = 1;
      if (infinicclAllReduce(&stop_here, &stop, 1, infinicclInt32, infinicclMax, comm,
                             nullptr) != infinicclSuccess ||
          stop)
        break;
    }
    infinicclStagingStats end{};
    infinicclGetStagingStats(&end);
    if (g_rank == 0) {
      std::printf(
          "soak: %ld calls (%ld on emulated device buffers), %ld checkpoints, "
          "staging held %llu bytes (peak %llu, %llu allocations), %d fds\n",
          calls, device_calls, checkpoints, end.bytes_held, end.peak_bytes_held,
          end.allocations, OpenFds());
    }
  }
  infinicclCommDestroy(comm);
  const long total = TotalFailures();
  infinicclFinalize();
  if (g_rank == 0) std::printf("%s\n", total == 0 ? "PASS" : "FAILED");
  return total == 0 ? 0 : 1;
}
