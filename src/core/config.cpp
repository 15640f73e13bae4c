#include "core/config.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <strings.h>

namespace infiniccl {

namespace {

const char *kDebug = "INFINICCL_DEBUG";
const char *kDebugFile = "INFINICCL_DEBUG_FILE";
const char *kAbort = "INFINICCL_ABORT_ON_ERROR";
const char *kDevice = "INFINICCL_DEVICE";
const char *kLocalRank = "INFINICCL_LOCAL_RANK";
const char *kStrict = "INFINICCL_STRICT_BINDING";
const char *kSimGbps = "INFINICCL_SIM_COPY_GBPS";
const char *kSimCount = "INFINICCL_SIM_DEVICE_COUNT";
const char *kSimPinned = "INFINICCL_SIM_PINNED";

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

bool ParseLevel(const char *v, LogLevel *out) {
  struct {
    const char *name;
    LogLevel level;
  } static const kLevels[] = {{"NONE", LogLevel::kNone},
                              {"WARN", LogLevel::kWarn},
                              {"INFO", LogLevel::kInfo},
                              {"TRACE", LogLevel::kTrace}};
  for (const auto &l : kLevels) {
    if (strcasecmp(v, l.name) == 0) return *out = l.level, true;
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

const char *LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kNone: return "NONE";
    case LogLevel::kWarn: return "WARN";
    case LogLevel::kInfo: return "INFO";
    case LogLevel::kTrace: return "TRACE";
  }
  return "?";
}

const std::vector<Config::Entry> &Config::Table() {
  static const std::vector<Entry> kTable = {
      {kDebug, "WARN",
       "Log level: NONE, WARN, INFO or TRACE. Lines go to stderr, prefixed "
       "with host:pid:rank."},
      {kDebugFile, "",
       "Write the log to this file instead of stderr; %h is replaced by the "
       "host name and %p by the pid."},
      {kAbort, "0",
       "1: abort the job (MPI_Abort) on the first failed call instead of "
       "returning an error code (fail-fast, for debugging)."},
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
      {kSimCount, "8", "Emulated device only: number of devices it reports (1..1024)."},
      {kSimPinned, "1",
       "Emulated device only: 0 makes pinned host allocation unavailable, to "
       "exercise the pageable fallback."},
  };
  return kTable;
}

Config Config::Parse(const Lookup &lookup) {
  Config c;
  if (const char *v = lookup(kDebug)) {
    if (!ParseLevel(v, &c.log_level)) {
      c.warnings.push_back(std::string(kDebug) + "='" + v +
                           "' is not NONE, WARN, INFO or TRACE; using WARN");
    }
  }
  if (const char *v = lookup(kDebugFile)) c.log_file = v;
  if (const char *v = lookup(kAbort)) {
    if (!ParseBool(v, &c.abort_on_error)) {
      c.warnings.push_back(std::string(kAbort) + "='" + v +
                           "' is not 0 or 1; using 0");
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
  return c;
}

Config Config::FromEnvironment() {
  return Parse([](const char *name) { return std::getenv(name); });
}

std::vector<std::string> Config::Describe() const {
  return {
      std::string(kDebug) + "=" + LogLevelName(log_level),
      std::string(kDebugFile) + "=" + log_file,
      std::string(kAbort) + "=" + (abort_on_error ? "1" : "0"),
      std::string(kDevice) + "=" + device,
      std::string(kLocalRank) + "=" + local_rank,
      std::string(kStrict) + "=" + (strict_binding ? "1" : "0"),
      std::string(kSimGbps) + "=" + FormatNumber(sim_copy_gbps),
      std::string(kSimCount) + "=" + std::to_string(sim_device_count),
      std::string(kSimPinned) + "=" + (sim_pinned ? "1" : "0"),
  };
}

const Config &GlobalConfig() { return Storage(); }

// Only infinicclInit calls this, before any collective can run.
void ReloadGlobalConfig() { Storage() = Config::FromEnvironment(); }

}  // namespace infiniccl
