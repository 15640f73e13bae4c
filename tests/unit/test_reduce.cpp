// The host reduction of the shared-memory transport (core/reduce.h): every
// dtype and op over 1-5 sources, counts that end inside and across the
// blocks it works in, in place and out of place. Inputs are small integers,
// so every result is exact in every type; the expected value is computed
// here in int64 arithmetic and compared after conversion to the type. Every
// kernel this CPU runs (SimdLevel) is checked.
// Then arbitrary bit patterns (NaN, Inf, subnormals, rounding ties, wrapping
// integers), at every level: against a reference written here (the
// conversions of reference.h, not core/float16.h) and bit for bit against the
// baseline kernel.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "core/dtype.h"
#include "core/reduce.h"
#include "reference.h"

namespace {

using infiniccl::BestSimdLevel;
using infiniccl::DataTypeSize;
using infiniccl::ReduceInto;
using infiniccl::ReduceIntoAt;
using infiniccl::SimdLevel;
using infiniccl::SimdLevelName;

// The kernels this CPU runs, baseline first.
std::vector<SimdLevel> Levels() {
  std::vector<SimdLevel> out;
  for (SimdLevel l : {SimdLevel::kBaseline, SimdLevel::kAvx2, SimdLevel::kAvx512})
    if (l <= BestSimdLevel()) out.push_back(l);
  return out;
}

// Source k, element i: a small value, positive for unsigned types, with
// products of up to five sources still exact in float16 (|v| <= 3).
int64_t Value(int k, size_t i, bool is_unsigned) {
  const int64_t v = static_cast<int64_t>((i * 7 + static_cast<size_t>(k) * 3) % 7) - 3;
  return is_unsigned ? v + 3 : v;
}

bool IsUnsigned(infinicclDataType_t t) {
  return t == infinicclUInt8 || t == infinicclUInt16 || t == infinicclUInt32 ||
         t == infinicclUInt64;
}

void Store(infinicclDataType_t t, void *p, size_t i, double v) {
  switch (t) {
    case infinicclInt8: static_cast<int8_t *>(p)[i] = static_cast<int8_t>(v); break;
    case infinicclInt16: static_cast<int16_t *>(p)[i] = static_cast<int16_t>(v); break;
    case infinicclInt32: static_cast<int32_t *>(p)[i] = static_cast<int32_t>(v); break;
    case infinicclInt64: static_cast<int64_t *>(p)[i] = static_cast<int64_t>(v); break;
    case infinicclUInt8: static_cast<uint8_t *>(p)[i] = static_cast<uint8_t>(v); break;
    case infinicclUInt16: static_cast<uint16_t *>(p)[i] = static_cast<uint16_t>(v); break;
    case infinicclUInt32: static_cast<uint32_t *>(p)[i] = static_cast<uint32_t>(v); break;
    case infinicclUInt64: static_cast<uint64_t *>(p)[i] = static_cast<uint64_t>(v); break;
    case infinicclFloat16: static_cast<uint16_t *>(p)[i] = ref::DoubleToHalf(v); break;
    case infinicclBFloat16: static_cast<uint16_t *>(p)[i] = ref::DoubleToBf16(v); break;
    case infinicclFloat32: static_cast<float *>(p)[i] = static_cast<float>(v); break;
    case infinicclFloat64: static_cast<double *>(p)[i] = v; break;
    default: break;
  }
}

double Load(infinicclDataType_t t, const void *p, size_t i) {
  switch (t) {
    case infinicclInt8: return static_cast<const int8_t *>(p)[i];
    case infinicclInt16: return static_cast<const int16_t *>(p)[i];
    case infinicclInt32: return static_cast<const int32_t *>(p)[i];
    case infinicclInt64: return static_cast<double>(static_cast<const int64_t *>(p)[i]);
    case infinicclUInt8: return static_cast<const uint8_t *>(p)[i];
    case infinicclUInt16: return static_cast<const uint16_t *>(p)[i];
    case infinicclUInt32: return static_cast<const uint32_t *>(p)[i];
    case infinicclUInt64: return static_cast<double>(static_cast<const uint64_t *>(p)[i]);
    case infinicclFloat16: return ref::HalfToDouble(static_cast<const uint16_t *>(p)[i]);
    case infinicclBFloat16: return ref::Bf16ToDouble(static_cast<const uint16_t *>(p)[i]);
    case infinicclFloat32: return static_cast<const float *>(p)[i];
    case infinicclFloat64: return static_cast<const double *>(p)[i];
    default: return 0;
  }
}

bool IsFloat(infinicclDataType_t t) {
  return t == infinicclFloat16 || t == infinicclBFloat16 || t == infinicclFloat32 ||
         t == infinicclFloat64;
}

// The expected element: op over the sources in int64, Avg as the library
// defines it (exact quotient for floating types, C division for integers).
double Expected(infinicclDataType_t t, infinicclRedOp_t op, int n, size_t i, int divisor) {
  const bool u = IsUnsigned(t);
  int64_t acc = Value(0, i, u);
  for (int k = 1; k < n; ++k) {
    const int64_t v = Value(k, i, u);
    switch (op) {
      case infinicclSum:
      case infinicclAvg: acc += v; break;
      case infinicclProd: acc *= v; break;
      case infinicclMax: acc = v > acc ? v : acc; break;
      case infinicclMin: acc = v < acc ? v : acc; break;
      default: break;
    }
  }
  if (op != infinicclAvg) return static_cast<double>(acc);
  if (IsFloat(t)) return static_cast<double>(acc) / divisor;
  return static_cast<double>(acc / divisor);
}

// Avg of floating types: the quotient rounded once to the type.
double Rounded(infinicclDataType_t t, double v) {
  std::vector<char> one(8);
  Store(t, one.data(), 0, v);
  return Load(t, one.data(), 0);
}

class ReduceInto_ : public ::testing::TestWithParam<infinicclDataType_t> {};

TEST_P(ReduceInto_, EveryOpSourceCountAndLayoutIsExact) {
  const infinicclDataType_t t = GetParam();
  const size_t elem = DataTypeSize(t);
  for (SimdLevel level : Levels()) {
    SCOPED_TRACE(SimdLevelName(level));
    for (infinicclRedOp_t op : {infinicclSum, infinicclProd, infinicclMax, infinicclMin,
                                infinicclAvg}) {
      for (int n = 1; n <= 5; ++n) {
        for (size_t count : {size_t{1}, size_t{7}, size_t{15}, size_t{17}, size_t{1023},
                             size_t{1024}, size_t{1025}, size_t{4099}}) {
          for (bool in_place : {false, true}) {
            std::vector<std::vector<char>> src(static_cast<size_t>(n),
                                               std::vector<char>(count * elem));
            for (int k = 0; k < n; ++k) {
              for (size_t i = 0; i < count; ++i) {
                Store(t, src[static_cast<size_t>(k)].data(), i,
                      static_cast<double>(Value(k, i, IsUnsigned(t))));
              }
            }
            std::vector<const void *> ptrs;
            for (auto &s : src) ptrs.push_back(s.data());
            std::vector<char> out(count * elem, 0x5a);
            void *dst = in_place ? src[0].data() : out.data();
            // Out of place, the result goes to a second destination as well.
            std::vector<char> copy(count * elem, 0x33);
            ASSERT_TRUE(ReduceIntoAt(level, dst, ptrs.data(), n, count, t, op, n,
                                     in_place ? nullptr : copy.data()));
            if (!in_place) {
              ASSERT_EQ(std::memcmp(copy.data(), dst, count * elem), 0)
                  << infiniccl::DataTypeName(t) << " n=" << n << " count=" << count;
            }
            for (size_t i = 0; i < count; ++i) {
              double want = Expected(t, op, n, i, n);
              if (op == infinicclAvg && IsFloat(t)) want = Rounded(t, want);
              ASSERT_EQ(Load(t, dst, i), want)
                  << infiniccl::DataTypeName(t) << " " << infiniccl::RedOpName(op) << " n=" << n
                  << " count=" << count << " i=" << i << (in_place ? " in place" : "");
            }
          }
        }
      }
    }
  }
}

// Every dtype, each test named after it.
const auto kAllTypes =
    ::testing::Values(infinicclInt8, infinicclInt16, infinicclInt32, infinicclInt64,
                      infinicclUInt8, infinicclUInt16, infinicclUInt32, infinicclUInt64,
                      infinicclFloat16, infinicclBFloat16, infinicclFloat32, infinicclFloat64);
std::string TypeName(const ::testing::TestParamInfo<infinicclDataType_t> &info) {
  return std::string(infiniccl::DataTypeName(info.param));
}

INSTANTIATE_TEST_SUITE_P(AllTypes, ReduceInto_, kAllTypes, TypeName);

// ---- arbitrary bit patterns, every kernel against a reference and baseline --

// The reference: op over the sources left to right as the library defines
// it (Max keeps the running value unless the next is greater, so NaN is
// order-dependent there; Min likewise), written independently: integers in
// 64-bit unsigned arithmetic cut to the type, 16-bit floats decoded, combined
// in float and rounded once with reference.h's conversions.
template <typename A>
A RefCombine(infinicclRedOp_t op, A a, A b) {
  if constexpr (std::is_integral_v<A>) {
    const uint64_t x = static_cast<uint64_t>(a), y = static_cast<uint64_t>(b);
    switch (op) {
      case infinicclProd: return static_cast<A>(x * y);
      case infinicclMax: return b > a ? b : a;
      case infinicclMin: return b < a ? b : a;
      default: return static_cast<A>(x + y);
    }
  } else {
    switch (op) {
      case infinicclProd: return a * b;
      case infinicclMax: return b > a ? b : a;
      case infinicclMin: return b < a ? b : a;
      default: return a + b;
    }
  }
}

// Element i of the reference result. T: the stored type; A: the type the
// reduction runs in (float for the 16-bit types).
template <typename T, typename A, A (*Decode)(T), T (*Encode)(A)>
T RefElement(infinicclRedOp_t op, const std::vector<const void *> &srcs, size_t i,
             int divisor) {
  A acc = Decode(static_cast<const T *>(srcs[0])[i]);
  for (size_t k = 1; k < srcs.size(); ++k)
    acc = RefCombine<A>(op, acc, Decode(static_cast<const T *>(srcs[k])[i]));
  if (op == infinicclAvg) acc = static_cast<A>(acc / static_cast<A>(divisor));
  return Encode(acc);
}

template <typename T>
T Itself(T x) {
  return x;
}
float HalfIn(uint16_t b) { return ref::HalfToFloat(b); }
uint16_t HalfOut(float f) { return ref::FloatToHalf(f); }
float Bf16In(uint16_t b) { return static_cast<float>(ref::Bf16ToDouble(b)); }
uint16_t Bf16Out(float f) { return std::isnan(f) ? uint16_t{0x7fc0} : ref::FloatToBf16(f); }

template <typename T, typename A, A (*Decode)(T), T (*Encode)(A)>
void RefAll(infinicclRedOp_t op, const std::vector<const void *> &srcs, size_t count,
            int divisor, void *out) {
  for (size_t i = 0; i < count; ++i)
    static_cast<T *>(out)[i] = RefElement<T, A, Decode, Encode>(op, srcs, i, divisor);
}

void Reference(infinicclDataType_t t, infinicclRedOp_t op, const std::vector<const void *> &srcs,
               size_t count, int divisor, void *out) {
  switch (t) {
    case infinicclInt8:
      return RefAll<int8_t, int8_t, Itself, Itself>(op, srcs, count, divisor, out);
    case infinicclInt16:
      return RefAll<int16_t, int16_t, Itself, Itself>(op, srcs, count, divisor, out);
    case infinicclInt32:
      return RefAll<int32_t, int32_t, Itself, Itself>(op, srcs, count, divisor, out);
    case infinicclInt64:
      return RefAll<int64_t, int64_t, Itself, Itself>(op, srcs, count, divisor, out);
    case infinicclUInt8:
      return RefAll<uint8_t, uint8_t, Itself, Itself>(op, srcs, count, divisor, out);
    case infinicclUInt16:
      return RefAll<uint16_t, uint16_t, Itself, Itself>(op, srcs, count, divisor, out);
    case infinicclUInt32:
      return RefAll<uint32_t, uint32_t, Itself, Itself>(op, srcs, count, divisor, out);
    case infinicclUInt64:
      return RefAll<uint64_t, uint64_t, Itself, Itself>(op, srcs, count, divisor, out);
    case infinicclFloat32:
      return RefAll<float, float, Itself, Itself>(op, srcs, count, divisor, out);
    case infinicclFloat64:
      return RefAll<double, double, Itself, Itself>(op, srcs, count, divisor, out);
    case infinicclFloat16:
      return RefAll<uint16_t, float, HalfIn, HalfOut>(op, srcs, count, divisor, out);
    case infinicclBFloat16:
      return RefAll<uint16_t, float, Bf16In, Bf16Out>(op, srcs, count, divisor, out);
    default: return;
  }
}

// Element i of a result as bits (zero-extended), and whether it is a NaN.
uint64_t BitsAt(infinicclDataType_t t, const void *p, size_t i) {
  uint64_t v = 0;
  const size_t elem = DataTypeSize(t);
  std::memcpy(&v, static_cast<const char *>(p) + i * elem, elem);
  return v;
}
bool IsNaN(infinicclDataType_t t, uint64_t b) {
  switch (t) {
    case infinicclFloat16: return ref::IsHalfNaN(static_cast<uint16_t>(b));
    case infinicclBFloat16: return ref::IsBf16NaN(static_cast<uint16_t>(b));
    case infinicclFloat32: return (b & 0x7fffffffu) > 0x7f800000u;
    case infinicclFloat64: return (b & 0x7fffffffffffffffull) > 0x7ff0000000000000ull;
    default: return false;
  }
}

// Source values of one element: a mix of arbitrary bits, special values
// (zeros, Inf, quiet and signalling NaNs, subnormals, the largest finite)
// and values whose exponents lie within 2 of an exponent drawn per element,
// so that sums and averages carry, round and tie often.
class Patterns {
 public:
  Patterns(infinicclDataType_t t, uint32_t seed) : t_(t), rng_(seed) {}

