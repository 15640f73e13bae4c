// The measurement: `repeat` rounds of every size, and within a size every
// mode in turn on the same buffers (so host_C and infiniccl_C run side by
// side); each (mode, size) is barrier, warm-up, barrier, `iters` timed calls.
#ifndef INFINICCL_BENCH_RUNNER_H_
#define INFINICCL_BENCH_RUNNER_H_

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "collective.h"
#include "modes.h"
#include "run.h"

namespace bench {

struct Result {
  const Mode *mode = nullptr;
  size_t elements = 0;  // as requested
  Layout layout;        // count and size columns agree on all ranks
  std::string unavailable;
  // Slowest rank's mean per call, minimum over repeats.
  double time_us = std::numeric_limits<double>::infinity();
  bool validated = false;
  uint64_t wrong = 0;  // summed over ranks
  // infiniccl_ modes: the library's host staging during the timed iterations
  // (infinicclGetStagingStats after minus before), the largest over ranks and
  // over repeats. Held bytes are those after the timed iterations; the peak
  // is since infinicclInit; pinned means every rank's held buffers are.
  bool staging_measured = false;
  uint64_t staging_allocs = 0, staged_calls = 0, pipelined_calls = 0;
  uint64_t staging_held_bytes = 0, staging_peak_bytes = 0;
  bool staging_pinned = false;
  // return_allreduce: the slowest rank's mean, median and largest host time
  // of the call alone (until it returns), each the minimum over repeats;
  // time_us is call + synchronize (mean), sync_median_us its median and
  // sync_p90_us its 90th percentile (each the slowest rank's).
  // return_switched: how many calls the scheduler switched the calling
  // thread out of (the most on any rank; INT_MAX: not counted here), and
  // return_unswitched_us the slowest rank's mean over the others (infinity:
  // none), each the minimum over repeats.
  double return_us = std::numeric_limits<double>::infinity();
  double return_unswitched_us = std::numeric_limits<double>::infinity();
  int return_switched = std::numeric_limits<int>::max();
  double return_median_us = std::numeric_limits<double>::infinity();
  double return_max_us = std::numeric_limits<double>::infinity();
  double sync_median_us = std::numeric_limits<double>::infinity();
  double sync_p90_us = std::numeric_limits<double>::infinity();
  // overlap: one loop of each part, the median over loops of the slowest
  // rank's time, minimum over repeats (time_us is both_us).
  double compute_us = std::numeric_limits<double>::infinity();
  double comm_us = std::numeric_limits<double>::infinity();
  double both_us = std::numeric_limits<double>::infinity();
};

// (compute + comm - both) / min(compute, comm) of an overlap row.
double OverlapEfficiency(const Result &r);

// Called on rank 0 for each (mode, size) as soon as its row is final (in
// the last repeat), in the order measured.
using RowCallback = std::function<void(const Result &)>;

// Results in mode-major order: all sizes of modes[0], then of modes[1], ...;
// the overlap mode (one row, not one per size) runs after the sizes, in
// each repeat, and its row comes last.
// Rank 0 writes progress with an ETA to stderr once the run has taken a few
// seconds (unless --quiet): a line every few seconds, in place on a TTY.
std::vector<Result> RunBenchmark(const Env &env, const std::vector<const Mode *> &modes,
                                 const RowCallback &on_row);

}  // namespace bench

#endif  // INFINICCL_BENCH_RUNNER_H_
