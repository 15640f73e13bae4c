// Logging in NCCL_DEBUG's style: `host:pid:rank INFINICCL LEVEL message`.
// The level check is one relaxed atomic load, so disabled lines cost nothing
// on the hot path.
#pragma once

#include <atomic>

#include "core/config.h"

namespace infiniccl {

namespace log_detail {
extern std::atomic<int> g_level;
}

inline bool LogEnabled(LogLevel level) {
  return static_cast<int>(level) <=
         log_detail::g_level.load(std::memory_order_relaxed);
}

// Applies the config (level, file) and prints its parse warnings.
void ConfigureLogging(const Config &config);
// The rank shown in the prefix (world rank once MPI is up; -1 before).
void SetLogRank(int rank);

void LogPrint(LogLevel level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

// An ERROR line, printed whatever INFINICCL_DEBUG says (even NONE): it is
// written just before the library ends the job (watchdog), so it must never
// be filtered away.
void LogError(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define INFINICCL_LOG(level, ...)                                 \
  do {                                                            \
    if (::infiniccl::LogEnabled(level))                           \
      ::infiniccl::LogPrint(level, __VA_ARGS__);                  \
  } while (0)
#define INFINICCL_WARN(...) INFINICCL_LOG(::infiniccl::LogLevel::kWarn, __VA_ARGS__)
#define INFINICCL_INFO(...) INFINICCL_LOG(::infiniccl::LogLevel::kInfo, __VA_ARGS__)
#define INFINICCL_TRACE(...) INFINICCL_LOG(::infiniccl::LogLevel::kTrace, __VA_ARGS__)

}  // namespace infiniccl
