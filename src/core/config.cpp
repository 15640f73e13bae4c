#include "core/config.h"

#include <strings.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <utility>
#include <type_traits>

extern char **environ;  // POSIX; declared by <unistd.h> only under _GNU_SOURCE

namespace infiniccl {

namespace {

using Word = Config::Word;

// The first spelling of each value is the one Describe() shows.
// The values are the enums' (LogLevel, Tristate, BackendChoice).
constexpr Word kBool[] = {{"0", 0},  {"1", 1},   {"false", 0}, {"true", 1}, {"no", 0},
                          {"yes", 1}, {"off", 0}, {"on", 1},   {"", 0}};
constexpr Word kTristate[] = {{"auto", 2}, {"1", 1}, {"0", 0},  {"true", 1}, {"false", 0},
                              {"yes", 1},  {"no", 0}, {"on", 1}, {"off", 0}};
// "" (unset): WARN, without the errors returned to the caller.
constexpr Word kLevels[] = {{"NONE", 0}, {"VERSION", 1}, {"WARN", 2},
                            {"INFO", 3}, {"TRACE", 4},   {"", 2}};
constexpr Word kSubsystems[] = {
    {"INIT", kSubsysInit},       {"BIND", kSubsysBind},   {"COLL", kSubsysColl},
    {"STAGING", kSubsysStaging}, {"CCL", kSubsysCcl},     {"MPI", kSubsysMpi},
    {"DEVICE", kSubsysDevice},   {"WATCHDOG", kSubsysWatchdog}, {"ALL", kSubsysAll}};
constexpr Word kBackends[] = {{"auto", 0}, {"mpi", 1}, {"ccl", 2}};
constexpr Word kDevices[] = {{"auto", 0}, {"sim", 1}, {"cpu", 2}};
constexpr Word kSimdLevels[] = {{"auto", 0}, {"avx512", 1}, {"avx2", 2}, {"baseline", 3}};
constexpr Word kDeviceWaits[] = {{"auto", 0}, {"host_func", 1}};
constexpr Word kAutoIsZero[] = {{"auto", 0}};
constexpr Word kAutoIsMax[] = {{"auto", -1}};  // SIZE_MAX in a size_t
constexpr double kNoLimit = std::numeric_limits<double>::infinity();

const Word *Find(std::span<const Word> words, const char *text, bool exact_case) {
  for (const Word &w : words)
    if ((exact_case ? std::strcmp(w.text, text) : strcasecmp(w.text, text)) == 0)
      return &w;
  return nullptr;
}

const char *WordFor(std::span<const Word> words, int value) {
  for (const Word &w : words)
    if (w.value == value) return w.text;
  return "?";
}

// "auto, 1 or 0 (or true, false, yes, no, on, off)": what a warning lists.
std::string Alternatives(std::span<const Word> words) {
  std::string shown, others;
  for (const Word &w : words) {
    std::string &list = WordFor(words, w.value) == w.text ? shown : others;
    if (*w.text != '\0') list += (list.empty() ? "" : ", ") + std::string(w.text);
  }
  if (const size_t last = shown.rfind(", "); last != std::string::npos)
    shown.replace(last, 2, " or ");
  return others.empty() ? shown : shown + " (or " + others + ")";
}

bool Fail(std::string *why, const std::string &text) { return *why = text, false; }

// "0 to 1073741824 seconds", "at least 4096 bytes".
std::string RangeText(const Config::Range &r) {
  char buf[64];
  if (std::isinf(r.hi)) {
    std::snprintf(buf, sizeof buf, "at least %.15g", r.lo);
  } else {
    std::snprintf(buf, sizeof buf, "%.15g to %.15g", r.lo, r.hi);
  }
  return buf + std::string(*r.unit ? " " : "") + r.unit;
}

// A number in e.range (a size_t: a size with suffixes, ParseBytes); *out is
// written only when `v` is one.
template <typename T>
bool ReadNumber(const Config::Entry &e, const char *v, T *out, std::string *why) {
  char *end = nullptr;
  size_t bytes = 0;
  double d = 0;
  bool ok = false;
  if constexpr (std::is_same_v<T, size_t>) {
    ok = ParseBytes(v, &bytes);
    d = static_cast<double>(bytes);
  } else {
    d = std::is_integral_v<T> ? std::strtol(v, &end, 10) : std::strtod(v, &end);
    ok = end != v && *end == '\0';
  }
  if (!ok) {
    return Fail(why, "is not " + (e.words.empty() ? "" : Alternatives(e.words) + " or ") +
                         (std::is_same_v<T, size_t>
                              ? std::string("a size (such as 4096, 64K, 16M or 1G)")
                              : "a non-negative number (" + RangeText(e.range) + ")"));
  }
  if (!(d >= e.range.lo && d <= e.range.hi))
    return Fail(why, "is out of range (" + RangeText(e.range) + ")");
  if constexpr (std::is_same_v<T, size_t>) {
    *out = bytes;
  } else {
    *out = static_cast<T>(d);
  }
  return true;
}

// NCCL_DEBUG_SUBSYS's syntax: "INIT,COLL" enables those; a leading '^'
// ("^CCL,MPI") enables all but those; ALL names every one.
bool ReadSubsystems(const Config::Entry &e, const char *v, unsigned *out,
                    std::string *why) {
  const bool invert = *v == '^';
  const std::string text = v + (invert ? 1 : 0);
  unsigned mask = 0;
  for (size_t start = 0; start <= text.size();) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const Word *w = Find(e.words, text.substr(start, comma - start).c_str(), false);
    if (w == nullptr) {
      return Fail(why,
                  "is not a list of " + Alternatives(e.words) + " (optionally after ^)");
    }
    mask |= static_cast<unsigned>(w->value);
    start = comma + 1;
  }
  *out = invert ? (kSubsysAll & ~mask) : mask;
  return true;
}

template <typename T>
constexpr bool kIsChoice = std::is_enum_v<T> || std::is_same_v<T, bool>;

// Variables with the prefix that the tools, not the library, read:
// icclrun the first two, the Python package the next two, its build the
// next three, the Python tests and scripts/test.sh the last four. The
// table of docs/CONFIG.md lists the same (tools_docs_limits checks it).
constexpr const char *kToolVariables[] = {"INFINICCL_MPI",
                                          "INFINICCL_MPIRUN",
                                          "INFINICCL_LIBRARY",
                                          "INFINICCL_TORCH_BACKEND",
                                          "INFINICCL_INCLUDE",
                                          "INFINICCL_TORCH_EXTENSION",
                                          "INFINICCL_TORCH_SANITIZE",
                                          "INFINICCL_TEST_MPI",
                                          "INFINICCL_TORCH",
                                          "INFINICCL_TORCH_VENV",
                                          "INFINICCL_OMPI5_VENV"};

size_t EditDistance(const std::string &a, const std::string &b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1])});
      diag = up;
    }
  }
  return row[b.size()];
}

