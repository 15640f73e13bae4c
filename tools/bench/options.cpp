#include "options.h"

#include <getopt.h>

#include <charconv>
#include <climits>
#include <cstdint>

#include "core/config.h"
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

// One argument as a shell would need it (for the command line recorded in
// the JSON metadata).
std::string Quote(const std::string &s) {
  bool safe = !s.empty();
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    (c >= '0' && c <= '9') ||
                    std::string("_./:=,@%+^-").find(c) != std::string::npos;
    safe = safe && ok;
  }
  if (safe) return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Long-only options get values above any character.
enum LongOnly {
  kModes = 256,
  kElements,
  kInplace,
  kDevice,
  kRepeat,
  kValidate,
  kJson,
  kCsv,
  kListModes,
  kBuckets,
  kBucketBytes,
  kKernelUs,
};

const struct option kLongOptions[] = {
    {"modes", required_argument, nullptr, kModes},
    {"elements", required_argument, nullptr, kElements},
    {"minbytes", required_argument, nullptr, 'b'},
    {"maxbytes", required_argument, nullptr, 'e'},
    {"stepbytes", required_argument, nullptr, 'i'},
    {"stepfactor", required_argument, nullptr, 'f'},
    {"dtype", required_argument, nullptr, 'd'},
    {"datatype", required_argument, nullptr, 'd'},
    {"op", required_argument, nullptr, 'o'},
    {"root", required_argument, nullptr, 'r'},
    {"inplace", no_argument, nullptr, kInplace},
    {"device", required_argument, nullptr, kDevice},
    {"warmup", required_argument, nullptr, 'w'},
    {"warmup_iters", required_argument, nullptr, 'w'},
    {"iters", required_argument, nullptr, 'n'},
    {"repeat", required_argument, nullptr, kRepeat},
    {"check", required_argument, nullptr, 'c'},
    {"validate", no_argument, nullptr, kValidate},
    {"nthreads", required_argument, nullptr, 't'},
    {"ngpus", required_argument, nullptr, 'g'},
    {"agg_iters", required_argument, nullptr, 'm'},
    {"average", required_argument, nullptr, 'a'},
    {"json", required_argument, nullptr, kJson},
    {"csv", required_argument, nullptr, kCsv},
    {"quiet", no_argument, nullptr, 'q'},
    {"list-modes", no_argument, nullptr, kListModes},
    {"buckets", required_argument, nullptr, kBuckets},
    {"bucket-bytes", required_argument, nullptr, kBucketBytes},
    {"kernel-us", required_argument, nullptr, kKernelUs},
    {"version", no_argument, nullptr, 'V'},
    {"help", no_argument, nullptr, 'h'},
    {nullptr, 0, nullptr, 0},
};
// Leading ':' : a missing value is reported as ':' so we can name it.
constexpr const char kShortOptions[] = ":b:e:i:f:d:o:r:w:n:c:t:g:m:a:qVh";

// The name the user typed for the option getopt_long just returned.
std::string OptionName(int c, int long_index) {
  if (long_index >= 0) return std::string("--") + kLongOptions[long_index].name;
  if (c > 0 && c < 256) return std::string("-") + static_cast<char>(c);
  return "option";
}

}  // namespace

