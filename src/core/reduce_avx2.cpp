// ReduceInto's kernel (core/reduce_kernel.h) for AVX2, FMA and F16C (the
// flags: src/CMakeLists.txt).
#define INFINICCL_REDUCE_NS reduce_avx2
#include "core/reduce_kernel.h"