  // The bits of source k's element i; `base` is the element's exponent.
  uint64_t Next(uint64_t base_draw) {
    const uint64_t r = rng_();
    switch (r % 8) {
      case 0: case 1: return Mask(rng_());
      case 2: return Special(rng_());
      default: return Near(base_draw, rng_());
    }
  }

 private:
  uint64_t Mask(uint64_t v) const {
    const size_t bits = DataTypeSize(t_) * 8;
    return bits == 64 ? v : v & ((uint64_t{1} << bits) - 1);
  }
  uint64_t Special(uint64_t r) const {
    static const uint64_t kHalf[] = {0x0000, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0xfe00, 0x7c01,
                                     0xfd55, 0x0001, 0x8001, 0x03ff, 0x0400, 0x7bff, 0xfbff,
                                     0x3c00, 0x3c01};
    static const uint64_t kBf16[] = {0x0000, 0x8000, 0x7f80, 0xff80, 0x7fc0, 0xffc0, 0x7f81,
                                     0xffa5, 0x0001, 0x8001, 0x007f, 0x0080, 0x7f7f, 0xff7f,
                                     0x3f80, 0x3f81};
    static const uint64_t kF32[] = {0x0, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000,
                                    0xffc00001, 0x7f800001, 0xff812345, 0x1, 0x807fffff,
                                    0x00800000, 0x7f7fffff, 0xff7fffff, 0x3f800000,
                                    0x3f800001, 0x33800000};
    static const uint64_t kF64[] = {0x0, 0x8000000000000000, 0x7ff0000000000000,
                                    0xfff0000000000000, 0x7ff8000000000000,
                                    0xfff8000000000001, 0x7ff0000000000001, 0x1,
                                    0x800fffffffffffff, 0x0010000000000000,
                                    0x7fefffffffffffff, 0x3ff0000000000000,
                                    0x3ff0000000000001, 0xbca0000000000000,
                                    0x3ca0000000000000, 0xffefffffffffffff};
    const size_t k = r % 16;
    switch (t_) {
      case infinicclFloat16: return kHalf[k];
      case infinicclBFloat16: return kBf16[k];
      case infinicclFloat32: return kF32[k];
      case infinicclFloat64: return kF64[k];
      default: return Mask(k < 8 ? ~uint64_t{0} - k : k);  // -1.., small
    }
  }
  uint64_t Near(uint64_t base_draw, uint64_t r) const {
    int mant_bits = 0, exp_bits = 0;
    switch (t_) {
      case infinicclFloat16: mant_bits = 10, exp_bits = 5; break;
      case infinicclBFloat16: mant_bits = 7, exp_bits = 8; break;
      case infinicclFloat32: mant_bits = 23, exp_bits = 8; break;
      case infinicclFloat64: mant_bits = 52, exp_bits = 11; break;
      default: return Mask(r % 512) - Mask(256);  // small values around 0
    }
    const uint64_t exp_max = (uint64_t{1} << exp_bits) - 1;
    const uint64_t e = (base_draw % (exp_max - 1) + r % 5) % exp_max;  // never all ones
    const uint64_t sign = (r >> 8) & 1;
    // A short mantissa half the time, so that sums end in exact ties.
    uint64_t m = (r >> 9) & ((uint64_t{1} << mant_bits) - 1);
    if ((r >> 7) & 1) m &= ~((uint64_t{1} << (mant_bits / 2)) - 1);
    return (sign << (mant_bits + exp_bits)) | (e << mant_bits) | m;
  }

