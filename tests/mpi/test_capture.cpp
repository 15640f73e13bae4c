// Collectives on a capturing stream of the emulated device (stream capture,
// infiniccl_sim.h), 2 ranks, no CCL: AllReduce, Broadcast and grouped
// Send/Recv with device buffers are refused (infinicclInvalidUsage, the
// message naming capture and the native CCL) before anything is queued:
// the capture ends valid (nothing synchronised the stream), its graph holds
// only the program's own copy, and two launches of it change the buffers
// exactly as that copy does and nothing else (no staging copies counted).
// The communicator then works: exact results of the same calls off capture
// (expected values computed here), and as many staged calls on both ranks.
//
// Run in three environments (tests/mpi/CMakeLists.txt): the progress
// engine's queued staging, blocking calls (INFINICCL_ASYNC=0), and the
// node's shared-memory segment (INFINICCL_SHM=1, which lands small
// AllReduces), each with INFINICCL_CHECK=1, which compares the ranks' call
// numbers at every collective.
#include <infiniccl/infiniccl.h>
#include <infiniccl/infiniccl_sim.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {

int g_rank = 0;
int g_failures = 0;

#define CHECK(cond)                                                                    \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      std::fprintf(stderr, "[rank %d] %s:%d: CHECK failed: %s (last error: %s)\n",     \
                   g_rank, __FILE__, __LINE__, #cond, infinicclGetLastError(nullptr)); \
      ++g_failures;                                                                    \
    }                                                                                  \
  } while (0)
#define OK(call) CHECK((call) == infinicclSuccess)

