#include "options.h"

#include <charconv>
#include <climits>
#include <cstdint>

#include "device.h"

namespace bench {
namespace {

// Default sweep: nccl-tests style bytes, 1K to 16M by 4.
constexpr size_t kDefaultMinBytes = size_t{1} << 10;
constexpr size_t kDefaultMaxBytes = size_t{16} << 20;
constexpr size_t kDefaultFactor = 4;
constexpr const char *kDefaultModes[] = {"host_allreduce", "infiniccl_allreduce"};

std::vector<std::string> SplitCommas(const std::string &s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t comma = s.find(',', start);
    const size_t end = comma == std::string::npos ? s.size() : comma;
    if (end > start) out.push_back(s.substr(start, end - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

bool ParseInt(const std::string &text, int min, int *value) {
  int v = 0;
  const char *end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || ptr != end || v < min) return false;
  *value = v;
  return true;
}

}  // namespace

bool ParseSize(const std::string &text, size_t *value) {
  if (text.empty()) return false;
  std::string digits = text;
  size_t scale = 1;
  switch (digits.back()) {
    case 'k':
    case 'K': scale = size_t{1} << 10; break;
    case 'm':
    case 'M': scale = size_t{1} << 20; break;
    case 'g':
    case 'G': scale = size_t{1} << 30; break;
    default: break;
  }
  if (scale != 1) digits.pop_back();
  uint64_t v = 0;
  const char *end = digits.data() + digits.size();
  auto [ptr, ec] = std::from_chars(digits.data(), end, v);
  if (digits.empty() || ec != std::errc() || ptr != end) return false;
  if (v > SIZE_MAX / scale) return false;
  *value = static_cast<size_t>(v) * scale;
  return true;
}

std::string Usage(const char *argv0) {
  std::string u = "Usage: mpirun -np N ";
  u += argv0;
  u += R"( [options]

Measures InfiniCCL collectives next to the raw MPI calls they stand for.

  --modes LIST        comma-separated modes (default host_allreduce,infiniccl_allreduce);
                      'all' = every mode; --list-modes prints them
  --elements LIST     comma-separated element counts (K/M/G suffixes allowed)
  -b, --minbytes B    sweep start in bytes (K/M/G suffixes, default 1K)
  -e, --maxbytes B    sweep end in bytes (default 16M)
  -f, --stepfactor F  sweep multiplication factor (integer >= 2, default 4)
                      (elements = bytes / dtype size; use --elements or a sweep)
  -d, --dtype T       element type (default float32): int8 int16 int32 int64
                      uint8 uint16 uint32 uint64 float16 bfloat16 float32
                      float64; aliases char int half float double fp16 bf16
  -o, --op OP         sum|prod|max|min|avg (default sum)
  -r, --root N        root rank of broadcast/reduce/gather/scatter (default 0)
  --inplace           in-place calls, in NCCL's buffer layout
  --device D          where infiniccl_* and stage_* buffers live: )";
  u += DeviceNames();
  u += R"(
                      (default: the first vendor device present, else cpu;
                      sim is the EMULATED device, used only when asked for:
                      --device sim or INFINICCL_DEVICE=sim)
  -w, --warmup N      warm-up iterations per (mode, size) (default 5)
  -n, --iters N       timed iterations per (mode, size) (default 20)
  --repeat R          run the whole mode list R times interleaved and report
                      the minimum over repeats of the mean time (default 1)
  -c, --validate      check every element exactly once after timing
  --json FILE         also write the rows as a JSON array
  --csv FILE          also write the rows as CSV
  --list-modes        the modes and what each measures
  -h, --help          this text

Modes, for C in allreduce allgather alltoall broadcast reduce reduce_scatter
gather scatter sendrecv:
  host_C          the raw MPI call on host buffers
  infiniccl_C     the InfiniCCL call on --device buffers
  stage_alloc_C   --device buffers copied through host buffers malloc'd per
                  call around the raw MPI call (stage_alloc = allreduce)
  stage_reuse_C   the same with host buffers allocated once (stage_reuse)
and copy_d2h copy_h2d copy_roundtrip; ReduceScatter built from MPI on host
buffers: rs_block rs_counts rs_allreduce rs_reduce_scatter rs_ring.
On a device other than cpu, stage_* copy with MemcpyAsync + StreamSynchronize
and stage_reuse_* host buffers are pinned when the device offers MallocHost.

Sizes follow nccl-tests: the count is the total over ranks, so AllGather,
ReduceScatter, AllToAll, Gather and Scatter move count/nranks per rank.

Exit status: 0 success, 1 wrong results, 2 bad options, 3 a call failed
(or an output file could not be written).
)";
  return u;
}

ParseResult ParseOptions(int argc, char **argv, Options *opt, std::string *error) {
  std::string dtype = "float32", op = "sum";
  std::string elements, minb, maxb, factor;
  bool modes_given = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i], value;
    bool has_inline_value = false;
    if (arg.rfind("--", 0) == 0) {
      const size_t eq = arg.find('=');
      if (eq != std::string::npos) {
        value = arg.substr(eq + 1);
        arg = arg.substr(0, eq);
        has_inline_value = true;
      }
    }
    auto next = [&](std::string *out) {
      if (has_inline_value) {
        *out = value;
        return true;
      }
      if (i + 1 >= argc) {
        *error = "option " + arg + " needs a value";
        return false;
      }
      *out = argv[++i];
      return true;
    };
    auto flag = [&]() {
      if (!has_inline_value) return true;
      *error = "option " + arg + " takes no value";
      return false;
    };
    auto int_option = [&](int min, int *target) {
      std::string v;
      if (!next(&v)) return false;
      if (ParseInt(v, min, target)) return true;
      *error =
          "option " + arg + ": '" + v + "' is not an integer >= " + std::to_string(min);
      return false;
    };
    bool ok = true;
    if (arg == "-h" || arg == "--help") {
      return ParseResult::kHelp;
    } else if (arg == "--list-modes") {
      return ParseResult::kListModes;
    } else if (arg == "--modes" || arg == "-m") {
      std::string v;
      ok = next(&v);
      if (ok) {
        for (std::string &m : SplitCommas(v)) opt->modes.push_back(m);
        modes_given = true;
      }
    } else if (arg == "--elements") {
      ok = next(&elements);
    } else if (arg == "-b" || arg == "--minbytes") {
      ok = next(&minb);
    } else if (arg == "-e" || arg == "--maxbytes") {
      ok = next(&maxb);
    } else if (arg == "-f" || arg == "--stepfactor") {
      ok = next(&factor);
    } else if (arg == "-d" || arg == "--dtype") {
      ok = next(&dtype);
    } else if (arg == "-o" || arg == "--op") {
      ok = next(&op);
    } else if (arg == "-r" || arg == "--root") {
      ok = int_option(0, &opt->root);
    } else if (arg == "--inplace") {
      ok = flag();
      opt->inplace = true;
    } else if (arg == "--device") {
      ok = next(&opt->device);
    } else if (arg == "-w" || arg == "--warmup") {
      ok = int_option(0, &opt->warmup);
    } else if (arg == "-n" || arg == "--iters") {
      ok = int_option(1, &opt->iters);
    } else if (arg == "--repeat") {
      ok = int_option(1, &opt->repeat);
    } else if (arg == "-c" || arg == "--validate") {
      ok = flag();
      opt->validate = true;
    } else if (arg == "--json") {
      ok = next(&opt->json_path);
    } else if (arg == "--csv") {
      ok = next(&opt->csv_path);
    } else {
      *error = "unknown option '" + arg + "'";
      ok = false;
    }
    if (!ok) return ParseResult::kError;
  }

  opt->dtype = FindDType(dtype);
  if (!opt->dtype) {
    *error = "unknown dtype '" + dtype + "'; one of " + DTypeNames();
    return ParseResult::kError;
  }
  opt->op = FindRedOp(op);
  if (!opt->op) {
    *error = "unknown op '" + op + "'; one of sum prod max min avg";
    return ParseResult::kError;
  }
  if (!modes_given)
    for (const char *m : kDefaultModes) opt->modes.push_back(m);
  if (opt->modes.empty()) {
    *error = "--modes needs at least one mode";
    return ParseResult::kError;
  }

  const bool sweep = !minb.empty() || !maxb.empty() || !factor.empty();
  if (!elements.empty() && sweep) {
    *error = "use either --elements or -b/-e/-f, not both";
    return ParseResult::kError;
  }
  if (!elements.empty()) {
    for (const std::string &e : SplitCommas(elements)) {
      size_t n = 0;
      if (!ParseSize(e, &n)) {
        *error = "--elements: '" + e + "' is not a count";
        return ParseResult::kError;
      }
      opt->elements.push_back(n);
    }
    if (opt->elements.empty()) {
      *error = "--elements needs at least one count";
      return ParseResult::kError;
    }
    return ParseResult::kRun;
  }
  size_t lo = kDefaultMinBytes, hi = kDefaultMaxBytes, f = kDefaultFactor;
  if ((!minb.empty() && !ParseSize(minb, &lo)) ||
      (!maxb.empty() && !ParseSize(maxb, &hi))) {
    *error = "-b/-e: not a byte size (e.g. 8, 64K, 16M, 1G)";
    return ParseResult::kError;
  }
  if (!factor.empty() && (!ParseSize(factor, &f) || f < 2)) {
    *error = "-f: the step factor must be an integer >= 2";
    return ParseResult::kError;
  }
  if (lo > hi) {
    *error = "-b must not exceed -e";
    return ParseResult::kError;
  }
  for (size_t b = lo;; b *= f) {
    opt->elements.push_back(b / opt->dtype->size);
    if (b > hi / f) break;  // the next step would pass -e (or overflow)
    if (b == 0) break;
  }
  return ParseResult::kRun;
}

}  // namespace bench
