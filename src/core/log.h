// Logging in NCCL_DEBUG's style: `host:pid:rank INFINICCL LEVEL message`.
// The level check is one relaxed atomic load, so disabled lines cost nothing
// on the hot path.
#pragma once

#include <atomic>
#include <type_traits>

#include "core/config.h"

namespace infiniccl {

namespace log_detail {
extern std::atomic<int> g_level;
extern std::atomic<unsigned> g_subsys;
extern std::atomic<bool> g_returned_errors;

constexpr bool StartsWith(const char *s, const char *prefix) {
  while (*prefix != '\0' && *s == *prefix) ++s, ++prefix;
  return *prefix == '\0';
}

// The part of `file` after its last "src/" component ("staging/pool.cpp"),
// so a checkout under some other "src/" directory is not misread.
constexpr const char *AfterSrc(const char *file) {
  const char *tail = file;
  for (const char *p = file; *p != '\0'; ++p) {
    if ((p == file || p[-1] == '/') && StartsWith(p, "src/")) tail = p + 4;
  }
  return tail;
}
}  // namespace log_detail

// The subsystem (INFINICCL_DEBUG_SUBSYS) of a line, from the path of the
// source file that writes it: computed at compile time, so no call site has
// to name one and the filter costs one more load only once INFO is on.
constexpr unsigned LogSubsysOfFile(const char *file) {
  const char *f = log_detail::AfterSrc(file);
  const auto is = [f](const char *prefix) { return log_detail::StartsWith(f, prefix); };
  if (is("staging/")) return kSubsysStaging;
  if (is("backend/ccl/")) return kSubsysCcl;
  if (is("backend/mpi/") || is("mpi/")) return kSubsysMpi;
  if (is("device/")) return kSubsysDevice;
  if (is("comm/binding")) return kSubsysBind;
  if (is("comm/watchdog") || is("comm/inflight") || is("comm/seq_board"))
    return kSubsysWatchdog;
  if (is("api/lifecycle")) return kSubsysInit;
  if (is("route/") || is("api/") || is("comm/group") || is("core/coll_args") ||
      is("progress/"))
    return kSubsysColl;
  return kSubsysInit;
}

inline bool LogEnabled(LogLevel level, unsigned subsys = kSubsysAll) {
  if (static_cast<int>(level) > log_detail::g_level.load(std::memory_order_relaxed))
    return false;
  return level <= LogLevel::kWarn ||
         (subsys & log_detail::g_subsys.load(std::memory_order_relaxed)) != 0;
}

// Whether an error returned to the caller is also printed (at WARN): only
// when INFINICCL_DEBUG asks for WARN or more (see Config::log_level_set).
inline bool LogReturnedErrors() {
  return log_detail::g_returned_errors.load(std::memory_order_relaxed);
}

// Applies the config (level, subsystems, file) and prints its parse
// warnings and the unknown INFINICCL_* variables.
void ConfigureLogging(const Config &config);
// The rank shown in the prefix (world rank once MPI is up; -1 before).
void SetLogRank(int rank);
// INFINICCL_DEBUG=VERSION (or more): "InfiniCCL version X.Y.Z (details)",
// once per process, by world rank 0 (NCCL's habit). Init calls it.
void LogVersion(const char *details);

void LogPrint(LogLevel level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

// An ERROR line, printed whatever INFINICCL_DEBUG says (even NONE): it is
// written just before the library ends the job (watchdog), so it must never
// be filtered away.
void LogError(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define INFINICCL_LOG(level, ...)                                                   \
  do {                                                                              \
    if (::infiniccl::LogEnabled(                                                    \
            level, std::integral_constant<unsigned, ::infiniccl::LogSubsysOfFile(  \
                                                        __FILE__)>::value))         \
      ::infiniccl::LogPrint(level, __VA_ARGS__);                                    \
  } while (0)
#define INFINICCL_WARN(...) INFINICCL_LOG(::infiniccl::LogLevel::kWarn, __VA_ARGS__)
#define INFINICCL_INFO(...) INFINICCL_LOG(::infiniccl::LogLevel::kInfo, __VA_ARGS__)
#define INFINICCL_TRACE(...) INFINICCL_LOG(::infiniccl::LogLevel::kTrace, __VA_ARGS__)

}  // namespace infiniccl
