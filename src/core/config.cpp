#include "core/config.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <strings.h>
#include <unistd.h>

extern char **environ;  // POSIX; declared by <unistd.h> only under _GNU_SOURCE

namespace infiniccl {

namespace {

const char *kDebug = "INFINICCL_DEBUG";
const char *kDebugFile = "INFINICCL_DEBUG_FILE";
const char *kDebugSubsys = "INFINICCL_DEBUG_SUBSYS";
const char *kAbort = "INFINICCL_ABORT_ON_ERROR";
const char *kCheck = "INFINICCL_CHECK";
const char *kDevice = "INFINICCL_DEVICE";
const char *kLocalRank = "INFINICCL_LOCAL_RANK";
const char *kStrict = "INFINICCL_STRICT_BINDING";
const char *kSimGbps = "INFINICCL_SIM_COPY_GBPS";
const char *kSimLatency = "INFINICCL_SIM_COPY_LATENCY_US";
const char *kSimCount = "INFINICCL_SIM_DEVICE_COUNT";
const char *kSimPinned = "INFINICCL_SIM_PINNED";
const char *kStagingPinned = "INFINICCL_STAGING_PINNED";
const char *kCacheBytes = "INFINICCL_STAGING_CACHE_BYTES";
const char *kChunkBytes = "INFINICCL_PIPELINE_CHUNK_BYTES";
const char *kHostPiece = "INFINICCL_HOST_PIECE_BYTES";
const char *kHostPieceThreshold = "INFINICCL_HOST_PIECE_THRESHOLD";
const char *kDirect = "INFINICCL_MPI_DEVICE_DIRECT";
const char *kBackend = "INFINICCL_BACKEND";
const char *kTimeout = "INFINICCL_TIMEOUT_SEC";
const char *kHierarchy = "INFINICCL_HIERARCHY";
const char *kHierMin = "INFINICCL_HIERARCHY_MIN_BYTES";
const char *kSimCcl = "INFINICCL_SIM_CCL";
const char *kSimLink = "INFINICCL_SIM_LINK_GBPS";
const char *kSimCclFail = "INFINICCL_SIM_CCL_FAIL";
const char *kTestNodes = "INFINICCL_TEST_NODES";


bool ParseDouble(const char *v, double *out) {
  char *end = nullptr;
  const double d = std::strtod(v, &end);
  if (end == v || *end != '\0' || !(d >= 0)) return false;
  *out = d;
  return true;
}

bool ParseInt(const char *v, int lo, int hi, int *out) {
  char *end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (end == v || *end != '\0' || n < lo || n > hi) return false;
  *out = static_cast<int>(n);
  return true;
}

bool ParseBool(const char *v, bool *out) {
  static const char *const kTrue[] = {"1", "true", "yes", "on"};
  static const char *const kFalse[] = {"0", "false", "no", "off", ""};
  for (const char *t : kTrue)
    if (strcasecmp(v, t) == 0) return *out = true, true;
  for (const char *f : kFalse)
    if (strcasecmp(v, f) == 0) return *out = false, true;
  return false;
}

bool ParseTriState(const char *v, std::string *out) {
  bool b = false;
  if (strcasecmp(v, "auto") == 0) return *out = "auto", true;
  if (!ParseBool(v, &b) || *v == '\0') return false;
  *out = b ? "1" : "0";
  return true;
}

bool ParseLevel(const char *v, LogLevel *out) {
  struct {
    const char *name;
    LogLevel level;
  } static const kLevels[] = {{"NONE", LogLevel::kNone},
                              {"VERSION", LogLevel::kVersion},
                              {"WARN", LogLevel::kWarn},
                              {"INFO", LogLevel::kInfo},
                              {"TRACE", LogLevel::kTrace}};
  for (const auto &l : kLevels) {
    if (strcasecmp(v, l.name) == 0) return *out = l.level, true;
  }
  return false;
}

struct SubsysName {
  const char *name;
  unsigned bit;
};
constexpr SubsysName kSubsysNames[] = {
    {"INIT", kSubsysInit},       {"BIND", kSubsysBind},   {"COLL", kSubsysColl},
    {"STAGING", kSubsysStaging}, {"CCL", kSubsysCcl},     {"MPI", kSubsysMpi},
    {"DEVICE", kSubsysDevice},   {"WATCHDOG", kSubsysWatchdog},
};

// NCCL_DEBUG_SUBSYS's syntax: "INIT,COLL" enables those; a leading '^'
// ("^CCL,MPI") enables all but those; ALL names every one.
bool ParseSubsys(const char *v, unsigned *out) {
  std::string text = v;
  const bool invert = !text.empty() && text[0] == '^';
  if (invert) text.erase(0, 1);
  unsigned mask = 0;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    const std::string word = text.substr(start, comma - start);
    bool known = false;
    if (strcasecmp(word.c_str(), "ALL") == 0) {
      mask = kSubsysAll;
      known = true;
    }
    for (const SubsysName &s : kSubsysNames) {
      if (strcasecmp(word.c_str(), s.name) == 0) mask |= s.bit, known = true;
    }
    if (!known) return false;
    start = comma + 1;
  }
  *out = invert ? (kSubsysAll & ~mask) : mask;
  return true;
}

// Variables with the prefix that the tools, not the library, read.
// icclrun reads the first two, the Python package the third.
constexpr const char *kToolVariables[] = {"INFINICCL_MPI", "INFINICCL_MPIRUN",
                                          "INFINICCL_LIBRARY"};

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

bool ParseBackendChoice(const char *v, BackendChoice *out) {
  for (BackendChoice b : {BackendChoice::kAuto, BackendChoice::kMpi, BackendChoice::kCcl}) {
    if (strcasecmp(v, BackendChoiceName(b)) == 0) return *out = b, true;
  }
  return false;
}

Config &Storage() {
  static Config config = Config::FromEnvironment();
  return config;
}

std::string FormatNumber(double d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", d);
  return buf;
}

}  // namespace

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

