// Config: every environment variable the library reads. Each is declared
// once, in config.cpp's Config::Table(): name, default, accepted values,
// meaning and the field below that it fills.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <variant>
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

// INFINICCL_STAGING_PINNED, INFINICCL_MPI_DEVICE_DIRECT: auto lets the
// library decide; 1 (true, yes, on) forces, 0 (false, no, off) forbids.
enum class Tristate { kOff = 0, kOn = 1, kAuto = 2 };

// Each field's default is its entry's in Table(), set by Config().
struct Config {
  LogLevel log_level;  // INFINICCL_DEBUG (unset: WARN)
  // INFINICCL_DEBUG was given. Unset, the library prints its own warnings
  // (settings, fallbacks) but not the errors it returns: the caller has the
  // code and infinicclGetLastError, and a program that probes must not get
  // noise it did not ask for (NCCL is silent unless NCCL_DEBUG asks).
  bool log_level_set;
  std::string log_file;         // INFINICCL_DEBUG_FILE
  unsigned log_subsys;          // INFINICCL_DEBUG_SUBSYS
  bool abort_on_error;          // INFINICCL_ABORT_ON_ERROR
  bool check;                   // INFINICCL_CHECK
  std::string device;           // INFINICCL_DEVICE: auto|sim|cpu
  std::string local_rank;       // INFINICCL_LOCAL_RANK ("" = launcher)
  bool strict_binding;          // INFINICCL_STRICT_BINDING
  Tristate staging_pinned;      // INFINICCL_STAGING_PINNED
  size_t staging_cache_bytes;   // INFINICCL_STAGING_CACHE_BYTES
  size_t pipeline_chunk_bytes;  // INFINICCL_PIPELINE_CHUNK_BYTES (0 = the runtime's)
  size_t host_piece_bytes;      // INFINICCL_HOST_PIECE_BYTES (0 = never cut)
  size_t host_piece_threshold;  // INFINICCL_HOST_PIECE_THRESHOLD
  Tristate mpi_device_direct;   // INFINICCL_MPI_DEVICE_DIRECT
  BackendChoice backend;        // INFINICCL_BACKEND
  int timeout_sec;              // INFINICCL_TIMEOUT_SEC (0 = no watchdog)
  std::string socket_ifname;    // INFINICCL_SOCKET_IFNAME ("" = the first non-loopback)
  Tristate async;               // INFINICCL_ASYNC
  bool device_wait_host_func;   // INFINICCL_DEVICE_WAIT=host_func
  double sim_copy_latency_us;   // INFINICCL_SIM_COPY_LATENCY_US
  double sim_copy_gbps;         // INFINICCL_SIM_COPY_GBPS (0 = unthrottled)
  int sim_device_count;         // INFINICCL_SIM_DEVICE_COUNT
  bool sim_pinned;              // INFINICCL_SIM_PINNED
  bool sim_hostfn_serial;       // INFINICCL_SIM_HOSTFN_SERIAL
  bool sim_pageable_sync;       // INFINICCL_SIM_PAGEABLE_SYNC
  bool sim_implicit_sync;       // INFINICCL_SIM_IMPLICIT_SYNC
  bool sim_stream_memops;       // INFINICCL_SIM_STREAM_MEMOPS
  Tristate shm;                 // INFINICCL_SHM
  size_t shm_max_bytes;         // INFINICCL_SHM_MAX_BYTES (SIZE_MAX = auto)
  std::string simd;             // INFINICCL_SIMD: auto|avx512|avx2|baseline
  Tristate hierarchy;           // INFINICCL_HIERARCHY
  size_t hierarchy_min_bytes;   // INFINICCL_HIERARCHY_MIN_BYTES (SIZE_MAX = auto)
  bool sim_ccl;                 // INFINICCL_SIM_CCL
  double sim_link_gbps;         // INFINICCL_SIM_LINK_GBPS (0 = unthrottled)
  bool sim_ccl_fail;            // INFINICCL_SIM_CCL_FAIL (test)

  // Problems found while parsing (unknown values): logged as WARN once the
  // logger exists; the default is used instead.
  std::vector<std::string> warnings;
  // One message per INFINICCL_* variable of the environment that no entry
  // of Table() names (a misspelling would otherwise be ignored silently);
  // filled by FromEnvironment, logged at WARN by Init.
  std::vector<std::string> unknown_variables;

  Config();  // every setting at its default

  using Lookup = std::function<const char *(const char *)>;
  // Parses from `lookup` (getenv in production, a map in tests).
  static Config Parse(const Lookup &lookup);
  static Config FromEnvironment();

  // A spelling of a value (the first of each value is the one shown).
  struct Word {
    const char *text;
    int value;
  };
  struct Range {
    double lo = 0, hi = 0;
    const char *unit = "";
  };
  // One setting, declared once in Table(): parsing, defaults, Describe(),
  // infiniccl-info and docs/CONFIG.md's table all read it from there. The
  // field's type says how a value is read: an enum or bool is one of `words`
  // (any case); a number lies in `range` (a size_t takes K, M, G) unless it
  // is one of `words`; the subsystem mask is a list of `words`; a string is
  // one of `words` exactly if there are any, an integer in `range` if that
  // is set, else any text. LogLevel also fills log_level_set.
  struct Entry {
    const char *name;
    const char *default_value;  // as documented; Config() parses it ("" = unset)
    std::variant<bool Config::*, int Config::*, unsigned Config::*, size_t Config::*,
                 double Config::*, std::string Config::*, LogLevel Config::*,
                 Tristate Config::*, BackendChoice Config::*>
        field;
    Range range;
    std::span<const Word> words;
    const char *doc;  // docs/CONFIG.md's "Meaning" (Markdown)
    // Reads `text` into the field of *c; when it cannot, leaves the field
    // alone and says in *why what it accepts.
    bool Read(const char *text, Config *c, std::string *why) const;
    std::string Value(const Config &c) const;  // the field, as Describe() shows it
  };
  static const std::vector<Entry> &Table();
  // For each name that starts with INFINICCL_ and is neither in Table() nor
  // one the tools read (icclrun's INFINICCL_MPI, INFINICCL_MPIRUN, the
  // Python package's INFINICCL_LIBRARY), a
  // warning naming it and the nearest known name.
  static std::vector<std::string> UnknownVariables(const std::vector<std::string> &names);
  // "NAME=value" for each entry, as this config resolved it.
  std::vector<std::string> Describe() const;
  // docs/CONFIG.md's table (Markdown), as infiniccl-info --markdown prints it.
  static std::string MarkdownTable();
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
// Its inverse, in the shortest spelling it reads: 65536 -> "64K",
// 16777216 -> "16M", 1000 -> "1000".
std::string BytesText(size_t bytes);

}  // namespace infiniccl
