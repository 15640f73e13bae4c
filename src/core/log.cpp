#include "core/log.h"

#include <infiniccl/infiniccl.h>

#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>

namespace infiniccl {

namespace log_detail {
std::atomic<int> g_level{static_cast<int>(GlobalConfig().log_level)};
std::atomic<unsigned> g_subsys{GlobalConfig().log_subsys};
std::atomic<bool> g_returned_errors{GlobalConfig().log_level_set &&
                                    GlobalConfig().log_level >= LogLevel::kWarn};
// INFINICCL_DEBUG=VERSION or more, given explicitly (NCCL prints its version
// only when NCCL_DEBUG is set).
std::atomic<bool> g_version{GlobalConfig().log_level_set &&
                            GlobalConfig().log_level >= LogLevel::kVersion};
}

namespace {

std::mutex g_mutex;
FILE *g_file = nullptr;  // nullptr: stderr
std::atomic<int> g_rank{-1};

std::string ExpandPath(const std::string &pattern) {
  char host[256] = "unknown";
  gethostname(host, sizeof(host) - 1);
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size()) {
      if (pattern[i + 1] == 'h') { out += host; ++i; continue; }
      if (pattern[i + 1] == 'p') { out += std::to_string(getpid()); ++i; continue; }
    }
    out += pattern[i];
  }
  return out;
}

}  // namespace

void ConfigureLogging(const Config &config) {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_file != nullptr) {
      std::fclose(g_file);
      g_file = nullptr;
    }
    if (!config.log_file.empty()) {
      g_file = std::fopen(ExpandPath(config.log_file).c_str(), "a");
    }
  }
  log_detail::g_level.store(static_cast<int>(config.log_level));
  log_detail::g_subsys.store(config.log_subsys);
  log_detail::g_returned_errors.store(config.log_level_set &&
                                      config.log_level >= LogLevel::kWarn);
  log_detail::g_version.store(config.log_level_set &&
                              config.log_level >= LogLevel::kVersion);
  if (!config.log_file.empty() && g_file == nullptr) {
    INFINICCL_WARN("cannot open INFINICCL_DEBUG_FILE '%s'; logging to stderr",
                   config.log_file.c_str());
  }
  for (const std::string &w : config.warnings) INFINICCL_WARN("%s", w.c_str());
  for (const std::string &w : config.unknown_variables) INFINICCL_WARN("%s", w.c_str());
}

void SetLogRank(int rank) { g_rank.store(rank); }

namespace {

void Emit(const char *label, const char *fmt, va_list ap) {
  static char host[64] = "";
  char msg[2048];
  std::vsnprintf(msg, sizeof(msg), fmt, ap);
  std::lock_guard<std::mutex> lock(g_mutex);
  if (host[0] == '\0') {
    gethostname(host, sizeof(host) - 1);
    if (char *dot = std::strchr(host, '.')) *dot = '\0';
  }
  FILE *out = g_file != nullptr ? g_file : stderr;
  std::fprintf(out, "%s:%d:%d INFINICCL %s %s\n", host, static_cast<int>(getpid()),
               g_rank.load(), label, msg);
  std::fflush(out);
}

}  // namespace

void LogVersion(const char *details) {
  static std::atomic<bool> printed{false};
  if (g_rank.load() != 0 || !log_detail::g_version.load() || printed.exchange(true))
    return;
  // What this build can use, from the same definitions that compiled it in.
  const char *const built[] = {
#ifdef INFINICCL_WITH_NVIDIA
      "cuda",
#endif
#ifdef INFINICCL_WITH_METAX
      "maca",
#endif
#ifdef INFINICCL_WITH_ILUVATAR
      "iluvatar",
#endif
#ifdef INFINICCL_WITH_MOORE
      "musa",
#endif
#ifdef INFINICCL_WITH_NCCL
      "nccl",
#endif
#ifdef INFINICCL_WITH_MCCL
      "mccl",
#endif
      "mpi"};
  std::string list;
  for (const char *b : built) list += (list.empty() ? "" : ",") + std::string(b);
  LogPrint(LogLevel::kInfo, "InfiniCCL version %d.%d.%d (built with %s; MPI: %s)",
           INFINICCL_MAJOR, INFINICCL_MINOR, INFINICCL_PATCH, list.c_str(), details);
}

void LogPrint(LogLevel level, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  Emit(LogLevelName(level), fmt, ap);
  va_end(ap);
}

void LogError(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  Emit("ERROR", fmt, ap);
  va_end(ap);
}

}  // namespace infiniccl
