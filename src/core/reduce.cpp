#include "core/reduce.h"

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "core/float16.h"

namespace infiniccl {

namespace {

// Elements combined per block: the accumulator (float for 16-bit types)
// stays in L1 while every source streams through it once.
constexpr size_t kBlock = 1024;

// Sum and Prod of signed integers in the unsigned type: wraps, no UB.
template <typename T, bool = std::is_integral_v<T> && sizeof(T) >= sizeof(int)>
struct ArithOf {
  using type = T;
};
template <typename T>
struct ArithOf<T, true> {
  using type = std::make_unsigned_t<T>;
};
template <typename T>
using Arith = typename ArithOf<T>::type;

template <typename T, infinicclRedOp_t kOp>
inline T Combine(T a, T b) {
  if constexpr (kOp == infinicclSum || kOp == infinicclAvg) {
    return static_cast<T>(static_cast<Arith<T>>(a) + static_cast<Arith<T>>(b));
  } else if constexpr (kOp == infinicclProd) {
    return static_cast<T>(static_cast<Arith<T>>(a) * static_cast<Arith<T>>(b));
  } else if constexpr (kOp == infinicclMax) {
    return a < b ? b : a;
  } else {
    return b < a ? b : a;
  }
}

// Acc: the type the sum is kept in (T, or float for 16-bit floats); Load and
// Store convert.
template <typename T, typename Acc, Acc (*Load)(T), T (*Store)(Acc), infinicclRedOp_t kOp>
void ReduceBlocks(T *dst, const T *const *srcs, int n, size_t count, int divisor, T *copy) {
  Acc acc[kBlock];
  for (size_t at = 0; at < count; at += kBlock) {
    const size_t len = count - at < kBlock ? count - at : kBlock;
    const T *s0 = srcs[0] + at;
    for (size_t i = 0; i < len; ++i) acc[i] = Load(s0[i]);
    for (int k = 1; k < n; ++k) {
      const T *s = srcs[k] + at;
      for (size_t i = 0; i < len; ++i) acc[i] = Combine<Acc, kOp>(acc[i], Load(s[i]));
    }
    T *d = dst + at;
    if constexpr (kOp == infinicclAvg) {
      const Acc div = static_cast<Acc>(divisor);
      for (size_t i = 0; i < len; ++i) d[i] = Store(static_cast<Acc>(acc[i] / div));
    } else {
      for (size_t i = 0; i < len; ++i) d[i] = Store(acc[i]);
    }
    if (copy != nullptr) std::memcpy(copy + at, d, len * sizeof(T));
  }
}

template <typename T>
T Same(T x) {
  return x;
}

// Integer Avg divides the wrapped sum as the type (DivideInPlace's rule).
template <typename T, typename Acc, Acc (*Load)(T), T (*Store)(Acc)>
void ReduceTyped(void *dst, const void *const *srcs, int n, size_t count, infinicclRedOp_t op,
                 int divisor, void *copy_to) {
  T *d = static_cast<T *>(dst);
  T *c = static_cast<T *>(copy_to);
  const T *const *s = reinterpret_cast<const T *const *>(srcs);
  switch (op) {
    case infinicclSum: return ReduceBlocks<T, Acc, Load, Store, infinicclSum>(d, s, n, count, 1, c);
    case infinicclProd: return ReduceBlocks<T, Acc, Load, Store, infinicclProd>(d, s, n, count, 1, c);
    case infinicclMax: return ReduceBlocks<T, Acc, Load, Store, infinicclMax>(d, s, n, count, 1, c);
    case infinicclMin: return ReduceBlocks<T, Acc, Load, Store, infinicclMin>(d, s, n, count, 1, c);
    case infinicclAvg:
      return ReduceBlocks<T, Acc, Load, Store, infinicclAvg>(d, s, n, count, divisor, c);
    default: return;
  }
}

template <typename T>
void ReducePlain(void *dst, const void *const *srcs, int n, size_t count, infinicclRedOp_t op,
                 int divisor, void *copy) {
  ReduceTyped<T, T, &Same<T>, &Same<T>>(dst, srcs, n, count, op, divisor, copy);
}

}  // namespace

void ReduceInto(void *dst, const void *const *srcs, int n, size_t count,
                infinicclDataType_t dtype, infinicclRedOp_t op, int avg_divisor, void *copy) {
  if (count == 0 || n < 1) return;
  const int div = avg_divisor > 0 ? avg_divisor : 1;
  switch (dtype) {
    case infinicclInt8: return ReducePlain<int8_t>(dst, srcs, n, count, op, div, copy);
    case infinicclInt16: return ReducePlain<int16_t>(dst, srcs, n, count, op, div, copy);
    case infinicclInt32: return ReducePlain<int32_t>(dst, srcs, n, count, op, div, copy);
    case infinicclInt64: return ReducePlain<int64_t>(dst, srcs, n, count, op, div, copy);
    case infinicclUInt8: return ReducePlain<uint8_t>(dst, srcs, n, count, op, div, copy);
    case infinicclUInt16: return ReducePlain<uint16_t>(dst, srcs, n, count, op, div, copy);
    case infinicclUInt32: return ReducePlain<uint32_t>(dst, srcs, n, count, op, div, copy);
    case infinicclUInt64: return ReducePlain<uint64_t>(dst, srcs, n, count, op, div, copy);
    case infinicclFloat32: return ReducePlain<float>(dst, srcs, n, count, op, div, copy);
    case infinicclFloat64: return ReducePlain<double>(dst, srcs, n, count, op, div, copy);
    case infinicclFloat16:
      return ReduceTyped<uint16_t, float, &HalfToFloat, &FloatToHalf>(dst, srcs, n, count, op,
                                                                      div, copy);
    case infinicclBFloat16:
      return ReduceTyped<uint16_t, float, &BFloat16ToFloat, &FloatToBFloat16>(dst, srcs, n,
                                                                              count, op, div, copy);
    default: return;
  }
}

}  // namespace infiniccl