// `call` is refused as a call on a capturing stream.
#define REFUSED(call)                                                                   \
  do {                                                                                  \
    const infinicclResult_t r_ = (call);                                                \
    const char *m_ = infinicclGetLastError(nullptr);                                    \
    if (r_ != infinicclInvalidUsage ||                                                  \
        std::strstr(m_, "cannot be captured") == nullptr ||                             \
        std::strstr(m_, "native CCL") == nullptr) {                                     \
      std::fprintf(stderr, "[rank %d] %s:%d: %s returned %d, message \"%s\"\n", g_rank, \
                   __FILE__, __LINE__, #call, static_cast<int>(r_), m_);                \
      ++g_failures;                                                                     \
    }                                                                                   \
  } while (0)

// The value rank `r` contributes at index i, offset by `base` per round.
int32_t Value(int r, size_t i, int32_t base) {
  return base + (r + 1) * static_cast<int32_t>(i % 1000) + 1;
}

std::vector<int32_t> Read(const void *dev, size_t n) {
  std::vector<int32_t> v(n);
  OK(infinicclSimMemcpy(v.data(), dev, n * sizeof(int32_t), nullptr));
  return v;
}

void Fill(void *dev, const std::vector<int32_t> &v) {
  OK(infinicclSimMemcpy(dev, v.data(), v.size() * sizeof(int32_t), nullptr));
}

bool SameStats(const infinicclStagingStats &x, const infinicclStagingStats &y) {
  return x.d2h_copies == y.d2h_copies && x.h2d_copies == y.h2d_copies &&
         x.staged_calls == y.staged_calls && x.direct_calls == y.direct_calls;
}

// One size: the refusals under capture, the launches, then the same calls
// off capture.
void Round(infinicclComm_t comm, int nranks, size_t n) {
  const size_t bytes = n * sizeof(int32_t);
  const int peer = (g_rank + 1) % nranks, from = (g_rank + nranks - 1) % nranks;
  void *s = nullptr, *send = nullptr, *recv = nullptr, *graph = nullptr;
  OK(infinicclSimStreamCreate(&s));
  OK(infinicclSimMalloc(&send, bytes));
  OK(infinicclSimMalloc(&recv, bytes));
  std::vector<int32_t> mine(n), sentinel(n, -7), user(n);
  for (size_t i = 0; i < n; ++i) {
    mine[i] = Value(g_rank, i, 0);
    user[i] = -static_cast<int32_t>(i) - 100;
  }
  Fill(send, mine);
  Fill(recv, sentinel);
  infinicclStagingStats before{}, after{};
  OK(infinicclGetStagingStats(&before));

  OK(infinicclSimStreamBeginCapture(s));
  // The program's own work in the capture: recv <- user at each launch.
  OK(infinicclSimMemcpy(recv, user.data(), bytes, s));
  REFUSED(infinicclAllReduce(send, recv, n, infinicclInt32, infinicclSum, comm, s));
  REFUSED(infinicclAllReduce(send, send, n, infinicclInt32, infinicclSum, comm, s));
  REFUSED(infinicclBroadcast(send, recv, n, infinicclInt32, 0, comm, s));
  OK(infinicclGroupStart());
  REFUSED(infinicclSend(send, n, infinicclInt32, peer, comm, s));
  REFUSED(infinicclRecv(recv, n, infinicclInt32, from, comm, s));
  CHECK(infinicclGroupEnd() == infinicclInvalidUsage);
  int capturing = 0;
  OK(infinicclSimStreamIsCapturing(s, &capturing));
  CHECK(capturing == 1);
  // Valid: nothing synchronised the stream.
  OK(infinicclSimStreamEndCapture(s, &graph));
  size_t nodes = 99;
  OK(infinicclSimGraphNodes(graph, &nodes));
  CHECK(nodes == 1);  // the program's copy only

  // Nothing ran yet; each launch runs the program's copy only.
  OK(infinicclSimStreamSynchronize(s));
  CHECK(Read(recv, n) == sentinel);
  CHECK(Read(send, n) == mine);
  for (int launch = 0; launch < 2; ++launch) {
    Fill(recv, sentinel);
    OK(infinicclSimGraphLaunch(graph, s));
    OK(infinicclSimStreamSynchronize(s));
    CHECK(Read(recv, n) == user);
    CHECK(Read(send, n) == mine);
  }
  OK(infinicclSimGraphDestroy(graph));
  OK(infinicclGetStagingStats(&after));
  CHECK(SameStats(before, after));

  // Off capture: exact results.
  OK(infinicclAllReduce(send, recv, n, infinicclInt32, infinicclSum, comm, s));
  OK(infinicclSimStreamSynchronize(s));
  std::vector<int32_t> want(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t sum = 0;
    for (int r = 0; r < nranks; ++r) sum += Value(r, i, 0);
    want[i] = static_cast<int32_t>(sum);
  }
  CHECK(Read(recv, n) == want);
  OK(infinicclBroadcast(send, recv, n, infinicclInt32, 1, comm, s));
  OK(infinicclSimStreamSynchronize(s));
  for (size_t i = 0; i < n; ++i) want[i] = Value(1, i, 0);
  CHECK(Read(recv, n) == want);
  Fill(recv, sentinel);
  OK(infinicclGroupStart());
  OK(infinicclSend(send, n, infinicclInt32, peer, comm, s));
  OK(infinicclRecv(recv, n, infinicclInt32, from, comm, s));
  OK(infinicclGroupEnd());
  OK(infinicclSimStreamSynchronize(s));
  for (size_t i = 0; i < n; ++i) want[i] = Value(from, i, 0);
  CHECK(Read(recv, n) == want);

  // The staging counters: as many staged calls on every rank (the same
  // paths ran; the copies differ by rank, a Broadcast's root copies out only).
  OK(infinicclGetStagingStats(&after));
  const unsigned long long staged = after.staged_calls - before.staged_calls;
  CHECK(staged > 0);
  // The largest and the least over the ranks, through the library itself
  // on host buffers: equal when every rank staged as many.
  unsigned long long most = 0, least = 0;
  OK(infinicclAllReduce(&staged, &most, 1, infinicclUInt64, infinicclMax, comm, nullptr));
  OK(infinicclAllReduce(&staged, &least, 1, infinicclUInt64, infinicclMin, comm,
                        nullptr));
  CHECK(most == least);

  OK(infinicclSimFree(send));
  OK(infinicclSimFree(recv));
  OK(infinicclSimStreamDestroy(s));
}

}  // namespace

int main(int argc, char **argv) {
  OK(infinicclInit(&argc, &argv));
  int nranks = 1;
  OK(infinicclGetRank(&g_rank));
  OK(infinicclGetSize(&nranks));
  if (nranks < 2) {
    std::fprintf(stderr, "test_capture needs at least 2 ranks\n");
    return 1;
  }
  infinicclComm_t comm = nullptr;
  OK(infinicclCommInitAll(&comm, 0, nullptr));
  // One landing-sized call (through the segment's landing areas under
  // INFINICCL_SHM=1), one of several staging chunks.
  for (size_t n : {size_t{1000}, (size_t{1} << 20) + 3}) Round(comm, nranks, n);
  OK(infinicclCommDestroy(comm));
  OK(infinicclFinalize());
  if (g_failures) {
    std::fprintf(stderr, "[rank %d] %d check(s) failed\n", g_rank, g_failures);
    return 1;
  }
  std::printf("[rank %d] test_capture: all checks passed\n", g_rank);
  return 0;
}
