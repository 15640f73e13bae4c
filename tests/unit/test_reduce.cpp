// The host reduction of the shared-memory transport (core/reduce.h): every
// dtype and op over 1-5 sources, counts that end inside and across the
// blocks it works in, in place and out of place. Inputs are small integers,
// so every result is exact in every type; the expected value is computed
// here in int64 arithmetic and compared after conversion to the type.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "core/dtype.h"
#include "core/reduce.h"
#include "reference.h"

namespace {

using infiniccl::DataTypeSize;
using infiniccl::ReduceInto;

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
  for (infinicclRedOp_t op : {infinicclSum, infinicclProd, infinicclMax, infinicclMin,
                              infinicclAvg}) {
    for (int n = 1; n <= 5; ++n) {
      for (size_t count : {size_t{1}, size_t{7}, size_t{1023}, size_t{1024}, size_t{1025},
                           size_t{4099}}) {
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
          ReduceInto(dst, ptrs.data(), n, count, t, op, n, in_place ? nullptr : copy.data());
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

INSTANTIATE_TEST_SUITE_P(
    AllTypes, ReduceInto_,
    ::testing::Values(infinicclInt8, infinicclInt16, infinicclInt32, infinicclInt64,
                      infinicclUInt8, infinicclUInt16, infinicclUInt32, infinicclUInt64,
                      infinicclFloat16, infinicclBFloat16, infinicclFloat32,
                      infinicclFloat64),
    [](const ::testing::TestParamInfo<infinicclDataType_t> &info) {
      return std::string(infiniccl::DataTypeName(info.param));
    });

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