Config &Storage() {
  static Config config = Config::FromEnvironment();
  return config;
}

}  // namespace

bool Config::Entry::Read(const char *v, Config *c, std::string *why) const {
  return std::visit(
      [&](auto field) {
        using T = std::remove_reference_t<decltype(c->*field)>;
        const Word *w = Find(words, v, std::is_same_v<T, std::string>);
        if constexpr (std::is_same_v<T, unsigned>) {
          return ReadSubsystems(*this, v, &(c->*field), why);
        } else if constexpr (std::is_same_v<T, std::string>) {
          int n = 0;  // INFINICCL_LOCAL_RANK: checked, kept as text
          if (!words.empty() && w == nullptr)
            return Fail(why, "is not " + Alternatives(words));
          if (range.hi > 0 && *v != '\0' && !ReadNumber(*this, v, &n, why)) return false;
          return c->*field = v, true;
        } else if constexpr (kIsChoice<T>) {
          if (w == nullptr) return Fail(why, "is not " + Alternatives(words));
          if constexpr (std::is_same_v<T, LogLevel>) c->log_level_set = *v != '\0';
          return c->*field = static_cast<T>(w->value), true;
        } else {
          if (w != nullptr) return c->*field = static_cast<T>(w->value), true;
          return ReadNumber(*this, v, &(c->*field), why);
        }
      },
      field);
}

