#include "runner.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "errors.h"
#include "overlap.h"

namespace bench {
namespace {

infinicclStagingStats StagingStats() {
  infinicclStagingStats s{};
  CheckIccl(infinicclGetStagingStats(&s), "infinicclGetStagingStats", nullptr);
  return s;
}

// The calling thread's involuntary context switches so far (the scheduler
// gave its core to another thread while it could run), or -1 where the
// system does not count them per thread.
long InvoluntarySwitches() {
#ifdef RUSAGE_THREAD
  rusage usage{};
  if (getrusage(RUSAGE_THREAD, &usage) == 0) return usage.ru_nivcsw;
#endif
  return -1;
}

// Folds this rank's staging counters of the timed iterations into *res.
void RecordStaging(const Env &env, const infinicclStagingStats &before,
                   const infinicclStagingStats &after, Result *res) {
  uint64_t mine[6] = {after.allocations - before.allocations,
                      after.staged_calls - before.staged_calls,
                      after.pipelined_calls - before.pipelined_calls, after.bytes_held,
                      after.peak_bytes_held,
                      // 1 when this rank holds unpinned buffers
                      after.bytes_held == 0 || after.pinned ? 0u : 1u};
  uint64_t most[6] = {};
  CheckMpi(MPI_Allreduce(mine, most, 6, MPI_UINT64_T, MPI_MAX, env.mpi_comm),
           "MPI_Allreduce (staging stats)");
  res->staging_measured = true;
  res->staging_allocs = std::max(res->staging_allocs, most[0]);
  res->staged_calls = std::max(res->staged_calls, most[1]);
  res->pipelined_calls = std::max(res->pipelined_calls, most[2]);
  res->staging_held_bytes = std::max(res->staging_held_bytes, most[3]);
  res->staging_peak_bytes = std::max(res->staging_peak_bytes, most[4]);
  res->staging_pinned = most[3] > 0 && most[5] == 0;  // something held, all pinned
}

// return_allreduce: each call alone, after a barrier: the host time until
// it returns and until the stream is synchronised after it. Returns the
// latter (seconds, slowest rank's mean), whose median goes to
// res->sync_median_us; the former's mean, median and largest go to
// res->return_us, return_median_us and return_max_us (each the slowest
// rank's). On a machine with fewer cores than busy threads, a call the
// scheduler switched out now and then moves a mean far from the median,
// which is what the call itself costs: one 1 ms switch in 40 calls adds
// 25 us to the mean of a 100 us call + synchronize. So each call also
// counts whether the calling thread was switched out while in it (Linux:
// its involuntary context switches grew): how many were, the most on any
// rank, go to res->return_switched, and the slowest rank's mean over the
// calls that were not to res->return_unswitched_us (what the call itself
// costs, apart from the scheduler's time given to other threads).
double TimeReturn(const Env &env, ModeRun &run, Result *res) {
  const Options &o = *env.opt;
  CheckMpi(MPI_Barrier(env.mpi_comm), "MPI_Barrier");
  for (int i = 0; i < o.warmup; ++i) {
    run.Iterate();
    run.Wait();
  }
  std::vector<double> calls, totals;
  calls.reserve(static_cast<size_t>(o.iters));
  totals.reserve(static_cast<size_t>(o.iters));
  double call = 0, total = 0, unswitched = 0;
  long switched = 0;
  const bool counted = InvoluntarySwitches() >= 0;
  for (int i = 0; i < o.iters; ++i) {
    CheckMpi(MPI_Barrier(env.mpi_comm), "MPI_Barrier");
    const long before = InvoluntarySwitches();
    const double t0 = MPI_Wtime();
    run.Iterate();
    const double t1 = MPI_Wtime();
    if (InvoluntarySwitches() != before) {
      ++switched;
    } else {
      unswitched += t1 - t0;
    }
    run.Wait();
    const double t2 = MPI_Wtime();
    calls.push_back(t1 - t0);
    totals.push_back(t2 - t0);
    call += t1 - t0;
    total += t2 - t0;
  }
  const auto median = [](std::vector<double> &v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  };
  const double call_median = median(calls), total_median = median(totals);
  // The 90th percentile (nearest rank) of call + synchronize, `totals`
  // sorted by median() above.
  const double total_p90 =
      totals[(totals.size() * 9 + 9) / 10 - 1];
  // A rank whose every call was switched out has no unswitched mean: -1,
  // and none at all if that holds for every rank.
  const double clean =
      switched < o.iters ? unswitched / static_cast<double>(o.iters - switched) : -1.0;
  const double mine[8] = {call / o.iters,
                          total / o.iters,
                          call_median,
                          calls.back(),
                          total_median,
                          clean,
                          static_cast<double>(switched),
                          total_p90};
  double slowest[8] = {};
  CheckMpi(MPI_Allreduce(mine, slowest, 8, MPI_DOUBLE, MPI_MAX, env.mpi_comm),
           "MPI_Allreduce (timing)");
  res->return_us = std::min(res->return_us, slowest[0] * 1e6);
  res->return_median_us = std::min(res->return_median_us, slowest[2] * 1e6);
  res->return_max_us = std::min(res->return_max_us, slowest[3] * 1e6);
  res->sync_median_us = std::min(res->sync_median_us, slowest[4] * 1e6);
  res->sync_p90_us = std::min(res->sync_p90_us, slowest[7] * 1e6);
  if (slowest[5] >= 0) {
    res->return_unswitched_us = std::min(res->return_unswitched_us, slowest[5] * 1e6);
  }
  if (counted) {
    res->return_switched = std::min(res->return_switched, static_cast<int>(slowest[6]));
  }
  return slowest[1];
}

// Seconds per call on the slowest rank.
double TimeMode(const Env &env, ModeRun &run, Result *res) {
  const Options &o = *env.opt;
  if (res->mode->family == Family::kReturnTime) return TimeReturn(env, run, res);
  const bool staging = res->mode->family == Family::kInfiniccl;
  CheckMpi(MPI_Barrier(env.mpi_comm), "MPI_Barrier");
  for (int i = 0; i < o.warmup; ++i) run.Iterate();
  run.Wait();
  CheckMpi(MPI_Barrier(env.mpi_comm), "MPI_Barrier");
  const infinicclStagingStats before = staging ? StagingStats() : infinicclStagingStats{};
  const double t0 = MPI_Wtime();
  for (int i = 0; i < o.iters; ++i) run.Iterate();
  run.Wait();
  const double mine = (MPI_Wtime() - t0) / o.iters;
  double slowest = 0.0;
  CheckMpi(MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, env.mpi_comm),
           "MPI_Allreduce (timing)");
  if (staging) RecordStaging(env, before, StagingStats(), res);
  return slowest;
}

uint64_t ValidateMode(const Env &env, ModeRun &run) {
  const uint64_t mine = run.Validate();
  uint64_t total = 0;
  CheckMpi(MPI_Allreduce(&mine, &total, 1, MPI_UINT64_T, MPI_SUM, env.mpi_comm),
           "MPI_Allreduce (validation)");
  return total;
}

// Progress on stderr. Under mpirun stderr is never a TTY, so lines are
// printed there too, a few seconds apart; nothing at all for a run that
// ends within the first few seconds. The ETA weighs each remaining step by
// its bytes times its calls plus a fixed cost per step, so the large sizes
// at the end of a sweep are not estimated at the small ones' pace.
class Progress {
 public:
  Progress(bool enabled, double total_weight)
      : enabled_(enabled), tty_(isatty(STDERR_FILENO) == 1), total_(total_weight) {}
  ~Progress() {
    if (printed_ && tty_) std::fprintf(stderr, "\r\033[K");
  }
  void Done(double weight, size_t step, size_t steps, const std::string &what) {
    done_ += weight;
    if (!enabled_) return;
    const double now = Seconds();
    if (now < kQuietSeconds || now - last_ < (tty_ ? 0.2 : kLineSeconds)) return;
    last_ = now;
    printed_ = true;
    const double eta = done_ > 0 ? now * (total_ - done_) / done_ : 0;
    std::fprintf(stderr, "%s# progress: %zu/%zu (%s), %.0f s elapsed, ETA %.0f s%s",
                 tty_ ? "\r\033[K" : "", step, steps, what.c_str(), now, eta,
                 tty_ ? "" : "\n");
    std::fflush(stderr);
  }