std::string LogSubsysNames(unsigned mask) {
  if ((mask & kSubsysAll) == kSubsysAll) return "ALL";
  std::string out;
  for (const SubsysName &s : kSubsysNames) {
    if (mask & s.bit) out += (out.empty() ? "" : ",") + std::string(s.name);
  }
  return out;
}

const char *LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kNone: return "NONE";
    case LogLevel::kVersion: return "VERSION";
    case LogLevel::kWarn: return "WARN";
    case LogLevel::kInfo: return "INFO";
    case LogLevel::kTrace: return "TRACE";
  }
  return "?";
}

const char *BackendChoiceName(BackendChoice choice) {
  switch (choice) {
    case BackendChoice::kAuto: return "auto";
    case BackendChoice::kMpi: return "mpi";
    case BackendChoice::kCcl: return "ccl";
  }
  return "?";
}

const std::vector<Config::Entry> &Config::Table() {
  static const std::vector<Entry> kTable = {
      {kDebug, "",
       "Log level: NONE, VERSION (the version line at Init), WARN, INFO or TRACE. "
       "Unset: the library's own warnings only; errors returned to the caller are "
       "printed (at WARN) only when this is WARN or more, as with NCCL_DEBUG, and are "
       "always in infinicclGetLastError. Lines go to stderr, prefixed with "
       "host:pid:rank."},
      {kDebugFile, "",
       "Write the log to this file instead of stderr; %h is replaced by the "
       "host name and %p by the pid."},
      {kDebugSubsys, "ALL",
       "Which parts log at INFO/TRACE (WARN is never filtered): comma-separated "
       "INIT, BIND, COLL, STAGING, CCL, MPI, DEVICE, WATCHDOG or ALL; a leading ^ "
       "excludes the ones named (NCCL_DEBUG_SUBSYS's syntax)."},
      {kAbort, "0",
       "1: abort the job (MPI_Abort) on the first failed call instead of "
       "returning an error code (fail-fast, for debugging)."},
      {kCheck, "0",
       "1: before each collective the ranks compare operation, sequence number, "
       "count, datatype, op and root (one small MPI_Allgather); a mismatch returns "
       "InvalidUsage on every rank, naming the field and the ranks."},
      {kDevice, "auto",
       "auto: use the vendor runtimes compiled in that find a device. sim: also "
       "enable the emulated device (host memory tracked as device memory, for "
       "testing staging without an accelerator). cpu: use no device runtime."},
      {kLocalRank, "",
       "Overrides the node-local rank read from the launcher (device binding)."},
      {kStrict, "0",
       "1: more local ranks than devices is an error instead of a WARN and a "
       "modulo mapping."},
      {kSimGbps, "0",
       "Emulated device only: copy-engine bandwidth in GB/s (emulates a PCIe "
       "link: copies take bytes/bandwidth, sleeping, not spinning); 0 = "
       "memcpy speed."},
      {kSimLatency, "0",
       "Emulated device only: fixed cost of each host<->device copy in microseconds, "
       "on top of bytes / INFINICCL_SIM_COPY_GBPS (an H200 measured about 8 us per "
       "device-to-host and 3 us per host-to-device copy; docs/PERFORMANCE.md §4)."},
      {kSimCount, "8", "Emulated device only: number of devices it reports (1..1024)."},
      {kSimPinned, "1",
       "Emulated device only: 0 makes pinned host allocation unavailable, to "
       "exercise the pageable fallback."},
      {kStagingPinned, "auto",
       "Host staging memory: auto = pinned (page-locked) when the device runtime "
       "offers it, 1 = ask for pinned (WARN once if it fails, then pageable), 0 = "
       "pageable."},
      {kCacheBytes, "256M",
       "Bound on host staging memory, both kept between calls and held during "
       "one: larger operations run in pieces. Suffixes K, M, G (powers of 1024)."},
      {kChunkBytes, "auto",
       "Pipeline chunk: staged operations larger than this are split into chunks "
       "so device copies overlap MPI. auto = the device runtime's own: 1M on "
       "CUDA-like devices (measured on an H200), 4M on the emulated device (its "
       "own sweep). Suffixes K, M, G."},
      {kHostPiece, "16M",
       "Host-buffer AllReduce and Reduce through MPI larger than "
       "INFINICCL_HOST_PIECE_THRESHOLD run as a sequence of MPI calls on pieces of at "
       "most this many bytes (MPI's per-call temporary stays small enough to be "
       "reused instead of mapped and faulted in on every call); ReduceScatter then "
       "takes the library's ring. 0 = never cut. Suffixes K, M, G."},
      {kHostPieceThreshold, "16M",
       "Host-buffer reductions larger than this many bytes (of the widest buffer) are "
       "cut into INFINICCL_HOST_PIECE_BYTES pieces; smaller ones are one MPI call. "
       "Suffixes K, M, G."},
      {kDirect, "auto",
       "Device buffers straight to MPI (no staging): auto = when the MPI reports "
       "itself GPU-aware for the device kind, 1 = always (for an MPI the query gets "
       "wrong), 0 = never."},
      {kBackend, "auto",
       "Path of device buffers: auto = the native CCL (NCCL/MCCL) where the communicator "
       "has one, else MPI; mpi = never a CCL; ccl = only the CCL (other calls fail)."},
      {kTimeout, "1800",
       "Watchdog: a call not completed after this many seconds writes an ERROR line "
       "(operation, sequence number, path, ranks not arrived) and ends the job with "
       "MPI_Abort, exit code 124. 0 disables. See docs/RELIABILITY.md."},
      {kHierarchy, "auto",
       "Two-level collectives (docs/CCL.md): ranks grouped by node and device kind, a "
       "CCL inside each group, MPI between groups. auto = when there are at least two "
       "groups and one has a CCL of two or more ranks; 1 = whenever there are at least "
       "two groups; 0 = never (the flat paths)."},
      {kHierMin, "16M",
       "Hierarchical AllReduce only from this many bytes; smaller calls keep the flat "
       "path (measured in docs/PERFORMANCE.md §7). Suffixes K, M, G."},
      {kSimCcl, "0",
       "Emulated device only: 1 gives groups of emulated-device ranks on one node an "
       "EMULATED CCL (collectives over MPI on the device memory, throttled to "
       "INFINICCL_SIM_LINK_GBPS); 0 = none, device buffers are staged."},
      {kSimLink, "0",
       "Emulated CCL only: link bandwidth in GB/s (each collective takes at least the "
       "bytes a ring moves per rank divided by it, sleeping); 0 = unthrottled."},
      {kSimCclFail, "0",
       "Test setting: 1 makes every emulated CCL communicator fail to form on this "
       "rank (the fallback to the flat paths is then exercised)."},
      {kTestNodes, "",
       "Test setting: emulated nodes as sizes, e.g. 1,2,3: consecutive ranks of each "
       "communicator form a node (instead of MPI_COMM_TYPE_SHARED). Empty = real nodes."},
  };
  return kTable;
}