std::string Config::Entry::Value(const Config &c) const {
  return std::visit(
      [&](auto field) -> std::string {
        using T = std::remove_cvref_t<decltype(c.*field)>;
        const T &v = c.*field;
        if constexpr (std::is_same_v<T, unsigned>) {
          return LogSubsysNames(v);
        } else if constexpr (std::is_same_v<T, std::string>) {
          return v;
        } else if constexpr (std::is_same_v<T, LogLevel>) {
          return c.log_level_set ? WordFor(words, static_cast<int>(v)) : "";
        } else if constexpr (kIsChoice<T>) {
          return WordFor(words, static_cast<int>(v));
        } else {
          for (const Word &w : words)
            if (static_cast<T>(w.value) == v) return w.text;
          if constexpr (std::is_integral_v<T>) {
            return std::to_string(v);
          } else {
            char buf[32];
            std::snprintf(buf, sizeof buf, "%g", v);
            return buf;
          }
        }
      },
      field);
}

const std::vector<Config::Entry> &Config::Table() {
  // name, default, field, range, words, meaning (see Entry).
  static const std::vector<Entry> kTable = {
      {"INFINICCL_DEBUG", "", &Config::log_level, {}, kLevels,
       "Log level: `NONE`, `VERSION`, `WARN`, `INFO` or `TRACE` (case-insensitive); lines start "
       "with `host:pid:rank INFINICCL LEVEL`, as `NCCL_DEBUG`'s. Unset: only the library's own "
       "warnings, not the errors it returns (`infinicclGetLastError` has them). `WARN` adds each "
       "returned error; `VERSION` the version, once, from rank 0; `INFO` adds initialisation and "
       "each call's path; `TRACE` every call."},
      {"INFINICCL_DEBUG_FILE", "", &Config::log_file, {}, {},
       "Write the log to this file instead of stderr; `%h` becomes the host name and "
       "`%p` the pid, so each rank can have its own file."},
      {"INFINICCL_DEBUG_SUBSYS", "ALL", &Config::log_subsys, {}, kSubsystems,
       "Which parts log at `INFO` and `TRACE` (`WARN` is never filtered), in `NCCL_DEBUG_SUBSYS`'s"
       " syntax: a comma-separated list of `INIT`, `BIND` (device binding), `COLL` (collectives, "
       "groups, paths, checks, queued calls), `STAGING`, `CCL`, `MPI`, `DEVICE`, `WATCHDOG`, or "
       "`ALL`; a leading `^` enables all but those named (`^STAGING,MPI`)."},
      {"INFINICCL_ABORT_ON_ERROR", "0", &Config::abort_on_error, {}, kBool,
       "`1`: the first failed call aborts the job (`MPI_Abort`) after logging, instead "
       "of returning an error code. For debugging; the default never aborts."},
      {"INFINICCL_CHECK", "0", &Config::check, {}, kBool,
       "`1`: before each collective the ranks compare the operation, its sequence number, count, "
       "datatype, op and root (one `MPI_Allgather` of 56 bytes per rank); a mismatch returns "
       "`infinicclInvalidUsage` on every rank, naming the field and the ranks, and runs nothing. "
       "Send/Recv are not checked. For debugging, like `NCCL_CHECK_MODE` (docs/reliability/check.md)."},
      {"INFINICCL_DEVICE", "auto", &Config::device, {}, kDevices,
       "`auto`: use the vendor runtimes compiled in (CUDA, MACA, ...) that find a "
       "device. `sim`: also enable the emulated device (host memory tracked as "
       "device memory; for exercising staging on machines without an accelerator). "
       "`cpu`: use no device runtime at all."},
      {"INFINICCL_LOCAL_RANK", "", &Config::local_rank, {0, 1 << 20}, {},
       "Overrides the node-local rank used for device binding. Otherwise the first of "
       "`OMPI_COMM_WORLD_LOCAL_RANK`, `MPI_LOCALRANKID`, `MV2_COMM_WORLD_LOCAL_RANK`, "
       "`PMI_LOCAL_RANK`, `PALS_LOCAL_RANKID`, `FLUX_TASK_LOCAL_ID`, "
       "`JSM_NAMESPACE_LOCAL_RANK`, `MPT_LRANK`, `LOCAL_RANK`, `SLURM_LOCALID` that is "
       "set, else the rank within `MPI_COMM_TYPE_SHARED`."},
      {"INFINICCL_STRICT_BINDING", "0", &Config::strict_binding, {}, kBool,
       "`1`: more local ranks than devices is an error (`infinicclInvalidUsage`) "
       "instead of a WARN and a modulo mapping."},
      {"INFINICCL_STAGING_PINNED", "auto", &Config::staging_pinned, {}, kTristate,
       "Host staging memory: `auto` pinned (page-locked) when the device runtime "
       "offers it; `1` ask for pinned and WARN once if it fails, then pageable; `0` "
       "pageable."},
      {"INFINICCL_STAGING_CACHE_BYTES", "256M", &Config::staging_cache_bytes,
       {4096, kNoLimit, "bytes"}, {},
       "Bound on host staging memory, both kept between calls and held during one "
       "call: larger operations run in pieces. Calls queued on a stream (the "
       "progress engine) lease their one-chunk slots only within it together; a "
       "call beyond it is staged by the engine's thread when it runs "
       "(docs/architecture/progress-engine.md, step 2). Suffixes `K`, `M`, `G` "
       "(powers of 1024)."},
      {"INFINICCL_PIPELINE_CHUNK_BYTES", "auto", &Config::pipeline_chunk_bytes,
       {1, kNoLimit, "bytes"}, kAutoIsZero,
       "Staged operations larger than this are cut into equal chunks of at most this "
       "many bytes (of the widest buffer), two in flight, so device copies overlap "
       "MPI. `auto`: the device runtime's own default, `1M` on CUDA-like devices "
       "(measured on an H200, docs/PERFORMANCE.md, \"Real GPU (one NVIDIA H200)\"), `4M` on the emulated device "
       "(its own sweep, same page)."},
      {"INFINICCL_HOST_PIECE_BYTES", "16M", &Config::host_piece_bytes,
       {0, kNoLimit, "bytes"}, {},
       "Host-buffer AllReduce and Reduce through MPI above `INFINICCL_HOST_PIECE_THRESHOLD` run as"
       " one MPI call per piece of at most this many bytes, one call to the watchdog and "
       "`INFINICCL_CHECK` (docs/PERFORMANCE.md). MPICH's Scatter (3+ ranks) goes by columns within"
       " it; a ReduceScatter to cut and Open MPI's AllGather (3+ ranks) take the library's ring. "
       "`0`: never cut. The same on every rank."},
      {"INFINICCL_HOST_PIECE_THRESHOLD", "16M", &Config::host_piece_threshold,
       {0, kNoLimit, "bytes"}, {},
       "Host-buffer calls whose widest buffer (MPICH's Scatter: its temporary) is "
       "larger than this many bytes are "
       "cut into `INFINICCL_HOST_PIECE_BYTES` pieces; smaller ones stay one MPI call "
       "(below it pieces measured no faster). `0`: cut whatever is larger than one "
       "piece. Every rank must use the same value."},
      {"INFINICCL_MPI_DEVICE_DIRECT", "auto", &Config::mpi_device_direct, {}, kTristate,
       "Device buffers straight to MPI, no staging: `auto` when the MPI reports itself "
       "GPU-aware for that device kind (`MPIX_Query_cuda_support`, "
       "`MPIX_GPU_query_support`), `1` always (for an MPI the query gets wrong), `0` "
       "never."},
      {"INFINICCL_BACKEND", "auto", &Config::backend, {}, kBackends,
       "Path of device buffers: `auto` sends them to the native CCL (NCCL, RCCL, MCCL, HCCL, CNCL)"
       " when the communicator has one that can run the call, else to MPI; `mpi` never uses a CCL "
       "(CommInitAll makes none); `ccl` only the CCL: a call it cannot take fails "
       "(`infinicclInvalidUsage` for host buffers, `infinicclNotSupported` otherwise). Host "
       "buffers go to MPI under `auto` and `mpi`."},
      {"INFINICCL_TIMEOUT_SEC", "1800", &Config::timeout_sec, {0, 1 << 30, "seconds"}, {},
       "Watchdog: a call (collective or Send/Recv) not completed after this many seconds writes "
       "one `ERROR` line per rank (the call, its communicator and arguments, the path, the ranks "
       "of this node that have not reached it) and ends the job through `MPI_Abort`, exit code "
       "124. `0` disables it (docs/reliability/watchdog.md). Also how long "
       "`infinicclCommInitRank`'s ranks wait for each other (`0`: no end)."},
      {"INFINICCL_SOCKET_IFNAME", "", &Config::socket_ifname, {}, {},
       "The interface whose IPv4 address `infinicclGetUniqueId` puts in the id, in "
       "`NCCL_SOCKET_IFNAME`'s syntax: a comma-separated list of name prefixes (`eth,ib`), "
       "`^` first to exclude them, `=` first for exact names. Unset: the first up interface "
       "that is neither loopback nor `docker*`, else loopback."},
      {"INFINICCL_ASYNC", "auto", &Config::async, {}, kTristate,
       "Device-buffer calls through MPI (staged, direct, two-level): `auto` and `1` queue them to "
       "the communicator's progress engine and return at once, ordered on the caller's stream as "
       "NCCL's; buffers stay unchanged until the stream has passed the call. Synchronous where the"
       " engine cannot run (MPI below `MPI_THREAD_MULTIPLE`, no device-side wait: `infiniccl-info`"
       " says). `0`: every call blocks."},
      {"INFINICCL_DEVICE_WAIT", "auto", &Config::device_wait_host_func, {}, kDeviceWaits,
       "How a CUDA stream waits for the progress engine: `auto` by stream memory "
       "operations (`cuStreamWaitValue32`) where the driver allows them, else a host "
       "function (`cudaLaunchHostFunc`); `host_func` forces the latter (for testing it). "
       "Other runtimes: see `infiniccl-info`."},
      {"INFINICCL_SIM_COPY_LATENCY_US", "0", &Config::sim_copy_latency_us,
       {0, 1e6, "microseconds"}, {},
       "Emulated device only: fixed cost of each host<->device copy in microseconds, "
       "added to the bandwidth term. `4` with `INFINICCL_SIM_COPY_GBPS=13` is the "
       "calibration against one H200 (docs/PERFORMANCE.md, \"Device buffers on the emulated device\")."},
      {"INFINICCL_SIM_COPY_GBPS", "0", &Config::sim_copy_gbps, {0, kNoLimit, "GB/s"}, {},
       "Emulated device only: copy-engine bandwidth in GB/s. Copies then take "
       "bytes/bandwidth (a simulation of a PCIe link): the copy thread sleeps, then "
       "spins for the last 150 us so the copy ends on time. `0`: memcpy speed."},
      {"INFINICCL_SIM_DEVICE_COUNT", "8", &Config::sim_device_count,
       {1, 1024, "devices"}, {},
       "Emulated device only: how many devices it reports (1..1024)."},
      {"INFINICCL_SIM_PINNED", "1", &Config::sim_pinned, {}, kBool,
       "Emulated device only: `0` makes pinned host allocation unavailable, to "
       "exercise the pageable fallback."},
      {"INFINICCL_SIM_HOSTFN_SERIAL", "1", &Config::sim_hostfn_serial, {}, kBool,
       "Emulated device only: host functions queued on any stream of a device run one "
       "at a time on one thread of that device, as CUDA and HIP run them; a host "
       "function that blocks holds back every other stream's. `0`: each stream runs its "
       "own."},
      {"INFINICCL_SIM_PAGEABLE_SYNC", "1", &Config::sim_pageable_sync, {}, kBool,
       "Emulated device only: copies with pageable host memory behave as CUDA's: a "
       "device-to-host copy into pageable memory returns once the stream's earlier work "
       "and the copy are done; a host-to-device copy from pageable memory reads its source "
       "when called. `0`: every copy reads its source when the stream reaches it."},
      {"INFINICCL_SIM_IMPLICIT_SYNC", "1", &Config::sim_implicit_sync, {}, kBool,
       "Emulated device only: allocating and freeing device and pinned memory wait for "
       "every stream of the device to finish its queued work, as `cudaFree` and "
       "`cudaFreeHost` do and `cudaMalloc`/`cudaMallocHost` may. `0`: they do not wait."},
      {"INFINICCL_SIM_STREAM_MEMOPS", "1", &Config::sim_stream_memops, {}, kBool,
       "Emulated device only: `1` the device waits for the progress engine as by a "
       "stream memory operation (`cuStreamWaitValue32`); `0` hides them, so its gates "
       "are host functions (`cudaLaunchHostFunc`), the only mechanism of runtimes "
       "without stream memory operations."},
      {"INFINICCL_SHM", "auto", &Config::shm, {}, kTristate,
       "Collectives of ranks all on one node through a shared-memory segment "
       "instead of MPI (host buffers, and device buffers of a device without a "
       "CCL). `auto`: calls up to `INFINICCL_SHM_MAX_BYTES`; `1`: every such call; "
       "`0`: never (no segment is made). Alike on every rank: a communicator whose "
       "ranks differ is not made (`infinicclInvalidUsage`)."},
      {"INFINICCL_SHM_MAX_BYTES", "auto", &Config::shm_max_bytes, {0, kNoLimit, "bytes"},
       kAutoIsMax,
       "With `INFINICCL_SHM=auto`, the largest call (its `count` times the element "
       "size: one block for the collectives of blocks) that takes shared memory. `auto`: each collective's own, measured in "
       "docs/PERFORMANCE.md. Suffixes K, M, G. Alike on every rank, as "
       "`INFINICCL_SHM`."},
      {"INFINICCL_SIMD", "auto", &Config::simd, {}, kSimdLevels,
       "Instruction set of the host reduction kernels (shared-memory collectives): `auto` the best"
       " this CPU runs; `avx512` (F, BW, VL, DQ), `avx2` (with FMA and F16C) or `baseline` (the "
       "build's flags; x86-64: SSE2) force one. A level the CPU or build lacks gives the best it "
       "has (INFO line). Every level gives the same bits; `infiniccl-info` prints the one in use."},
      {"INFINICCL_HIERARCHY", "auto", &Config::hierarchy, {}, kTristate,
       "Two-level collectives (docs/CCL.md): ranks grouped by node and device kind, a "
       "CCL inside each group, MPI between groups. `auto` when there are at least two "
       "groups and one has a CCL of two or more ranks; `1` whenever there are at least "
       "two groups; `0` never (the flat paths)."},
      {"INFINICCL_HIERARCHY_MIN_BYTES", "auto", &Config::hierarchy_min_bytes,
       {0, kNoLimit, "bytes"}, kAutoIsMax,
       "Two-level collectives only from this many bytes (each rank's send buffer); smaller calls "
       "stay flat. `auto`: `64K` for Broadcast, Reduce, AllGather and ReduceScatter, `16M` for "
       "AllReduce, which stays flat when the groups are consecutive ranks of one power-of-two size"
       " and count (docs/PERFORMANCE.md). A number applies to every collective; suffixes K, M, G."},
      {"INFINICCL_SIM_CCL", "0", &Config::sim_ccl, {}, kBool,
       "Emulated device only: `1` gives each group of emulated-device ranks on one node "
       "an EMULATED CCL (collectives over MPI on the device memory, throttled to "
       "`INFINICCL_SIM_LINK_GBPS`); `0` none, device buffers are staged."},
      {"INFINICCL_SIM_LINK_GBPS", "0", &Config::sim_link_gbps, {0, kNoLimit, "GB/s"}, {},
       "Emulated CCL only: link bandwidth in GB/s (each collective takes at least the "
       "bytes a ring moves per rank divided by it); `0` unthrottled."},
      {"INFINICCL_SIM_CCL_FAIL", "0", &Config::sim_ccl_fail, {}, kBool,
       "Test setting: `1` makes every emulated CCL communicator fail to form on this "
       "rank (the fallback to the flat paths is then exercised)."},
  };
  return kTable;
}

