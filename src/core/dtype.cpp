#include "core/dtype.h"

#include <cstdint>

#include "core/float16.h"

namespace infiniccl {

size_t DataTypeSize(infinicclDataType_t dtype) {
  switch (dtype) {
    case infinicclInt8:
    case infinicclUInt8:
      return 1;
    case infinicclInt16:
    case infinicclUInt16:
    case infinicclFloat16:
    case infinicclBFloat16:
      return 2;
    case infinicclInt32:
    case infinicclUInt32:
    case infinicclFloat32:
      return 4;
    case infinicclInt64:
    case infinicclUInt64:
    case infinicclFloat64:
      return 8;
    default:
      return 0;
  }
}

const char *DataTypeName(infinicclDataType_t dtype) {
  static const char *const kNames[] = {
      "int8",   "int16",  "int32",   "int64",    "uint8",   "uint16",
      "uint32", "uint64", "float16", "bfloat16", "float32", "float64"};
  return IsValidDataType(dtype) ? kNames[dtype] : "invalid";
}

const char *RedOpName(infinicclRedOp_t op) {
  static const char *const kNames[] = {"sum", "prod", "max", "min", "avg", "band", "bor", "bxor"};
  static_assert(sizeof kNames / sizeof kNames[0] == infinicclNumOps);
  return IsValidRedOp(op) ? kNames[op] : "invalid";
}

namespace {

template <typename T>
void Divide(void *buf, size_t count, int divisor) {
  T *p = static_cast<T *>(buf);
  const T d = static_cast<T>(divisor);
  for (size_t i = 0; i < count; ++i) p[i] = static_cast<T>(p[i] / d);
}

template <float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float)>
void Divide16(void *buf, size_t count, int divisor) {
  uint16_t *p = static_cast<uint16_t *>(buf);
  const float d = static_cast<float>(divisor);
  for (size_t i = 0; i < count; ++i) p[i] = FromFloat(ToFloat(p[i]) / d);
}

}  // namespace

void DivideInPlace(void *buf, size_t count, infinicclDataType_t dtype,
                   int divisor) {
  if (divisor == 1 || count == 0) return;
  switch (dtype) {
    case infinicclInt8: return Divide<int8_t>(buf, count, divisor);
    case infinicclInt16: return Divide<int16_t>(buf, count, divisor);
    case infinicclInt32: return Divide<int32_t>(buf, count, divisor);
    case infinicclInt64: return Divide<int64_t>(buf, count, divisor);
    case infinicclUInt8: return Divide<uint8_t>(buf, count, divisor);
    case infinicclUInt16: return Divide<uint16_t>(buf, count, divisor);
    case infinicclUInt32: return Divide<uint32_t>(buf, count, divisor);
    case infinicclUInt64: return Divide<uint64_t>(buf, count, divisor);
    case infinicclFloat16:
      return Divide16<HalfToFloat, FloatToHalf>(buf, count, divisor);
    case infinicclBFloat16:
      return Divide16<BFloat16ToFloat, FloatToBFloat16>(buf, count, divisor);
    case infinicclFloat32: return Divide<float>(buf, count, divisor);
    case infinicclFloat64: return Divide<double>(buf, count, divisor);
    default: return;
  }
}

}  // namespace infiniccl