Config Config::Parse(const Lookup &lookup) {
  Config c;
  // Empty counts as unset, so "INFINICCL_DEBUG=" restores the default.
  if (const char *v = lookup(kDebug); v != nullptr && *v != '\0') {
    if (ParseLevel(v, &c.log_level)) {
      c.log_level_set = true;
    } else {
      c.warnings.push_back(std::string(kDebug) + "='" + v +
                           "' is not NONE, VERSION, WARN, INFO or TRACE; using the "
                           "default (warnings only)");
    }
  }
  if (const char *v = lookup(kDebugFile)) c.log_file = v;
  if (const char *v = lookup(kDebugSubsys)) {
    if (!ParseSubsys(v, &c.log_subsys)) {
      c.warnings.push_back(std::string(kDebugSubsys) + "='" + v +
                           "' is not a list of INIT, BIND, COLL, STAGING, CCL, MPI, "
                           "DEVICE, WATCHDOG or ALL (optionally after ^); using ALL");
    }
  }
  if (const char *v = lookup(kAbort)) {
    if (!ParseBool(v, &c.abort_on_error)) {
      c.warnings.push_back(std::string(kAbort) + "='" + v +
                           "' is not 0/1 (or true/false, yes/no, on/off); using 0");
    }
  }
  if (const char *v = lookup(kCheck)) {
    if (!ParseBool(v, &c.check)) {
      c.warnings.push_back(std::string(kCheck) + "='" + v + "' is not 0 or 1; using 0");
    }
  }
  if (const char *v = lookup(kDevice)) {
    const std::string d = v;
    if (d == "auto" || d == "sim" || d == "cpu") {
      c.device = d;
    } else {
      c.warnings.push_back(std::string(kDevice) + "='" + v +
                           "' is not auto, sim or cpu; using auto");
    }
  }
  if (const char *v = lookup(kLocalRank)) {
    int r = 0;
    if (ParseInt(v, 0, 1 << 20, &r)) {
      c.local_rank = v;
    } else if (*v != '\0') {
      c.warnings.push_back(std::string(kLocalRank) + "='" + v +
                           "' is not a non-negative integer; ignored");
    }
  }
  if (const char *v = lookup(kStrict)) {
    if (!ParseBool(v, &c.strict_binding)) {
      c.warnings.push_back(std::string(kStrict) + "='" + v + "' is not 0 or 1; using 0");
    }
  }
  if (const char *v = lookup(kSimGbps)) {
    if (!ParseDouble(v, &c.sim_copy_gbps)) {
      c.warnings.push_back(std::string(kSimGbps) + "='" + v +
                           "' is not a non-negative number; using 0 (unthrottled)");
    }
  }
  if (const char *v = lookup(kSimLatency)) {
    if (!ParseDouble(v, &c.sim_copy_latency_us) || c.sim_copy_latency_us > 1e6) {
      c.sim_copy_latency_us = 0;
      c.warnings.push_back(std::string(kSimLatency) + "='" + v +
                           "' is not a number of microseconds in 0..1000000; using 0");
    }
  }
  if (const char *v = lookup(kSimCount)) {
    if (!ParseInt(v, 1, 1024, &c.sim_device_count)) {
      c.warnings.push_back(std::string(kSimCount) + "='" + v +
                           "' is not an integer in 1..1024; using 8");
    }
  }
  if (const char *v = lookup(kSimPinned)) {
    if (!ParseBool(v, &c.sim_pinned)) {
      c.warnings.push_back(std::string(kSimPinned) + "='" + v + "' is not 0 or 1; using 1");
    }
  }
  if (const char *v = lookup(kStagingPinned)) {
    if (!ParseTriState(v, &c.staging_pinned)) {
      c.warnings.push_back(std::string(kStagingPinned) + "='" + v +
                           "' is not auto, 1 or 0; using auto");
    }
  }
  if (const char *v = lookup(kCacheBytes)) {
    size_t b = 0;
    if (ParseBytes(v, &b) && b >= 4096) {
      c.staging_cache_bytes = b;
    } else {
      c.warnings.push_back(std::string(kCacheBytes) + "='" + v +
                           "' is not a size of at least 4K; using 256M");
    }
  }
  if (const char *v = lookup(kChunkBytes)) {
    size_t b = 0;
    if (strcasecmp(v, "auto") == 0) {
      c.pipeline_chunk_bytes = 0;
    } else if (ParseBytes(v, &b) && b >= 1) {
      c.pipeline_chunk_bytes = b;
    } else {
      c.warnings.push_back(std::string(kChunkBytes) + "='" + v +
                           "' is not auto or a positive size; using auto");
    }
  }
  if (const char *v = lookup(kHostPiece)) {
    size_t b = 0;
    if (ParseBytes(v, &b)) {
      c.host_piece_bytes = b;
    } else {
      c.warnings.push_back(std::string(kHostPiece) + "='" + v +
                           "' is not a size (0 = never cut); using 16M");
    }
  }
  if (const char *v = lookup(kHostPieceThreshold)) {
    size_t b = 0;
    if (ParseBytes(v, &b)) {
      c.host_piece_threshold = b;
    } else {
      c.warnings.push_back(std::string(kHostPieceThreshold) + "='" + v +
                           "' is not a size; using 16M");
    }
  }
  if (const char *v = lookup(kDirect)) {
    if (!ParseTriState(v, &c.mpi_device_direct)) {
      c.warnings.push_back(std::string(kDirect) + "='" + v +
                           "' is not auto, 1 or 0; using auto");
    }
  }
  if (const char *v = lookup(kBackend)) {
    if (!ParseBackendChoice(v, &c.backend)) {
      c.warnings.push_back(std::string(kBackend) + "='" + v +
                           "' is not auto, mpi or ccl; using auto");
    }
  }
  if (const char *v = lookup(kHierarchy); v != nullptr && *v != '\0') {
    const std::string h = v;
    if (h == "auto" || h == "0" || h == "1") {
      c.hierarchy = h;
    } else {
      c.warnings.push_back(std::string(kHierarchy) + "='" + v +
                           "' is not auto, 0 or 1; using auto");
    }
  }
  if (const char *v = lookup(kHierMin); v != nullptr && *v != '\0') {
    if (!ParseBytes(v, &c.hierarchy_min_bytes)) {
      c.hierarchy_min_bytes = size_t{16} << 20;
      c.warnings.push_back(std::string(kHierMin) + "='" + v + "' is not a size; using 16M");
    }
  }
  if (const char *v = lookup(kSimCcl)) {
    if (!ParseBool(v, &c.sim_ccl)) {
      c.warnings.push_back(std::string(kSimCcl) + "='" + v + "' is not 0 or 1; using 0");
    }
  }
  if (const char *v = lookup(kSimLink)) {
    if (!ParseDouble(v, &c.sim_link_gbps)) {
      c.sim_link_gbps = 0;
      c.warnings.push_back(std::string(kSimLink) + "='" + v +
                           "' is not a non-negative number; using 0 (unthrottled)");
    }
  }
  if (const char *v = lookup(kSimCclFail)) {
    if (!ParseBool(v, &c.sim_ccl_fail)) {
      c.warnings.push_back(std::string(kSimCclFail) + "='" + v + "' is not 0 or 1; using 0");
    }
  }
  if (const char *v = lookup(kTestNodes)) {
    const std::string t = v;
    if (t.find_first_not_of("0123456789,") == std::string::npos) {
      c.test_nodes = t;
    } else {
      c.warnings.push_back(std::string(kTestNodes) + "='" + v +
                           "' is not node sizes like 2,2; using the real nodes");
    }
  }
  if (const char *v = lookup(kTimeout)) {
    if (!ParseInt(v, 0, 1 << 30, &c.timeout_sec)) {
      // A well-formed integer outside the range deserves the range, not
      // "not a number" (2147483648 was reported as not a number).
      char *end = nullptr;
      (void)std::strtoll(v, &end, 10);
      const bool integer = end != v && *end == '\0';
      c.warnings.push_back(
          std::string(kTimeout) + "='" + v + "' " +
          (integer ? "is out of range (0 to " + std::to_string(1 << 30) +
                         " seconds; 0 disables the watchdog)"
                   : std::string("is not a non-negative number of seconds")) +
          "; using 1800");
    }
  }
  return c;
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

std::vector<std::string> Config::Describe() const {
  return {
      std::string(kDebug) + "=" + (log_level_set ? LogLevelName(log_level) : ""),
      std::string(kDebugFile) + "=" + log_file,
      std::string(kDebugSubsys) + "=" + LogSubsysNames(log_subsys),
      std::string(kAbort) + "=" + (abort_on_error ? "1" : "0"),
      std::string(kCheck) + "=" + (check ? "1" : "0"),
      std::string(kDevice) + "=" + device,
      std::string(kLocalRank) + "=" + local_rank,
      std::string(kStrict) + "=" + (strict_binding ? "1" : "0"),
      std::string(kSimGbps) + "=" + FormatNumber(sim_copy_gbps),
      std::string(kSimLatency) + "=" + FormatNumber(sim_copy_latency_us),
      std::string(kSimCount) + "=" + std::to_string(sim_device_count),
      std::string(kSimPinned) + "=" + (sim_pinned ? "1" : "0"),
      std::string(kStagingPinned) + "=" + staging_pinned,
      std::string(kCacheBytes) + "=" + std::to_string(staging_cache_bytes),
      std::string(kChunkBytes) + "=" +
          (pipeline_chunk_bytes == 0 ? std::string("auto") : std::to_string(pipeline_chunk_bytes)),
      std::string(kHostPiece) + "=" + std::to_string(host_piece_bytes),
      std::string(kHostPieceThreshold) + "=" + std::to_string(host_piece_threshold),
      std::string(kDirect) + "=" + mpi_device_direct,
      std::string(kBackend) + "=" + BackendChoiceName(backend),
      std::string(kTimeout) + "=" + std::to_string(timeout_sec),
      std::string(kHierarchy) + "=" + hierarchy,
      std::string(kHierMin) + "=" + std::to_string(hierarchy_min_bytes),
      std::string(kSimCcl) + "=" + (sim_ccl ? "1" : "0"),
      std::string(kSimLink) + "=" + FormatNumber(sim_link_gbps),
      std::string(kSimCclFail) + "=" + (sim_ccl_fail ? "1" : "0"),
      std::string(kTestNodes) + "=" + test_nodes,
  };
}

const Config &GlobalConfig() { return Storage(); }

// Only infinicclInit calls this, before any collective can run.
void ReloadGlobalConfig() { Storage() = Config::FromEnvironment(); }

}  // namespace infiniccl