Config::Config() {
  std::string unused;
  for (const Entry &e : Table()) e.Read(e.default_value, this, &unused);
}

Config Config::Parse(const Lookup &lookup) {
  Config c;
  for (const Entry &e : Table()) {
    const char *v = lookup(e.name);
    std::string why;
    if (v == nullptr || e.Read(v, &c, &why)) continue;
    c.warnings.push_back(std::string(e.name) + "='" + v + "' " + why + "; using " +
                         (*e.default_value ? e.default_value : "the default"));
  }
  return c;
}

std::vector<std::string> Config::Describe() const {
  std::vector<std::string> out;
  for (const Entry &e : Table())
    out.push_back(std::string(e.name) + "=" + e.Value(*this));
  return out;
}

std::string Config::MarkdownTable() {
  std::string s = "| Variable | Default | Meaning |\n|---|---|---|\n";
  // Appended piece by piece: GCC 12 at -O3 takes `"x" + std::string(...)`
  // for an overlapping copy (a false -Werror=restrict).
  for (const Entry &e : Table()) {
    s += "| `";
    s += e.name;
    s += "` | ";
    if (*e.default_value) {
      s += '`';
      s += e.default_value;
      s += '`';
    } else {
      s += "(unset)";
    }
    s += " | ";
    s += e.doc;
    s += " |\n";
  }
  return s;
}