 private:
  static constexpr double kQuietSeconds = 3;
  static constexpr double kLineSeconds = 5;
  double Seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_)
        .count();
  }
  const bool enabled_, tty_;
  const double total_;
  double done_ = 0, last_ = -kLineSeconds;  // the first line right at kQuietSeconds
  bool printed_ = false;
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

// The relative cost of one (mode, size) step, for the ETA.
double StepWeight(const Options &o, size_t elements) {
  constexpr double kFixedBytes = 64 * 1024;  // per call: latency, barriers
  return (static_cast<double>(elements * o.dtype->size) + kFixedBytes) *
         (o.warmup + o.iters + (o.validate ? 2 : 0));
}

}  // namespace

static std::vector<Result> RunSweep(const Env &env, const std::vector<const Mode *> &modes,
                                    const RowCallback &on_row);

std::vector<Result> RunBenchmark(const Env &env, const std::vector<const Mode *> &modes,
                                 const RowCallback &on_row) {
  const Options &o = *env.opt;
  // The overlap mode runs once per repeat, after the sizes, not per size.
  std::vector<const Mode *> loops, sweep;
  for (const Mode *m : modes) (m->family == Family::kOverlap ? loops : sweep).push_back(m);
  std::vector<Result> results = RunSweep(env, sweep, on_row);
  std::vector<Result> overlap(loops.size());
  for (int rep = 0; rep < o.repeat; ++rep) {
    for (size_t m = 0; m < loops.size(); ++m) {
      Result &res = overlap[m];
      res.mode = loops[m];
      res.elements = o.bucket_bytes / o.dtype->size;
      res.layout = MakeLayout(Collective::kAllReduce, res.elements, o.dtype->size,
                              env.nranks, env.rank, o.root, false);
      res.unavailable = OverlapUnavailable(env);
      if (res.unavailable.empty()) RunOverlap(env, o.validate && rep == 0, &res);
      if (env.rank == 0 && rep + 1 == o.repeat && on_row) on_row(res);
    }
  }
  results.insert(results.end(), overlap.begin(), overlap.end());
  return results;
}