bool ParseSize(const std::string &text, size_t *value) {
  return infiniccl::ParseBytes(text.c_str(), value);
}
std::string Usage(const char *argv0) {
  std::string u = "Usage: mpirun -np N ";
  u += argv0;
  u += R"( [options]

Measures InfiniCCL collectives next to the raw MPI calls they stand for.
Rows print as they are measured (rank 0); nccl-tests' spellings work.

  --modes LIST        comma-separated modes (default host_allreduce,infiniccl_allreduce);
                      'all' = every mode; --list-modes prints them
  --elements LIST     comma-separated element counts (K/M/G suffixes allowed)
  -b, --minbytes B    sweep start in bytes (K/M/G suffixes, default 1K)
  -e, --maxbytes B    sweep end in bytes (default 16M)
  -f, --stepfactor F  multiply by F from one size to the next (default 4)
  -i, --stepbytes S   or add S bytes (nccl-tests' linear sweep; not with -f)
                      (elements = bytes / dtype size; use --elements or a sweep)
  -d, --dtype T       element type (default float32): int8 int16 int32 int64
                      uint8 uint16 uint32 uint64 float16 bfloat16 float32
                      float64; aliases char int half float double fp16 bf16
                      (--datatype is nccl-tests' spelling)
  -o, --op OP         sum|prod|max|min|avg|band|bor|bxor (default sum; band,
                      bor, bxor: integer dtypes)
  -r, --root N        root rank of broadcast/reduce/gather/scatter (default 0)
  --inplace           in-place calls, in NCCL's buffer layout
  --device D          where infiniccl_* and stage_* buffers live: )";
  u += DeviceNames();
  u += R"(
                      (default: the first vendor device present, else cpu;
                      sim is the EMULATED device, used only when asked for:
                      --device sim or INFINICCL_DEVICE=sim)
  --buckets N         overlap mode: buckets per loop (default 8)
  --bucket-bytes B    overlap mode: bytes per bucket (K/M/G suffixes, default 4M)
  --kernel-us U       overlap mode: the emulated kernel before each bucket, in
                      microseconds (default 4000)
  -w, --warmup N      warm-up iterations per (mode, size) (default 5)
  -n, --iters N       timed iterations per (mode, size) (default 20)
  --repeat R          run the whole mode list R times interleaved and report
                      the minimum over repeats of the mean time (default 1)
  -c, --check 0|1     check every element exactly once after timing (default
                      1, as nccl-tests); --validate = -c 1
  --json FILE         also write the run's metadata and rows as JSON
  --csv FILE          also write the rows as CSV
                      (both files are opened before anything is measured)
  -q, --quiet         no progress lines on stderr
  --list-modes        the modes and what each measures
  -V, --version       the version of InfiniCCL and of the MPI library
  -h, --help          this text

nccl-tests options with one meaning here: -t 1 and -g 1 (one thread and one
device per process: this tool runs one rank per process; use mpirun -np N),
-m 1 (no aggregation), -a 3 (time = the slowest rank's mean, always). Other
values are refused.

Modes, for C in allreduce allgather alltoall broadcast reduce reduce_scatter
gather scatter sendrecv:
  host_C          the raw MPI call on host buffers
  infiniccl_C     the InfiniCCL call on --device buffers
  stage_alloc_C   --device buffers copied through host buffers malloc'd per
                  call around the raw MPI call (stage_alloc = allreduce)
  stage_reuse_C   the same with host buffers allocated once (stage_reuse)
and copy_d2h copy_h2d copy_roundtrip; ReduceScatter built from MPI on host
buffers: rs_block rs_counts rs_allreduce rs_reduce_scatter rs_ring.

  return_allreduce  infinicclAllReduce on --device buffers, each call timed
                  alone: the host time until the call returns (before any
                  synchronize) and until a stream synchronize after it; the
                  table's time is the latter, the return times follow it
  overlap         a DDP-like loop, once per run (not per size): --buckets
                  buckets of --bucket-bytes, each AllReduced on a second
                  stream after an emulated kernel of --kernel-us on the
                  compute stream (event record, stream wait event); prints
                  compute alone, communication alone, both together, and the
                  overlap efficiency (compute + comm - both) / min(compute,
                  comm); -n loops timed (the parts interleaved; each part's
                  time is the median over loops of the slowest rank's), -w
                  warm-up loops. Needs streams and a kernel: --device sim
                  (EMULATED kernels, infinicclSimKernel) or --device cuda
                  (a busy kernel spinning on the GPU's timer).
On a device other than cpu, stage_* copy with MemcpyAsync + StreamSynchronize
and stage_reuse_* host buffers are pinned when the device offers MallocHost.

Sizes follow nccl-tests: the count is the total over ranks, so AllGather,
ReduceScatter, AllToAll, Gather and Scatter move count/nranks per rank.
The run ends with nccl-tests' footers ("# Out of bounds values : N OK",
"# Avg bus bandwidth : X", averaged over every measured row).

Exit status: 0 success, 1 wrong results, 2 bad options (or an output file
that cannot be written), 3 a call failed.
)";
  return u;
}

ParseResult ParseOptions(int argc, char **argv, Options *opt, std::string *error) {
  std::string dtype = "float32", op = "sum";
  std::string elements, minb, maxb, factor, step;
  bool modes_given = false;
  for (int i = 0; i < argc; ++i) opt->command_line += (i ? " " : "") + Quote(argv[i]);

  // nccl-tests' per-process counts: 1 is what this tool always does.
  auto only_one = [&](const std::string &name, const char *value, const char *meaning,
                      const char *note) {
    int v = 0;
    if (ParseInt(value, 0, &v) && v == 1) {
      if (note != nullptr) opt->notes.push_back(name + " 1 ignored: " + note);
      return true;
    }
    *error = name + " " + value + ": " + meaning;
    return false;
  };

  optind = 0;  // glibc: 0 restarts the scan completely
  opterr = 0;  // our own messages, printed by rank 0 only
  for (;;) {
    int long_index = -1;
    const int c = getopt_long(argc, argv, kShortOptions, kLongOptions, &long_index);
    if (c == -1) break;
    const std::string name = OptionName(c, long_index);
    const char *v = optarg;
    auto int_option = [&](int min, int *target) {
      if (ParseInt(v, min, target)) return true;
      *error = name + ": '" + v + "' is not an integer >= " + std::to_string(min);
      return false;
    };
    bool ok = true;
    switch (c) {
      case 'h': return ParseResult::kHelp;
      case 'V': return ParseResult::kVersion;
      case kListModes: return ParseResult::kListModes;
      case kModes:
        for (std::string &m : SplitCommas(v)) opt->modes.push_back(m);
        modes_given = true;
        break;
      case kElements: elements = v; break;
      case 'b': minb = v; break;
      case 'e': maxb = v; break;
      case 'f': factor = v; break;
      case 'i': step = v; break;
      case 'd': dtype = v; break;
      case 'o': op = v; break;
      case 'r':
        if (std::string(v) == "all") {
          *error = name + " all: one root per run here (run once per root)";
          ok = false;
        } else {
          ok = int_option(0, &opt->root);
        }
        break;
      case kInplace: opt->inplace = true; break;
      case kDevice: opt->device = v; break;
      case 'w': ok = int_option(0, &opt->warmup); break;
      case 'n': ok = int_option(1, &opt->iters); break;
      case kRepeat: ok = int_option(1, &opt->repeat); break;
      case 'c': {
        int check = 0;
        if (ParseInt(v, 0, &check) && check <= 1) {
          opt->validate = check == 1;
        } else {
          *error = name + " '" + v + "': 0 (no check) or 1 (check every element)";
          ok = false;
        }
        break;
      }
      case kValidate: opt->validate = true; break;
      case kBuckets: ok = int_option(1, &opt->buckets); break;
      case kKernelUs: ok = int_option(0, &opt->kernel_us); break;
      case kBucketBytes:
        if (!ParseSize(v, &opt->bucket_bytes) || opt->bucket_bytes == 0) {
          *error = name + ": '" + v + "' is not a positive byte size (e.g. 4M)";
          ok = false;
        }
        break;
      case 't':
        ok = only_one(name, v,
                      "threads per process are not supported: one rank per process "
                      "(use mpirun -np N)",
                      "one thread per process (each rank is an MPI process)");
        break;
      case 'g':
        ok = only_one(name, v,
                      "devices per process are not supported: one device per rank "
                      "(use mpirun -np N)",
                      "one device per rank");
        break;
      case 'm':
        ok = only_one(name, v, "aggregated iterations are not supported (only -m 1)",
                      nullptr);
        break;
      case 'a':
        if (std::string(v) != "3") {
          *error = name + " " + v +
                   ": time is always the slowest rank's mean (nccl-tests' -a 3)";
          ok = false;
        }
        break;
      case 'q': opt->quiet = true; break;
      case kJson: opt->json_path = v; break;
      case kCsv: opt->csv_path = v; break;
      case ':':
        *error = "option " + std::string(argv[optind - 1]) + " needs a value";
        ok = false;
        break;
      case '?':
      default:
        if (optopt > 0 && optopt < 256)
          *error = "unknown option '-" + std::string(1, static_cast<char>(optopt)) + "'";
        else
          *error = "unknown option '" + std::string(argv[optind - 1]) + "'";
        ok = false;
        break;
    }
    if (!ok) return ParseResult::kError;
  }
  if (optind < argc) {
    *error = "unexpected argument '" + std::string(argv[optind]) + "'";
    return ParseResult::kError;
  }

  if (dtype == "all" || op == "all") {
    *error = std::string(dtype == "all" ? "-d" : "-o") +
             " all: one type and one op per run here (run once per value)";
    return ParseResult::kError;
  }
  opt->dtype = FindDType(dtype);
  if (!opt->dtype) {
    *error = "unknown dtype '" + dtype + "'; one of " + DTypeNames();
    return ParseResult::kError;
  }
  opt->op = FindRedOp(op);
  if (!opt->op) {
    *error = "unknown op '" + op + "'; one of sum prod max min avg band bor bxor";
    return ParseResult::kError;
  }
  if (infiniccl::IsBitwiseRedOp(opt->op->id) && !infiniccl::IsIntegerDataType(opt->dtype->id)) {
    *error = "-o " + op + ": a bitwise op takes an integer dtype (int8..uint64), not " +
             std::string(opt->dtype->name);
    return ParseResult::kError;
  }
  if (!modes_given)
    for (const char *m : kDefaultModes) opt->modes.push_back(m);
  if (opt->modes.empty()) {
    *error = "--modes needs at least one mode";
    return ParseResult::kError;
  }

  const bool sweep = !minb.empty() || !maxb.empty() || !factor.empty() || !step.empty();
  if (!elements.empty() && sweep) {
    *error = "use either --elements or -b/-e/-f/-i, not both";
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
  size_t lo = kDefaultMinBytes, hi = kDefaultMaxBytes, f = kDefaultFactor, add = 0;
  if ((!minb.empty() && !ParseSize(minb, &lo)) ||
      (!maxb.empty() && !ParseSize(maxb, &hi))) {
    *error = "-b/-e: not a byte size (e.g. 8, 64K, 16M, 1G)";
    return ParseResult::kError;
  }
  int fi = 0;
  if (!factor.empty() && (!ParseInt(factor, 2, &fi))) {
    *error = "-f: the step factor must be an integer >= 2";
    return ParseResult::kError;
  }
  if (!factor.empty()) f = static_cast<size_t>(fi);
  if (!step.empty() && (!ParseSize(step, &add) || add == 0)) {
    *error = "-i: the step must be a positive byte size";
    return ParseResult::kError;
  }
  if (!step.empty() && !factor.empty()) {
    *error = "use -f (multiply) or -i (add), not both";
    return ParseResult::kError;
  }
  if (lo > hi) {
    *error = "-b must not exceed -e";
    return ParseResult::kError;
  }
  if (add != 0) {
    for (size_t b = lo; b <= hi; b += add) {
      opt->elements.push_back(b / opt->dtype->size);
      if (b > SIZE_MAX - add) break;
    }
    return ParseResult::kRun;
  }
  for (size_t b = lo;; b *= f) {
    opt->elements.push_back(b / opt->dtype->size);
    if (b > hi / f) break;  // the next step would pass -e (or overflow)
    if (b == 0) break;
  }
  return ParseResult::kRun;
}

}  // namespace bench
