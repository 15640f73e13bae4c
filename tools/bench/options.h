// Command line of infiniccl-bench: our long options plus nccl-tests' short
// and long spellings wherever they mean something here (parsed with
// getopt_long, so "-b8", "-b 8", "--minbytes=8" all work).
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
  bool validate = true;  // nccl-tests' -c 1 is its default too
  bool quiet = false;    // no progress lines on stderr
  // The overlap mode (a DDP-like loop): buckets AllReduced on a second
  // stream, each after an emulated kernel of kernel_us on the first.
  int buckets = 8;
  size_t bucket_bytes = size_t{4} << 20;
  int kernel_us = 4000;
  std::string json_path;
  std::string csv_path;
  // nccl-tests options accepted with the one value that means something
  // here ("-t 1 ignored: ..."), printed in the header.
  std::vector<std::string> notes;
  std::string command_line;  // argv, shell-quoted, for the JSON metadata
};

enum class ParseResult { kRun, kHelp, kListModes, kVersion, kError };

// Fills *opt; on kError *error says what was wrong. Ranks are not known
// here: --root is checked against the communicator size by the caller.
ParseResult ParseOptions(int argc, char **argv, Options *opt, std::string *error);
std::string Usage(const char *argv0);

// "64", "4K", "1M", "2G", "8B" (K = 1024, as nccl-tests): the library's
// own parser (infiniccl::ParseBytes), so the two never disagree.
bool ParseSize(const std::string &text, size_t *value);

}  // namespace bench

#endif  // INFINICCL_BENCH_OPTIONS_H_
