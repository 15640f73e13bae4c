#include "runner.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "errors.h"

namespace bench {
namespace {

infinicclStagingStats StagingStats() {
  infinicclStagingStats s{};
  CheckIccl(infinicclGetStagingStats(&s), "infinicclGetStagingStats", nullptr);
  return s;
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

// Seconds per call on the slowest rank.
double TimeMode(const Env &env, ModeRun &run, Result *res) {
  const Options &o = *env.opt;
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

}  // namespace

std::vector<Result> RunBenchmark(const Env &env, const std::vector<const Mode *> &modes) {
  const Options &o = *env.opt;
  const size_t nsizes = o.elements.size();
  std::vector<Result> results(modes.size() * nsizes);
  const bool progress = env.rank == 0 && isatty(STDERR_FILENO);
  const size_t steps = nsizes * static_cast<size_t>(o.repeat) * modes.size();
  size_t step = 0;
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
        if (progress)
          std::fprintf(stderr, "\r\033[K[%zu/%zu] %s, %zu elements, repeat %d", ++step,
                       steps, modes[m]->name.c_str(), elements, rep + 1);
        if (!res.unavailable.empty()) continue;
        run.Prepare();
        res.time_us = std::min(res.time_us, TimeMode(env, run, &res) * 1e6);
        if (o.validate && rep == 0) {
          res.wrong = ValidateMode(env, run);
          res.validated = true;
        }
      }
    }
  }
  if (progress) std::fprintf(stderr, "\r\033[K");
  return results;
}

}  // namespace bench
