// What rank 0 prints and writes: the header, one row per (mode, size) as
// soon as it is final (the mode's name in the last column, so nccl-tests'
// column positions hold), the summary and nccl-tests' footers, and the same
// rows with the run's metadata as JSON or CSV.
#ifndef INFINICCL_BENCH_OUTPUT_H_
#define INFINICCL_BENCH_OUTPUT_H_

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "run.h"
#include "runner.h"

namespace bench {

void PrintVersion(std::FILE *out);
void PrintHeader(std::FILE *out, const Env &env, const std::vector<const Mode *> &modes);
// One row, flushed; the first unavailable row of a mode also says why.
void PrintRow(std::FILE *out, const Env &env, const Result &row);
// Staging lines, comparisons, averages and nccl-tests' footers.
void PrintSummary(std::FILE *out, const Env &env, const std::vector<Result> &rows);
void PrintModeList(std::FILE *out);

// The --json and --csv files, opened (created or truncated) before anything
// is measured, so a path that cannot be written costs no run.
class OutputFiles {
 public:
  // False (and *error set) when a file cannot be opened for writing.
  bool Open(const Options &opt, std::string *error);
  // False (and *error set) when writing fails.
  bool Write(const Env &env, const std::vector<Result> &rows, std::string *error);

 private:
  std::string json_path_, csv_path_;
  std::ofstream json_, csv_;
};

}  // namespace bench

#endif  // INFINICCL_BENCH_OUTPUT_H_