static std::vector<Result> RunSweep(const Env &env, const std::vector<const Mode *> &modes,
                                    const RowCallback &on_row) {
  const Options &o = *env.opt;
  const size_t nsizes = modes.empty() ? 0 : o.elements.size();
  std::vector<Result> results(modes.size() * nsizes);
  const bool leader = env.rank == 0;
  const size_t steps = nsizes * static_cast<size_t>(o.repeat) * modes.size();
  size_t step = 0;
  double total_weight = 0;
  for (size_t e : o.elements) total_weight += StepWeight(o, e);
  Progress progress(leader && !o.quiet,
                    total_weight * static_cast<double>(o.repeat * modes.size()));
  // Repeats outermost: the samples of one (mode, size) are spread over the
  // whole run, so a burst of load from elsewhere spoils at most one of them;
  // within a size the modes run back to back on the same buffers.
  for (int rep = 0; rep < o.repeat; ++rep) {
    for (size_t s = 0; s < nsizes; ++s) {
      const size_t elements = o.elements[s];
      BufferSet buffers(env, elements * o.dtype->size);
      for (size_t m = 0; m < modes.size(); ++m) {
        Result &res = results[m * nsizes + s];
        ModeRun run(*modes[m], env, buffers, elements);
        res.mode = modes[m];
        res.elements = elements;
        res.layout = run.layout();
        res.unavailable = run.unavailable();
        if (res.unavailable.empty()) {
          run.Prepare();
          res.time_us = std::min(res.time_us, TimeMode(env, run, &res) * 1e6);
          if (o.validate && rep == 0) {
            res.wrong = ValidateMode(env, run);
            res.validated = true;
          }
        }
        if (leader && rep + 1 == o.repeat && on_row) on_row(res);
        progress.Done(StepWeight(o, elements), ++step, steps,
                      modes[m]->name + ", " + std::to_string(elements) + " elements" +
                          (o.repeat > 1 ? ", repeat " + std::to_string(rep + 1) : ""));
      }
    }
  }
  return results;
}

}  // namespace bench
