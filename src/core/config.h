// Config: every environment variable the library reads, in one place, with
// its default and one line of documentation. docs/CONFIG.md and
// infiniccl-info list the same table (Config::Table()).
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace infiniccl {

enum class LogLevel { kNone = 0, kWarn = 1, kInfo = 2, kTrace = 3 };

// INFINICCL_BACKEND: auto picks per call; mpi never uses a CCL; ccl makes
// every call that cannot take the CCL an error instead of a fallback.
// Resolved once here, so a collective reads an enum, not a string.
enum class BackendChoice { kAuto, kMpi, kCcl };

struct Config {
  LogLevel log_level = LogLevel::kWarn;  // INFINICCL_DEBUG
  std::string log_file;                  // INFINICCL_DEBUG_FILE
  bool abort_on_error = false;           // INFINICCL_ABORT_ON_ERROR
  bool check = false;                    // INFINICCL_CHECK
  std::string device = "auto";           // INFINICCL_DEVICE
  std::string local_rank;                // INFINICCL_LOCAL_RANK ("" = launcher)
  bool strict_binding = false;           // INFINICCL_STRICT_BINDING
  double sim_copy_gbps = 0;              // INFINICCL_SIM_COPY_GBPS (0 = unthrottled)
  int sim_device_count = 8;              // INFINICCL_SIM_DEVICE_COUNT
  bool sim_pinned = true;                // INFINICCL_SIM_PINNED
  std::string staging_pinned = "auto";   // INFINICCL_STAGING_PINNED: auto|1|0
  size_t staging_cache_bytes = size_t{256} << 20;  // INFINICCL_STAGING_CACHE_BYTES
  size_t pipeline_chunk_bytes = size_t{4} << 20;   // INFINICCL_PIPELINE_CHUNK_BYTES
  size_t host_piece_bytes = size_t{16} << 20;      // INFINICCL_HOST_PIECE_BYTES (0 = never cut)
  size_t host_piece_threshold = size_t{16} << 20;  // INFINICCL_HOST_PIECE_THRESHOLD
  std::string mpi_device_direct = "auto";        // INFINICCL_MPI_DEVICE_DIRECT: auto|1|0
  BackendChoice backend = BackendChoice::kAuto;  // INFINICCL_BACKEND: auto|mpi|ccl
  int timeout_sec = 1800;  // INFINICCL_TIMEOUT_SEC (0 = no watchdog)

  // Problems found while parsing (unknown values): logged as WARN once the
  // logger exists; the default is used instead.
  std::vector<std::string> warnings;

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
  // "NAME=value" for each entry, as this config resolved it.
  std::vector<std::string> Describe() const;
};

// The process-wide config, parsed once on first use.
const Config &GlobalConfig();
// Re-reads the environment (infinicclInit calls it so that variables set by
// the program before Init take effect).
void ReloadGlobalConfig();

const char *LogLevelName(LogLevel level);
// "auto", "mpi" or "ccl": the spelling INFINICCL_BACKEND takes.
const char *BackendChoiceName(BackendChoice choice);

// "4M", "256KiB", "1g", "65536" -> bytes; false if malformed.
bool ParseBytes(const char *text, size_t *out);

}  // namespace infiniccl
