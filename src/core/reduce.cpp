// ReduceInto's dispatch: one kernel (core/reduce_kernel.h) per instruction
// set, the one to run chosen once from the CPU and INFINICCL_SIMD.
#include "core/reduce.h"

#if defined(INFINICCL_REDUCE_X86)
#include <cpuid.h>
#endif

#include "core/config.h"
#include "core/log.h"

namespace infiniccl {

// The compilations of core/reduce_kernel.h (reduce_<level>.cpp).
namespace reduce_baseline {
void ReduceInto(void *dst, const void *const *srcs, int n, size_t count,
                infinicclDataType_t dtype, infinicclRedOp_t op, int avg_divisor, void *copy);
}
#if defined(INFINICCL_REDUCE_X86)
namespace reduce_avx2 {
void ReduceInto(void *dst, const void *const *srcs, int n, size_t count,
                infinicclDataType_t dtype, infinicclRedOp_t op, int avg_divisor, void *copy);
}
namespace reduce_avx512 {
void ReduceInto(void *dst, const void *const *srcs, int n, size_t count,
                infinicclDataType_t dtype, infinicclRedOp_t op, int avg_divisor, void *copy);
}
#endif

namespace {

using Kernel = void (*)(void *, const void *const *, int, size_t, infinicclDataType_t,
                        infinicclRedOp_t, int, void *);

#if defined(INFINICCL_REDUCE_X86)
bool HasF16c() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(1, &a, &b, &c, &d) != 0 && (c & bit_F16C) != 0;
}
#endif

bool Runs(SimdLevel level) {
  switch (level) {
    case SimdLevel::kBaseline: return true;
#if defined(INFINICCL_REDUCE_X86)
    // __builtin_cpu_supports also asks the OS (XCR0) for the vector state.
    // F16C from CPUID itself: clang's builtin does not know the name.
    case SimdLevel::kAvx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && HasF16c();
    case SimdLevel::kAvx512:
      return Runs(SimdLevel::kAvx2) && __builtin_cpu_supports("avx512f") &&
             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
             __builtin_cpu_supports("avx512dq");
#endif
    default: return false;
  }
}

Kernel KernelOf(SimdLevel level) {
  switch (level) {
#if defined(INFINICCL_REDUCE_X86)
    case SimdLevel::kAvx2: return &reduce_avx2::ReduceInto;
    case SimdLevel::kAvx512: return &reduce_avx512::ReduceInto;
#endif
    default: return &reduce_baseline::ReduceInto;
  }
}

constexpr SimdLevel kLevels[] = {SimdLevel::kBaseline, SimdLevel::kAvx2, SimdLevel::kAvx512};

SimdLevel Chosen() {
  std::string note;
  const SimdLevel best = BestSimdLevel();
  const SimdLevel level = ChooseSimdLevel(GlobalConfig().simd, best, &note);
  INFINICCL_INFO("host reductions: %s kernels (INFINICCL_SIMD=%s%s%s)", SimdLevelName(level),
                 GlobalConfig().simd.c_str(), note.empty() ? "" : "; ", note.c_str());
  return level;
}

}  // namespace

const char *SimdLevelName(SimdLevel level) {
  switch (level) {
    case SimdLevel::kAvx2: return "avx2";
    case SimdLevel::kAvx512: return "avx512";
    default: return "baseline";
  }
}

SimdLevel BestSimdLevel() {
  static const SimdLevel best = [] {
    SimdLevel b = SimdLevel::kBaseline;
    for (SimdLevel l : kLevels) b = Runs(l) ? l : b;
    return b;
  }();
  return best;
}

SimdLevel ChooseSimdLevel(const std::string &setting, SimdLevel best, std::string *note) {
  note->clear();
  for (SimdLevel l : kLevels) {
    if (setting != SimdLevelName(l)) continue;
    if (l <= best) return l;
    *note = std::string("this CPU or build has no ") + SimdLevelName(l) + ", using " +
            SimdLevelName(best);
    return best;
  }
  return best;  // auto
}

SimdLevel ReduceSimdLevel() {
  static const SimdLevel level = Chosen();
  return level;
}

void ReduceInto(void *dst, const void *const *srcs, int n, size_t count,
                infinicclDataType_t dtype, infinicclRedOp_t op, int avg_divisor, void *copy) {
  static const Kernel kernel = KernelOf(ReduceSimdLevel());
  kernel(dst, srcs, n, count, dtype, op, avg_divisor, copy);
}

bool ReduceIntoAt(SimdLevel level, void *dst, const void *const *srcs, int n, size_t count,
                  infinicclDataType_t dtype, infinicclRedOp_t op, int avg_divisor,
                  void *copy) {
  if (level > BestSimdLevel()) return false;
  KernelOf(level)(dst, srcs, n, count, dtype, op, avg_divisor, copy);
  return true;
}

}  // namespace infiniccl
