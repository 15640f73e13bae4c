// The element-wise reduction the library does itself on host memory (the
// shared-memory transport, backend/shm/): dst = srcs[0] op srcs[1] op ...
#pragma once

#include <infiniccl/infiniccl.h>

#include <cstddef>

namespace infiniccl {

// dst[i] = srcs[0][i] op ... op srcs[n-1][i] for i < count, n >= 1. dst may
// be one of the sources (element by element, in place). Integers wrap as
// two's complement on overflow; float16 and bfloat16 are reduced in float and
// rounded once. Avg is the sum divided by `avg_divisor` (DivideInPlace's
// rules: C integer division for integer types). Vectorised: the sources are
// combined a block at a time through a small buffer in cache.
// `copy`, when not null, receives the result too (a second destination, not
// overlapping dst), written from cache block by block.
void ReduceInto(void *dst, const void *const *srcs, int n, size_t count,
                infinicclDataType_t dtype, infinicclRedOp_t op, int avg_divisor,
                void *copy = nullptr);

}  // namespace infiniccl