std::vector<std::string> Config::UnknownVariables(const std::vector<std::string> &names) {
  std::vector<std::string> out;
  for (const std::string &name : names) {
    if (name.rfind("INFINICCL_", 0) != 0) continue;
    bool known = false;
    for (const Entry &e : Table()) known = known || name == e.name;
    for (const char *t : kToolVariables) known = known || name == t;
    if (known) continue;
    // The nearest known name, if it is near enough to be the one meant.
    const char *nearest = nullptr;
    size_t best = 4;
    for (const Entry &e : Table()) {
      const size_t d = EditDistance(name, e.name);
      if (d < best) best = d, nearest = e.name;
    }
    std::string w = name + " is set but InfiniCCL reads no such variable";
    if (nearest != nullptr) w += std::string(" (did you mean ") + nearest + "?)";
    w += "; ignored. docs/CONFIG.md and infiniccl-info list the variables";
    out.push_back(w);
  }
  return out;
}

Config Config::FromEnvironment() {
  Config c = Parse([](const char *name) { return std::getenv(name); });
  std::vector<std::string> names;
  for (char **e = environ; e != nullptr && *e != nullptr; ++e) {
    const char *eq = std::strchr(*e, '=');
    const size_t len = eq != nullptr ? static_cast<size_t>(eq - *e) : std::strlen(*e);
    names.emplace_back(*e, len);
  }
  c.unknown_variables = UnknownVariables(names);
  return c;
}

