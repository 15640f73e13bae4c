// Command line of infiniccl-bench.
#ifndef INFINICCL_BENCH_OPTIONS_H_
#define INFINICCL_BENCH_OPTIONS_H_

#include <cstddef>
#include <string>
#include <vector>

#include "dtype.h"

namespace bench {

struct Options {
  std::string device;  // empty: the best device present (MakeDevice)
  std::vector<size_t> elements;  // the requested counts, in order
  std::vector<std::string> modes;
  const DType *dtype = nullptr;
  const RedOp *op = nullptr;
  int root = 0;
  bool inplace = false;
  int warmup = 5;
  int iters = 20;
  int repeat = 1;
  bool validate = false;
  std::string json_path;
  std::string csv_path;
};

enum class ParseResult { kRun, kHelp, kListModes, kError };

// Fills *opt; on kError *error says what was wrong. Ranks are not known
// here: --root is checked against the communicator size by the caller.
ParseResult ParseOptions(int argc, char **argv, Options *opt, std::string *error);
std::string Usage(const char *argv0);

// "64", "4K", "1M", "2G" (K = 1024, as nccl-tests). False when malformed.
bool ParseSize(const std::string &text, size_t *value);

}  // namespace bench

#endif  // INFINICCL_BENCH_OPTIONS_H_
