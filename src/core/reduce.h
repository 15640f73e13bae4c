// The element-wise reduction the library does itself on host memory (the
// shared-memory transport, backend/shm/): dst = srcs[0] op srcs[1] op ...
#pragma once

#include <infiniccl/infiniccl.h>

#include <cstddef>
#include <string>

namespace infiniccl {

// dst[i] = srcs[0][i] op ... op srcs[n-1][i] for i < count, n >= 1. dst may
// be one of the sources (element by element, in place). Integers wrap as
// two's complement on overflow; float16 and bfloat16 are reduced in float and
// rounded once. Avg is the sum divided by `avg_divisor` (DivideInPlace's
// rules: C integer division for integer types). Band, Bor and Bxor combine
// the bits of the integer types and write nothing for the others (validation
// refuses those calls). Vectorised: the sources are
// combined a block at a time through a small buffer in cache.
// `copy`, when not null, receives the result too (a second destination, not
// overlapping dst), written from cache block by block.
// Runs the kernel of ReduceSimdLevel(); every level gives the same bits.
void ReduceInto(void *dst, const void *const *srcs, int n, size_t count,
                infinicclDataType_t dtype, infinicclRedOp_t op, int avg_divisor,
                void *copy = nullptr);

// The instruction sets ReduceInto's kernel is compiled for
// (core/reduce_kernel.h): the build's own flags, AVX2 (with FMA, F16C) and
// AVX-512 (F, BW, VL, DQ). Off x86-64 only kBaseline exists.
enum class SimdLevel { kBaseline = 0, kAvx2 = 1, kAvx512 = 2 };

// "baseline", "avx2" or "avx512": the spelling INFINICCL_SIMD takes.
const char *SimdLevelName(SimdLevel level);
// The highest level this build has and this CPU (and its OS) runs.
SimdLevel BestSimdLevel();
// The level INFINICCL_SIMD asks for (`setting`: auto, avx512, avx2 or
// baseline) on a CPU whose best is `best`: auto, or a level above `best`,
// gives `best`. *note says why when the setting is not honoured as written.
SimdLevel ChooseSimdLevel(const std::string &setting, SimdLevel best, std::string *note);
// The level ReduceInto runs: chosen at its first call from the global config
// and kept for the process (one INFO line says which).
SimdLevel ReduceSimdLevel();
// ReduceInto with the kernel of `level`, for tests and A/B measurements;
// false, writing nothing, when this build or CPU lacks the level.
bool ReduceIntoAt(SimdLevel level, void *dst, const void *const *srcs, int n, size_t count,
                  infinicclDataType_t dtype, infinicclRedOp_t op, int avg_divisor,
                  void *copy = nullptr);

}  // namespace infiniccl
