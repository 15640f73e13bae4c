// Counts above INT_MAX elements (DESIGN: never narrow size_t counts to int).
// Byte-sized dtypes keep each buffer at about 2 GiB; at 2 ranks the largest
// case (out-of-place Broadcast) holds about 8 GiB in all.
//
// Checked exactly: the first and last 4096 elements, every element within
// 4096 of index INT_MAX (where a 32-bit count or offset would wrap), and a
// stride-4099 sample of the rest. Patterns have period 251, which divides no
// power of two, so data moved by 2^k elements cannot look right.
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>

#include "test_util.h"

using namespace itest;

namespace {

constexpr size_t kBig = size_t(INT_MAX) + 1000;     // elements per buffer
constexpr size_t kHalf = size_t(INT_MAX) / 2 + 1000;  // AllGather: per rank
int g_n = 1;

using Buffer = std::unique_ptr<uint8_t[]>;

Buffer Alloc(size_t n) {
  Buffer b(new (std::nothrow) uint8_t[n]);
  if (!b) {
    std::fprintf(stderr, "[rank %d] cannot allocate %zu bytes\n", g_rank, n);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  return b;
}

// Value of element i of rank r's data for pattern `seed`; below 256/nranks so
// that a Sum over all ranks still fits a byte.
uint8_t Pattern(int seed, int r, size_t i) {
  return uint8_t((i % 251 + size_t(seed) * 7 + size_t(r) * 3) % (256 / g_n));
}

// Fills p[0..n) with Pattern(seed, r, 0..n) by copying one period at a time:
// a division per byte would cost tens of seconds over 2 GiB.
void Fill(uint8_t *p, size_t n, int seed, int r) {
  uint8_t period[251];
  for (size_t j = 0; j < sizeof period; ++j) period[j] = Pattern(seed, r, j);
  for (size_t i = 0; i < n; i += sizeof period)
    std::memcpy(p + i, period, std::min(sizeof period, n - i));
}

template <class F>
void CheckSampled(const char *what, const uint8_t *p, size_t n, F want) {
  long bad = 0;
  auto check = [&](size_t i) {
    uint8_t w = want(i);
    if (p[i] == w) return;
    if (bad++ < 3)
      Fail(__FILE__, __LINE__, "element mismatch", "%s index=%zu expected=%u got=%u", what, i,
           unsigned(w), unsigned(p[i]));
    else
      ++g_failures;
  };
  auto range = [&](size_t from, size_t to) {
    for (size_t i = from; i < std::min(to, n); ++i) check(i);
  };
  range(0, 4096);
  range(n > 4096 ? n - 4096 : 0, n);
  range(size_t(INT_MAX) - 4096, size_t(INT_MAX) + 4096);
  for (size_t i = 0; i < n; i += 4099) check(i);
}

double Now() { return MPI_Wtime(); }
double g_call_s = 0;  // time inside the library call(s) of the current case

// Runs one library call and adds its duration to g_call_s: filling and
// checking 2 GiB take time too, and the report separates the two.
template <class F>
infinicclResult_t Timed(F call) {
  double t = Now();
  infinicclResult_t rc = call();
  g_call_s += Now() - t;
  return rc;
}

void Report(const char *what, double t0) {
  if (g_rank == 0)
    std::printf("[rank 0] %-46s %6.1f s (call %.1f s)\n", what, Now() - t0, g_call_s);
  std::fflush(stdout);
  g_call_s = 0;
}

void AllReduceInPlace(infinicclComm_t comm) {
  double t0 = Now();
  Buffer b = Alloc(kBig);
  Fill(b.get(), kBig, 1, g_rank);
  CHECK_RC(Timed([&] {
             return infinicclAllReduce(b.get(), b.get(), kBig, infinicclUInt8, infinicclSum, comm,
                                       nullptr);
           }),
           infinicclSuccess);
  CheckSampled("AllReduce in place UInt8 Sum", b.get(), kBig, [](size_t i) {
    unsigned s = 0;
    for (int r = 0; r < g_n; ++r) s += Pattern(1, r, i);
    return uint8_t(s);
  });
  Report("AllReduce in place, INT_MAX+1000 UInt8", t0);
}

void BroadcastOutOfPlace(infinicclComm_t comm) {
  double t0 = Now();
  const int root = g_n - 1;  // a non-zero root where there is one
  Buffer send = Alloc(kBig), recv = Alloc(kBig);
  if (g_rank == root) Fill(send.get(), kBig, 2, root);  // not significant elsewhere
  std::memset(recv.get(), 0xff, kBig);  // 0xff is never a pattern value
  CHECK_RC(Timed([&] {
             return infinicclBroadcast(send.get(), recv.get(), kBig, infinicclInt8, root, comm,
                                       nullptr);
           }),
           infinicclSuccess);
  CheckSampled("Broadcast Int8 recv", recv.get(), kBig, [&](size_t i) { return Pattern(2, root, i); });
  Report("Broadcast out of place, INT_MAX+1000 Int8", t0);
}

void AllGatherInPlace(infinicclComm_t comm) {
  double t0 = Now();
  const size_t total = g_n * kHalf;  // > INT_MAX at 2 ranks
  Buffer b = Alloc(total);
  std::memset(b.get(), 0xff, total);
  Fill(b.get() + g_rank * kHalf, kHalf, 3, g_rank);
  CHECK_RC(Timed([&] {
             return infinicclAllGather(b.get() + g_rank * kHalf, b.get(), kHalf, infinicclUInt8,
                                       comm, nullptr);
           }),
           infinicclSuccess);
  CheckSampled("AllGather in place UInt8", b.get(), total,
               [](size_t i) { return Pattern(3, int(i / kHalf), i % kHalf); });
  Report("AllGather in place, INT_MAX/2+1000 UInt8/rank", t0);
}

// Root 1 (so the column at the root does not start at byte 0 of the
// communicator's order) scatters INT_MAX/2+1000 bytes to each rank: its
// buffer is above INT_MAX, and above the host piece threshold the call runs
// as columns whose datatype spans a whole block.
void ScatterOutOfPlace(infinicclComm_t comm) {
  double t0 = Now();
  const int root = g_n - 1;
  const size_t total = g_n * kHalf;
  Buffer send = g_rank == root ? Alloc(total) : nullptr;
  if (send) {
    for (int r = 0; r < g_n; ++r) Fill(send.get() + r * kHalf, kHalf, 5, r);
  }
  Buffer recv = Alloc(kHalf);
  std::memset(recv.get(), 0xff, kHalf);
  CHECK_RC(Timed([&] {
             return infinicclScatter(send.get(), recv.get(), kHalf, infinicclUInt8, root, comm,
                                     nullptr);
           }),
           infinicclSuccess);
  CheckSampled("Scatter UInt8", recv.get(), kHalf, [](size_t i) { return Pattern(5, g_rank, i); });
  Report("Scatter out of place, INT_MAX/2+1000 UInt8/rank", t0);
}

// Each rank sends INT_MAX/2+1000 bytes to root 0: the root's recvbuff is
// above INT_MAX (MPICH 4.0.2's MPI_Scatter crashes at that size, pmodels/
// mpich#6332; Gather is its mirror).
void GatherOutOfPlace(infinicclComm_t comm) {
  double t0 = Now();
  const int root = 0;
  const size_t total = g_n * kHalf;
  Buffer send = Alloc(kHalf);
  Fill(send.get(), kHalf, 6, g_rank);
  Buffer recv = g_rank == root ? Alloc(total) : nullptr;
  if (recv) std::memset(recv.get(), 0xff, total);
  CHECK_RC(Timed([&] {
             return infinicclGather(send.get(), recv.get(), kHalf, infinicclUInt8, root, comm,
                                    nullptr);
           }),
           infinicclSuccess);
  if (recv) {
    CheckSampled("Gather UInt8", recv.get(), total,
                 [](size_t i) { return Pattern(6, int(i / kHalf), i % kHalf); });
  }
  Report("Gather out of place, INT_MAX/2+1000 UInt8/rank", t0);
}

// Rank 0 sends to rank 1; the other ranks sit this one out.
void SendRecv(infinicclComm_t comm) {
  double t0 = Now();
  if (g_rank == 0) {
    Buffer b = Alloc(kBig);
    Fill(b.get(), kBig, 4, 0);
    CHECK_RC(Timed([&] { return infinicclSend(b.get(), kBig, infinicclUInt8, 1, comm, nullptr); }),
             infinicclSuccess);
  } else if (g_rank == 1) {
    Buffer b = Alloc(kBig);
    std::memset(b.get(), 0xff, kBig);
    CHECK_RC(Timed([&] { return infinicclRecv(b.get(), kBig, infinicclUInt8, 0, comm, nullptr); }),
             infinicclSuccess);
    CheckSampled("Recv UInt8", b.get(), kBig, [](size_t i) { return Pattern(4, 0, i); });
  }
  Report("Send/Recv, INT_MAX+1000 UInt8", t0);
}

}  // namespace

int main(int argc, char **argv) {
  if (infinicclInit(&argc, &argv) != infinicclSuccess) return 2;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_n);
  infinicclComm_t comm = nullptr;
  CHECK_RC(infinicclCommInitAll(&comm, 0, nullptr), infinicclSuccess);
  if (comm == nullptr) MPI_Abort(MPI_COMM_WORLD, 2);

  // One case at a time, buffers freed in between, to bound peak memory.
  AllReduceInPlace(comm);
  MPI_Barrier(MPI_COMM_WORLD);
  BroadcastOutOfPlace(comm);
  MPI_Barrier(MPI_COMM_WORLD);
  AllGatherInPlace(comm);
  MPI_Barrier(MPI_COMM_WORLD);
  ScatterOutOfPlace(comm);
  MPI_Barrier(MPI_COMM_WORLD);
  GatherOutOfPlace(comm);
  MPI_Barrier(MPI_COMM_WORLD);
  if (g_n >= 2) SendRecv(comm);
  MPI_Barrier(MPI_COMM_WORLD);

  CHECK_RC(infinicclCommDestroy(comm), infinicclSuccess);
  const long total = TotalFailures();
  std::printf("[rank %d/%d] test_large_count: %ld failures\n", g_rank, g_n, g_failures);
  CHECK_RC(infinicclFinalize(), infinicclSuccess);
  return g_failures == 0 && total == 0 ? 0 : 1;
}