const Config &GlobalConfig() { return Storage(); }

// Only infinicclInit calls this, before any collective can run.
void ReloadGlobalConfig() { Storage() = Config::FromEnvironment(); }

bool ParseBytes(const char *text, size_t *out) {
  char *end = nullptr;
  errno = 0;
  const unsigned long long n = std::strtoull(text, &end, 10);
  if (end == text || errno != 0 || *text == '-') return false;
  unsigned shift = 0;
  switch (*end) {
    case 'k': case 'K': shift = 10; ++end; break;
    case 'm': case 'M': shift = 20; ++end; break;
    case 'g': case 'G': shift = 30; ++end; break;
    default: break;
  }
  if (shift != 0 && (*end == 'i' || *end == 'I')) ++end;
  if (shift != 0 && (*end == 'b' || *end == 'B')) ++end;
  if (shift == 0 && (*end == 'b' || *end == 'B')) ++end;
  if (*end != '\0') return false;
  if (shift != 0 && n > (~0ull >> shift)) return false;
  *out = static_cast<size_t>(n << shift);
  return true;
}

std::string BytesText(size_t bytes) {
  for (const auto &[shift, suffix] : {std::pair{30, "G"}, {20, "M"}, {10, "K"}}) {
    if (bytes != 0 && bytes % (size_t{1} << shift) == 0) {
      return std::to_string(bytes >> shift) + suffix;
    }
  }
  return std::to_string(bytes);
}

std::string LogSubsysNames(unsigned mask) {
  if ((mask & kSubsysAll) == kSubsysAll) return "ALL";
  std::string out;
  for (const Word &s : kSubsystems) {
    if (s.value == kSubsysAll || !(mask & static_cast<unsigned>(s.value))) continue;
    if (!out.empty()) out += ',';
    out += s.text;
  }
  return out;
}

const char *LogLevelName(LogLevel level) {
  return WordFor(kLevels, static_cast<int>(level));
}

const char *BackendChoiceName(BackendChoice choice) {
  return WordFor(kBackends, static_cast<int>(choice));
}

}  // namespace infiniccl