  infinicclDataType_t t_;
  std::mt19937_64 rng_;
};

// An element-aligned pointer `offset` elements past a 64-byte boundary.
char *At(std::vector<char> *mem, size_t offset, size_t elem) {
  const uintptr_t p = reinterpret_cast<uintptr_t>(mem->data());
  return mem->data() + ((64 - p % 64) % 64) + offset * elem;
}

class ReduceIntoBits : public ::testing::TestWithParam<infinicclDataType_t> {};

TEST_P(ReduceIntoBits, EveryLevelMatchesTheReferenceAndBaselineBitForBit) {
  const infinicclDataType_t t = GetParam();
  const size_t elem = DataTypeSize(t);
  const std::vector<SimdLevel> levels = Levels();
  RecordProperty("levels", static_cast<int>(levels.size()));
  size_t checked = 0, nans = 0;
  uint32_t seed = 1;
  for (infinicclRedOp_t op : {infinicclSum, infinicclProd, infinicclMax, infinicclMin,
                              infinicclAvg}) {
    for (int n = 1; n <= 4; ++n) {
      for (size_t count : {size_t{1}, size_t{7}, size_t{15}, size_t{17}, size_t{1023},
                           size_t{1025}, size_t{4099}}) {
        ++seed;
        // Sources, each at its own misalignment (0-3 elements past 64 bytes).
        Patterns gen(t, seed);
        std::mt19937_64 base_rng(seed);
        std::vector<uint64_t> base(count);
        for (uint64_t &b : base) b = base_rng();
        std::vector<std::vector<char>> src(static_cast<size_t>(n),
                                           std::vector<char>((count + 16) * elem + 64));
        std::vector<const void *> ptrs;
        for (int k = 0; k < n; ++k) {
          char *p = At(&src[static_cast<size_t>(k)], static_cast<size_t>(k + seed) % 4, elem);
          for (size_t i = 0; i < count; ++i) {
            const uint64_t v = gen.Next(base[i]);
            std::memcpy(p + i * elem, &v, elem);
          }
          ptrs.push_back(p);
        }
        // Avg by n, and by 3 where that makes an inexact quotient.
        const int divisor = op == infinicclAvg && n % 2 == 1 ? 3 : n;
        std::vector<char> want(count * elem);
        Reference(t, op, ptrs, count, divisor, want.data());

        std::vector<char> baseline;
        for (SimdLevel level : levels) {
          // 0: out of place; 1: out of place with a copy; 2: in place
          // (dst is source 0) with a copy.
          for (int layout = 0; layout < 3; ++layout) {
            const std::string where = std::string(SimdLevelName(level)) + " " +
                                      infiniccl::RedOpName(op) + " n=" + std::to_string(n) +
                                      " count=" + std::to_string(count) +
                                      " layout=" + std::to_string(layout);
            std::vector<char> out_mem((count + 16) * elem + 64, 0x5a);
            std::vector<char> copy_mem((count + 16) * elem + 64, 0x33);
            std::vector<char> in_place(src[0].size());
            std::vector<const void *> args = ptrs;
            char *dst = At(&out_mem, (seed + 1) % 3, elem);
            if (layout == 2) {
              dst = At(&in_place, (seed + 2) % 4, elem);
              std::memcpy(dst, ptrs[0], count * elem);
              args[0] = dst;
            }
            char *copy = layout == 0 ? nullptr : At(&copy_mem, seed % 2, elem);
            ASSERT_TRUE(ReduceIntoAt(level, dst, args.data(), n, count, t, op, divisor, copy));
            if (copy != nullptr) {
              ASSERT_EQ(std::memcmp(copy, dst, count * elem), 0) << where;
            }
            // Nothing written past the end of dst.
            if (layout != 2) {
              const size_t end = static_cast<size_t>(dst - out_mem.data()) + count * elem;
              for (size_t b = end; b < out_mem.size(); ++b)
                ASSERT_EQ(out_mem[b], 0x5a) << where << ": byte " << b - end << " past the end";
            }
            for (size_t i = 0; i < count; ++i) {
              const uint64_t got = BitsAt(t, dst, i), exp = BitsAt(t, want.data(), i);
              ++checked;
              if (IsNaN(t, exp)) {
                ++nans;
                ASSERT_TRUE(IsNaN(t, got)) << where << " i=" << i << ": " << ref::Hex(got);
              } else {
                ASSERT_EQ(got, exp) << where << " i=" << i;
              }
            }
            if (baseline.empty()) {
              baseline.assign(dst, dst + count * elem);
            } else {
              for (size_t i = 0; i < count; ++i) {
                ASSERT_EQ(BitsAt(t, dst, i), BitsAt(t, baseline.data(), i))
                    << where << " i=" << i << " differs from the baseline kernel";
              }
            }
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 0u);
  if (IsFloat(t)) {
    EXPECT_GT(nans, 0u) << "the patterns should include NaN results";
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, ReduceIntoBits, kAllTypes, TypeName);

// ---- bitwise ops: integer types, every level --------------------------------

// Band, Bor and Bxor over 1-5 sources of arbitrary bits (full width, the sign
// bit included), in place and out of place with a copy, at every level; the
// expected element folds the sources' bits in uint64 here. Counts end inside
// and across the 1024-element blocks.
class ReduceIntoBitwise : public ::testing::TestWithParam<infinicclDataType_t> {};

TEST_P(ReduceIntoBitwise, EveryLevelFoldsTheBitsOfEverySource) {
  const infinicclDataType_t t = GetParam();
  const size_t elem = DataTypeSize(t);
  const uint64_t mask = elem == 8 ? ~uint64_t{0} : (uint64_t{1} << (elem * 8)) - 1;
  size_t checked = 0;
  for (infinicclRedOp_t op : {infinicclBand, infinicclBor, infinicclBxor}) {
    for (int n = 1; n <= 5; ++n) {
      for (size_t count : {size_t{1}, size_t{31}, size_t{1025}, size_t{2051}}) {
        std::mt19937_64 rng(static_cast<uint64_t>(op) * 1000 + static_cast<uint64_t>(n) * 10 +
                            count);
        std::vector<std::vector<uint64_t>> bits(static_cast<size_t>(n),
                                                std::vector<uint64_t>(count));
        std::vector<std::vector<char>> src(static_cast<size_t>(n),
                                           std::vector<char>(count * elem));
        for (int k = 0; k < n; ++k) {
          for (size_t i = 0; i < count; ++i) {
            // Half the elements dense, half sparse, so And keeps some bits.
            uint64_t v = rng();
            if (i % 2) v |= rng() | rng();
            v &= mask;
            bits[static_cast<size_t>(k)][i] = v;
            std::memcpy(src[static_cast<size_t>(k)].data() + i * elem, &v, elem);
          }
        }
        std::vector<uint64_t> want(count);
        for (size_t i = 0; i < count; ++i) {
          uint64_t acc = bits[0][i];
          for (int k = 1; k < n; ++k) {
            const uint64_t v = bits[static_cast<size_t>(k)][i];
            acc = op == infinicclBand ? acc & v : op == infinicclBor ? acc | v : acc ^ v;
          }
          want[i] = acc;
        }
        for (SimdLevel level : Levels()) {
          for (bool in_place : {false, true}) {
            const std::string where = std::string(SimdLevelName(level)) + " " +
                                      infiniccl::RedOpName(op) + " n=" + std::to_string(n) +
                                      " count=" + std::to_string(count) +
                                      (in_place ? " in place" : "");
            std::vector<char> first = src[0];
            std::vector<const void *> ptrs;
            for (auto &s : src) ptrs.push_back(s.data());
            if (in_place) ptrs[0] = first.data();
            std::vector<char> out(count * elem + 8, 0x5a);
            std::vector<char> copy(count * elem, 0x33);
            void *dst = in_place ? first.data() : out.data();
            ASSERT_TRUE(ReduceIntoAt(level, dst, ptrs.data(), n, count, t, op, n,
                                     in_place ? nullptr : copy.data()));
            if (!in_place) {
              ASSERT_EQ(std::memcmp(copy.data(), dst, count * elem), 0) << where;
              for (size_t b = count * elem; b < out.size(); ++b)
                ASSERT_EQ(out[b], 0x5a) << where << ": byte past the end";
            }
            for (size_t i = 0; i < count; ++i, ++checked)
              ASSERT_EQ(BitsAt(t, dst, i), want[i]) << where << " i=" << i;
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 0u);
}

INSTANTIATE_TEST_SUITE_P(IntegerTypes, ReduceIntoBitwise,
                         ::testing::Values(infinicclInt8, infinicclInt16, infinicclInt32,
                                           infinicclInt64, infinicclUInt8, infinicclUInt16,
                                           infinicclUInt32, infinicclUInt64),
                         TypeName);

// On a floating type a bitwise op writes nothing (validation refuses the
// call before it could get here).
TEST(ReduceIntoBitwise, FloatingTypesAreLeftUntouched) {
  for (infinicclDataType_t t :
       {infinicclFloat16, infinicclBFloat16, infinicclFloat32, infinicclFloat64}) {
    for (infinicclRedOp_t op : {infinicclBand, infinicclBor, infinicclBxor}) {
      std::vector<char> a(64, 0x11), b(64, 0x22), out(64, 0x5a);
      const void *srcs[2] = {a.data(), b.data()};
      const size_t count = 64 / DataTypeSize(t);
      for (SimdLevel level : Levels()) {
        ASSERT_TRUE(ReduceIntoAt(level, out.data(), srcs, 2, count, t, op, 2));
        for (char c : out) ASSERT_EQ(c, 0x5a) << infiniccl::DataTypeName(t);
      }
    }
  }
}

// Every float16 and bfloat16 bit pattern through one source (converted in
// and out) and through Sum, Avg and Max with a second source: every level
// bit for bit against the baseline, and against the reference.
TEST(ReduceIntoBits16, EveryPatternEveryLevel) {
  std::vector<uint16_t> all(65536), other(65536);
  for (size_t i = 0; i < all.size(); ++i) {
    all[i] = static_cast<uint16_t>(i);
    other[i] = static_cast<uint16_t>(i * 40503u + 12345u);  // a permutation
  }
  for (infinicclDataType_t t : {infinicclFloat16, infinicclBFloat16}) {
    for (infinicclRedOp_t op : {infinicclSum, infinicclAvg, infinicclMax}) {
      for (int n : {1, 2}) {
        const std::vector<const void *> srcs = {all.data(), other.data()};
        std::vector<const void *> used(srcs.begin(), srcs.begin() + n);
        std::vector<uint16_t> want(all.size()), base(all.size());
        Reference(t, op, used, all.size(), 2, want.data());
        for (SimdLevel level : Levels()) {
          std::vector<uint16_t> got(all.size());
          ASSERT_TRUE(ReduceIntoAt(level, got.data(), used.data(), n, got.size(), t, op, 2));
          if (level == SimdLevel::kBaseline) base = got;
          size_t bad = 0;
          for (size_t i = 0; i < got.size() && bad < 5; ++i) {
            const bool nan = IsNaN(t, want[i]);
            if (got[i] != base[i] || (nan ? !IsNaN(t, got[i]) : got[i] != want[i])) {
              ++bad;
              ADD_FAILURE() << infiniccl::DataTypeName(t) << " " << infiniccl::RedOpName(op)
                            << " n=" << n << " " << SimdLevelName(level) << ": "
                            << ref::Hex(all[i]) << ", " << ref::Hex(other[i]) << " gave "
                            << ref::Hex(got[i]) << ", reference " << ref::Hex(want[i])
                            << ", baseline " << ref::Hex(base[i]);
            }
          }
        }
      }
    }
  }
}

// The setting: auto is the best level; a level above the best falls back to
// it, saying so; one at or below it is taken as asked.
TEST(SimdLevel, ChooseHonoursTheSettingWithinTheCpu) {
  using infiniccl::ChooseSimdLevel;
  std::string note;
  EXPECT_EQ(ChooseSimdLevel("auto", SimdLevel::kAvx2, &note), SimdLevel::kAvx2);
  EXPECT_EQ(note, "");
  EXPECT_EQ(ChooseSimdLevel("baseline", SimdLevel::kAvx512, &note), SimdLevel::kBaseline);
  EXPECT_EQ(ChooseSimdLevel("avx2", SimdLevel::kAvx512, &note), SimdLevel::kAvx2);
  EXPECT_EQ(note, "");
  EXPECT_EQ(ChooseSimdLevel("avx512", SimdLevel::kAvx2, &note), SimdLevel::kAvx2);
  EXPECT_EQ(note, "this CPU or build has no avx512, using avx2");
  EXPECT_EQ(ChooseSimdLevel("avx2", SimdLevel::kBaseline, &note), SimdLevel::kBaseline);
  EXPECT_NE(note, "");
  // A level this CPU lacks is refused by ReduceIntoAt, writing nothing.
  if (BestSimdLevel() != SimdLevel::kAvx512) {
    float a = 1, out = 7;
    const void *src[1] = {&a};
    EXPECT_FALSE(ReduceIntoAt(SimdLevel::kAvx512, &out, src, 1, 1, infinicclFloat32,
                              infinicclSum, 1));
    EXPECT_EQ(out, 7);
  }
  std::printf("this CPU's best level: %s\n", SimdLevelName(BestSimdLevel()));
}

// Signed sums wrap as two's complement (as MPI's do in practice), no UB.
TEST(ReduceIntoWrap, SignedSumWraps) {
  const int32_t a[2] = {INT32_MAX, -5}, b[2] = {1, 2};
  const void *src[2] = {a, b};
  int32_t out[2];
  ReduceInto(out, src, 2, 2, infinicclInt32, infinicclSum, 2);
  EXPECT_EQ(out[0], INT32_MIN);
  EXPECT_EQ(out[1], -3);
}

}  // namespace
