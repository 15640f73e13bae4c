// ReduceInto's kernel (core/reduce_kernel.h) at the build's own flags
// (x86-64: SSE2): the one every CPU runs.
#define INFINICCL_REDUCE_NS reduce_baseline
#include "core/reduce_kernel.h"
