// Config: every environment variable the library reads, in one place, with
// its default and one line of documentation. docs/CONFIG.md and
// infiniccl-info list the same table (Config::Table()).
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace infiniccl {

// NCCL's order: VERSION prints only the version line at Init; WARN adds
// warnings, INFO facts and paths, TRACE every call.
enum class LogLevel { kNone = 0, kVersion = 1, kWarn = 2, kInfo = 3, kTrace = 4 };

// INFINICCL_DEBUG_SUBSYS: which parts of the library may log at INFO and
// TRACE (WARN is never filtered, as in NCCL). A line's subsystem follows
// from the source file it is written in (log.h), so call sites name none.
enum LogSubsys : unsigned {
  kSubsysInit = 1u << 0,      // Init/Finalize, config, communicators
  kSubsysBind = 1u << 1,      // device binding (local rank, device choice)
  kSubsysColl = 1u << 2,      // collectives, groups, routes, INFINICCL_CHECK
  kSubsysStaging = 1u << 3,   // host staging pool and pipeline
  kSubsysCcl = 1u << 4,       // native CCLs (NCCL, MCCL)
  kSubsysMpi = 1u << 5,       // the MPI backend
  kSubsysDevice = 1u << 6,    // device runtimes (CUDA, ..., sim)
  kSubsysWatchdog = 1u << 7,  // watchdog, calls in flight
  kSubsysAll = (1u << 8) - 1,
};

// INFINICCL_BACKEND: auto picks per call; mpi never uses a CCL; ccl makes
// every call that cannot take the CCL an error instead of a fallback.
// Resolved once here, so a collective reads an enum, not a string.
enum class BackendChoice { kAuto, kMpi, kCcl };

struct Config {
  LogLevel log_level = LogLevel::kWarn;  // INFINICCL_DEBUG
  // INFINICCL_DEBUG was given. Unset, the library prints its own warnings
  // (settings, fallbacks) but not the errors it returns: the caller has the
  // code and infinicclGetLastError, and a program that probes must not get
  // noise it did not ask for (NCCL is silent unless NCCL_DEBUG asks).
  bool log_level_set = false;
  unsigned log_subsys = kSubsysAll;      // INFINICCL_DEBUG_SUBSYS
  std::string log_file;                  // INFINICCL_DEBUG_FILE
  bool abort_on_error = false;           // INFINICCL_ABORT_ON_ERROR
  bool check = false;                    // INFINICCL_CHECK
  std::string device = "auto";           // INFINICCL_DEVICE
  std::string local_rank;                // INFINICCL_LOCAL_RANK ("" = launcher)
  bool strict_binding = false;           // INFINICCL_STRICT_BINDING
  double sim_copy_gbps = 0;              // INFINICCL_SIM_COPY_GBPS (0 = unthrottled)
  double sim_copy_latency_us = 0;        // INFINICCL_SIM_COPY_LATENCY_US
  int sim_device_count = 8;              // INFINICCL_SIM_DEVICE_COUNT
  bool sim_pinned = true;                // INFINICCL_SIM_PINNED
  std::string staging_pinned = "auto";   // INFINICCL_STAGING_PINNED: auto|1|0
  size_t staging_cache_bytes = size_t{256} << 20;  // INFINICCL_STAGING_CACHE_BYTES
  // INFINICCL_PIPELINE_CHUNK_BYTES; 0 (auto) = the device runtime's default.
  size_t pipeline_chunk_bytes = 0;
  size_t host_piece_bytes = size_t{16} << 20;      // INFINICCL_HOST_PIECE_BYTES (0 = never cut)
  size_t host_piece_threshold = size_t{16} << 20;  // INFINICCL_HOST_PIECE_THRESHOLD
  std::string mpi_device_direct = "auto";        // INFINICCL_MPI_DEVICE_DIRECT: auto|1|0
  BackendChoice backend = BackendChoice::kAuto;  // INFINICCL_BACKEND: auto|mpi|ccl
  int timeout_sec = 1800;  // INFINICCL_TIMEOUT_SEC (0 = no watchdog)
  std::string hierarchy = "auto";  // INFINICCL_HIERARCHY: auto|1|0
  size_t hierarchy_min_bytes = size_t{16} << 20;  // INFINICCL_HIERARCHY_MIN_BYTES
  bool sim_ccl = false;            // INFINICCL_SIM_CCL
  double sim_link_gbps = 0;        // INFINICCL_SIM_LINK_GBPS (0 = unthrottled)
  bool sim_ccl_fail = false;       // INFINICCL_SIM_CCL_FAIL (test)
  std::string test_nodes;          // INFINICCL_TEST_NODES (test: "2,2")

  // Problems found while parsing (unknown values): logged as WARN once the
  // logger exists; the default is used instead.
  std::vector<std::string> warnings;
  // One message per INFINICCL_* variable of the environment that no entry
  // of Table() names (a misspelling would otherwise be ignored silently);
  // filled by FromEnvironment, logged at WARN by Init.
  std::vector<std::string> unknown_variables;

  using Lookup = std::function<const char *(const char *)>;
  // Parses from `lookup` (getenv in production, a map in tests).
  static Config Parse(const Lookup &lookup);
  static Config FromEnvironment();

  struct Entry {
    const char *name;
    const char *default_value;
    const char *doc;
  };
  static const std::vector<Entry> &Table();
  // For each name that starts with INFINICCL_ and is neither in Table() nor
  // one the tools read (icclrun's INFINICCL_MPI, INFINICCL_MPIRUN, the
  // Python package's INFINICCL_LIBRARY), a
  // warning naming it and the nearest known name.
  static std::vector<std::string> UnknownVariables(const std::vector<std::string> &names);
  // "NAME=value" for each entry, as this config resolved it.
  std::vector<std::string> Describe() const;
};

// The process-wide config, parsed once on first use.
const Config &GlobalConfig();
// Re-reads the environment (infinicclInit calls it so that variables set by
// the program before Init take effect).
void ReloadGlobalConfig();

const char *LogLevelName(LogLevel level);
// "ALL", or the enabled subsystems comma-separated ("INIT,COLL").
std::string LogSubsysNames(unsigned mask);
// "auto", "mpi" or "ccl": the spelling INFINICCL_BACKEND takes.
const char *BackendChoiceName(BackendChoice choice);

// "4M", "256KiB", "1g", "65536", "8B" -> bytes (K, M, G are powers of
// 1024); false if malformed or too large. The one size parser of the
// library and its tools (infiniccl-bench's -b/-e/--elements use it too).
bool ParseBytes(const char *text, size_t *out);

}  // namespace infiniccl
