// ReduceInto's kernel (core/reduce_kernel.h) for AVX-512 F, BW, VL and DQ,
// with AVX2, FMA and F16C (the flags: src/CMakeLists.txt).
#define INFINICCL_REDUCE_NS reduce_avx512
#include "core/reduce_kernel.h"
