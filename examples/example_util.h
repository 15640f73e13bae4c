// Boilerplate shared by the examples: start-up, error checks, timing and the
// one-line report. Each example_<collective>.cpp keeps only what is specific
// to its collective, so it reads as a recipe for that call.
#ifndef INFINICCL_EXAMPLES_EXAMPLE_UTIL_H_
#define INFINICCL_EXAMPLES_EXAMPLE_UTIL_H_

#include <infiniccl/infiniccl.h>
// Only MPI_Abort is used (to end every rank when one fails); the MPI C++
// bindings are not wanted and do not compile warning-free.
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace example {

// Counts every example runs: a large buffer and a small odd-sized one.
inline constexpr size_t kLargeCount = size_t{1} << 20;
inline constexpr size_t kSmallCount = 7;
inline constexpr int kWarmup = 2;
inline constexpr int kIters = 5;

struct Context {
  infinicclComm_t comm = nullptr;
  int rank = 0;
  int nranks = 1;
};

// Prints the failed call, the result's name and the library's last message,
// then ends the whole job: peers may already be waiting in a collective.
[[noreturn]] inline void Fail(const char *call, infinicclResult_t r, infinicclComm_t comm,
                              const char *file, int line) {
  std::fprintf(stderr, "%s:%d: %s failed: %s (%d): %s\n", file, line, call,
               infinicclGetErrorString(r), static_cast<int>(r),
               infinicclGetLastError(comm));
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) MPI_Abort(MPI_COMM_WORLD, 1);
  std::exit(1);
}

}  // namespace example

// Checks an API call made while `ctx` (an example::Context) is in scope.
#define EXAMPLE_CHECK(ctx, call)                                          \
  do {                                                                    \
    infinicclResult_t example_r_ = (call);                                \
    if (example_r_ != infinicclSuccess)                                   \
      ::example::Fail(#call, example_r_, (ctx).comm, __FILE__, __LINE__); \
  } while (0)

namespace example {

inline Context Start(int *argc, char ***argv) {
  Context ctx;
  EXAMPLE_CHECK(ctx, infinicclInit(argc, argv));
  EXAMPLE_CHECK(ctx, infinicclCommInitAll(&ctx.comm, 0, nullptr));
  EXAMPLE_CHECK(ctx, infinicclCommUserRank(ctx.comm, &ctx.rank));
  EXAMPLE_CHECK(ctx, infinicclCommCount(ctx.comm, &ctx.nranks));
  return ctx;
}

// Destroys the communicator, finalizes, and gives main's exit status.
inline int Finish(Context &ctx, bool all_correct) {
  EXAMPLE_CHECK(ctx, infinicclCommDestroy(ctx.comm));
  ctx.comm = nullptr;
  EXAMPLE_CHECK(ctx, infinicclFinalize());
  return all_correct ? 0 : 1;
}

// Exact small integers, so every sum/max of a few ranks is exact in float.
inline float Value(int rank, size_t i) {
  return static_cast<float>((static_cast<size_t>(rank) + i) % 7 + 1);
}

// True on every rank when `ok` is true on every rank (the library's own Min).
inline bool AllRanks(Context &ctx, bool ok) {
  int mine = ok ? 1 : 0, all = 0;
  EXAMPLE_CHECK(ctx, infinicclAllReduce(&mine, &all, 1, infinicclInt32, infinicclMin,
                                        ctx.comm, nullptr));
  return all == 1;
}

// Seconds per call of `op` on the slowest rank: warm-up, then the mean of
// kIters calls, then the library's own AllReduce Max over ranks.
template <typename Op>
double TimePerCall(Context &ctx, Op op) {
  for (int i = 0; i < kWarmup; ++i) op();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kIters; ++i) op();
  const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0;
  double mine = dt.count() / kIters, slowest = 0.0;
  EXAMPLE_CHECK(ctx, infinicclAllReduce(&mine, &slowest, 1, infinicclFloat64,
                                        infinicclMax, ctx.comm, nullptr));
  return slowest;
}

// Counts elements of `actual` that differ from `expected` (exact compare:
// the values are small integers).
inline size_t CountWrong(const float *actual, const std::vector<float> &expected) {
  size_t wrong = 0;
  for (size_t i = 0; i < expected.size(); ++i)
    if (actual[i] != expected[i]) ++wrong;
  return wrong;
}

// Rank 0 prints the verdict (over all ranks), three samples of its own
// result, the time per call and the bus bandwidth (nccl-tests' factors:
// `bytes` is the size nccl-tests reports, `bus_factor` its busbw factor).
inline void Report(const Context &ctx, const char *name, size_t count, bool all_correct,
                   const float *actual, const std::vector<float> &expected,
                   double seconds, double bytes, double bus_factor) {
  if (ctx.rank != 0) return;
  std::printf("%s: %d ranks, count %zu\n", name, ctx.nranks, count);
  std::printf("  Correct: %s\n", all_correct ? "YES" : "NO");
  const size_t n = expected.size();
  if (n > 0) {
    const size_t samples[3] = {0, n / 2, n - 1};
    for (size_t s : samples)
      std::printf("  element %zu (rank 0): expected %g, actual %g\n", s,
                  static_cast<double>(expected[s]), static_cast<double>(actual[s]));
  }
  const double algbw = seconds > 0 ? bytes / seconds / 1e9 : 0.0;
  std::printf("  time per call: %.2f us (slowest rank, mean of %d)\n", seconds * 1e6,
              kIters);
  std::printf("  bus bandwidth: %.3f GB/s (algbw %.3f GB/s x %.3f)\n", algbw * bus_factor,
              algbw, bus_factor);
}

// Values(rank, n)[i] = Value(rank, first + i): a rank's contribution.
inline std::vector<float> Values(int rank, size_t n, size_t first = 0) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = Value(rank, first + i);
  return v;
}

