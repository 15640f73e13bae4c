#include "core/config.h"

#include <cstdlib>
#include <cstring>
#include <strings.h>

namespace infiniccl {

namespace {

const char *kDebug = "INFINICCL_DEBUG";
const char *kDebugFile = "INFINICCL_DEBUG_FILE";
const char *kAbort = "INFINICCL_ABORT_ON_ERROR";

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
  };
}

const Config &GlobalConfig() { return Storage(); }

// Only infinicclInit calls this, before any collective can run.
void ReloadGlobalConfig() { Storage() = Config::FromEnvironment(); }

}  // namespace infiniccl
