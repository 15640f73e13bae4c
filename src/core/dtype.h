// Facts about the public data types and reduction ops, and the one local
// element-wise operation the backends need (Avg's division).
#pragma once

#include <infiniccl/infiniccl.h>

#include <cstddef>

namespace infiniccl {

inline bool IsValidDataType(int dtype) {
  return dtype >= 0 && dtype < infinicclNumTypes;
}
inline bool IsValidRedOp(int op) { return op >= 0 && op < infinicclNumOps; }
// Band, Bor, Bxor: defined on the integer types only.
inline bool IsBitwiseRedOp(int op) {
  return op == infinicclBand || op == infinicclBor || op == infinicclBxor;
}
// Int8..UInt64 (values 0..7), the types the bitwise ops take.
inline bool IsIntegerDataType(int dtype) { return dtype >= infinicclInt8 && dtype <= infinicclUInt64; }

// Bytes per element; 0 for an invalid type.
size_t DataTypeSize(infinicclDataType_t dtype);
const char *DataTypeName(infinicclDataType_t dtype);  // "float16", ...
const char *RedOpName(infinicclRedOp_t op);            // "sum", ...

// buf[i] /= divisor for count elements: exact quotient (rounded once to the
// type) for floating types, C integer division for integer types. This is
// how Avg is done after a Sum.
void DivideInPlace(void *buf, size_t count, infinicclDataType_t dtype,
                   int divisor);

}  // namespace infiniccl
