// Element types and reduction operators: names, sizes, MPI equivalents, and
// element-wise load/store/combine on raw buffers (float16 and bfloat16
// included, accumulating in float and rounding to nearest even per step, as
// the library promises, with the library's own conversions: core/float16.h).
#ifndef INFINICCL_BENCH_DTYPE_H_
#define INFINICCL_BENCH_DTYPE_H_

#include <infiniccl/infiniccl.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/dtype.h"
#include "mpi_include.h"

namespace bench {

enum class Kind { kSigned, kUnsigned, kFloat, kHalf, kBFloat };

struct DType {
  const char *name;  // canonical option spelling, e.g. "float32"
  infinicclDataType_t id;
  size_t size;
  Kind kind;
};

// Accepts the twelve canonical names and the aliases half, float, double,
// char, int (also fp16, bf16). Returns nullptr for anything else.
const DType *FindDType(const std::string &name);
const char *DTypeNames();  // for --help

// MPI datatype for data movement (float16/bfloat16 as MPI_UINT16_T) and for
// reductions (MPI_DATATYPE_NULL for float16/bfloat16: MPI has no such type).
MPI_Datatype MpiMoveType(const DType &t);
MPI_Datatype MpiReduceType(const DType &t);

struct RedOp {
  const char *name;  // "sum", ...
  infinicclRedOp_t id;
};
const RedOp *FindRedOp(const std::string &name);
// MPI_SUM for Avg: raw MPI modes sum and then divide locally.
MPI_Op MpiOp(infinicclRedOp_t op);

// Element i of buffer p, as double (exact for every value the benchmark uses).
double Load(const DType &t, const void *p, size_t i);
// Stores v rounded to the type (round to nearest even for floating types,
// C conversion for integers).
void Store(const DType &t, void *p, size_t i, double v);
// v as it reads back after Store.
double RoundTo(const DType &t, double v);

// out[i] = a[i] op b[i] for i < n (Avg combines as Sum). out may alias a or b.
// Avg's division afterwards is the library's (infiniccl::DivideInPlace).
void Combine(const DType &t, infinicclRedOp_t op, void *out, const void *a, const void *b,
             size_t n);

}  // namespace bench

#endif  // INFINICCL_BENCH_DTYPE_H_