// Every rank's Values(r, count), rank r's at r * count (what AllGather and
// Gather deliver, what Scatter's root sends).
inline std::vector<float> Blocks(int nranks, size_t count) {
  std::vector<float> v;
  for (int r = 0; r < nranks; ++r) {
    const std::vector<float> block = Values(r, count);
    v.insert(v.end(), block.begin(), block.end());
  }
  return v;
}

// Runs `call` once and checks `actual` against `expected` on every rank (a
// rank where `checked` is false passes: a rooted call writes only the root's
// buffer), then times `call`; rank 0 reports. `bytes` and `bus_factor` are
// nccl-tests' size and busbw factor for the collective.
template <typename Call>
bool Check(Context &ctx, const char *name, size_t count, Call call,
           const std::vector<float> &actual, const std::vector<float> &expected,
           size_t bytes, double bus_factor, bool checked = true) {
  call();
  const bool ok = AllRanks(ctx, !checked || CountWrong(actual.data(), expected) == 0);
  const double seconds = TimePerCall(ctx, call);
  Report(ctx, name, count, ok, actual.data(), expected, seconds,
         static_cast<double>(bytes), bus_factor);
  return ok;
}

// A ring of point-to-point messages (sendrecv, group_ring): each rank sends
// `send` to `next` and receives `prev`'s values into `recv`.
struct Ring {
  int next = 0;
  int prev = 0;
  std::vector<float> send, recv, expected;
};

inline Ring MakeRing(const Context &ctx, size_t count) {
  Ring ring;
  ring.next = (ctx.rank + 1) % ctx.nranks;  // with 1 rank: itself
  ring.prev = (ctx.rank + ctx.nranks - 1) % ctx.nranks;
  ring.send = Values(ctx.rank, count);
  ring.recv.assign(count, -1.0f);
  ring.expected = Values(ring.prev, count);
  return ring;
}

// One trip around the ring, `exchange`, checked and timed (nccl-tests'
// send/recv: busbw = algbw).
template <typename Exchange>
bool CheckRing(Context &ctx, const char *name, Ring &ring, Exchange exchange) {
  const size_t count = ring.expected.size();
  return Check(ctx, name, count, exchange, ring.recv, ring.expected, count * sizeof(float),
               1.0);
}

// nccl-tests busbw factors.
inline double AllReduceFactor(int n) {
  return 2.0 * (n - 1) / n;
}
inline double PartsFactor(int n) {
  return static_cast<double>(n - 1) / n;
}

// main() of every example: run the large and the small count, then finish.
inline int Main(int *argc, char ***argv, bool (*run)(Context &, size_t)) {
  Context ctx = Start(argc, argv);
  bool ok = run(ctx, kLargeCount);
  ok = run(ctx, kSmallCount) && ok;
  return Finish(ctx, ok);
}

}  // namespace example

#endif  // INFINICCL_EXAMPLES_EXAMPLE_UTIL_H_
