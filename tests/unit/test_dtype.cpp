// Public enum values, DataTypeSize/DataTypeName/RedOpName, and DivideInPlace
// (Avg's division) for every data type.
#include <gtest/gtest.h>

#include <cfloat>
#include <cstdint>
#include <cstring>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "c_caller.h"
#include "core/dtype.h"
#include "reference.h"

namespace {

using infiniccl::DataTypeName;
using infiniccl::DataTypeSize;
using infiniccl::DivideInPlace;
using infiniccl::RedOpName;

// ---- enum values: the upstream ABI -----------------------------------------

static_assert(infinicclInt8 == 0 && infinicclChar == 0);
static_assert(infinicclInt16 == 1);
static_assert(infinicclInt32 == 2 && infinicclInt == 2);
static_assert(infinicclInt64 == 3);
static_assert(infinicclUInt8 == 4);
static_assert(infinicclUInt16 == 5);
static_assert(infinicclUInt32 == 6);
static_assert(infinicclUInt64 == 7);
static_assert(infinicclFloat16 == 8 && infinicclHalf == 8);
static_assert(infinicclBFloat16 == 9);
static_assert(infinicclFloat32 == 10 && infinicclFloat == 10);
static_assert(infinicclFloat64 == 11 && infinicclDouble == 11);
static_assert(infinicclNumTypes == 12);
static_assert(infinicclSum == 0 && infinicclProd == 1 && infinicclMax == 2 &&
              infinicclMin == 3 && infinicclAvg == 4 && infinicclBand == 5 &&
              infinicclBor == 6 && infinicclBxor == 7 && infinicclNumOps == 8);
static_assert(infinicclSuccess == 0 && infinicclUnhandledError == 1 &&
              infinicclSystemError == 2 && infinicclInternalError == 3 &&
              infinicclInvalidArgument == 4 && infinicclInvalidUsage == 5 &&
              infinicclRemoteError == 6 && infinicclInProgress == 7 &&
              infinicclNotSupported == 8 && infinicclNumResults == 9);
static_assert(INFINICCL_VERSION_CODE ==
              INFINICCL_MAJOR * 10000 + INFINICCL_MINOR * 100 + INFINICCL_PATCH);
static_assert(sizeof(infinicclUniqueId) == INFINICCL_UNIQUE_ID_BYTES);

// Runtime copies of the same, so that a regression also shows as a failing
// test, not only as a build break.
TEST(Enums, ValuesMatchTheSpec) {
  const int types[] = {infinicclInt8,     infinicclInt16,   infinicclInt32,
                       infinicclInt64,    infinicclUInt8,   infinicclUInt16,
                       infinicclUInt32,   infinicclUInt64,  infinicclFloat16,
                       infinicclBFloat16, infinicclFloat32, infinicclFloat64,
                       infinicclNumTypes};
  for (int i = 0; i <= 12; ++i) EXPECT_EQ(types[i], i);
  EXPECT_EQ(int{infinicclChar}, 0);
  EXPECT_EQ(int{infinicclInt}, 2);
  EXPECT_EQ(int{infinicclHalf}, 8);
  EXPECT_EQ(int{infinicclFloat}, 10);
  EXPECT_EQ(int{infinicclDouble}, 11);
  const int ops[] = {infinicclSum,  infinicclProd, infinicclMax,  infinicclMin,   infinicclAvg,
                     infinicclBand, infinicclBor,  infinicclBxor, infinicclNumOps};
  for (int i = 0; i <= 8; ++i) EXPECT_EQ(ops[i], i);
  const int results[] = {infinicclSuccess,         infinicclUnhandledError,
                         infinicclSystemError,     infinicclInternalError,
                         infinicclInvalidArgument, infinicclInvalidUsage,
                         infinicclRemoteError,     infinicclInProgress,
                         infinicclNotSupported,    infinicclNumResults};
  for (int i = 0; i <= 9; ++i) EXPECT_EQ(results[i], i);
}

// ---- sizes and names ---------------------------------------------------------

TEST(DataType, SizeAndNameOfEveryType) {
  struct Case {
    infinicclDataType_t t;
    size_t size;
    const char *name;
  };
  const Case cases[] = {
      {infinicclInt8, 1, "int8"},       {infinicclInt16, 2, "int16"},
      {infinicclInt32, 4, "int32"},     {infinicclInt64, 8, "int64"},
      {infinicclUInt8, 1, "uint8"},     {infinicclUInt16, 2, "uint16"},
      {infinicclUInt32, 4, "uint32"},   {infinicclUInt64, 8, "uint64"},
      {infinicclFloat16, 2, "float16"}, {infinicclBFloat16, 2, "bfloat16"},
      {infinicclFloat32, 4, "float32"}, {infinicclFloat64, 8, "float64"},
  };
  ASSERT_EQ(std::size(cases), static_cast<size_t>(infinicclNumTypes));
  for (const Case &c : cases) {
    EXPECT_EQ(DataTypeSize(c.t), c.size) << c.name;
    ASSERT_NE(DataTypeName(c.t), nullptr);
    EXPECT_STREQ(DataTypeName(c.t), c.name);
    EXPECT_TRUE(infiniccl::IsValidDataType(c.t));
  }
  EXPECT_EQ(DataTypeSize(infinicclChar), 1u);
  EXPECT_EQ(DataTypeSize(infinicclHalf), 2u);
  EXPECT_EQ(DataTypeSize(infinicclDouble), sizeof(double));
}

TEST(DataType, InvalidValues) {
  // Values inside the enum's range that name no type: callable directly.
  for (int v : {12, 13, 15}) {
    const auto t = static_cast<infinicclDataType_t>(v);
    EXPECT_EQ(DataTypeSize(t), 0u) << v;
    ASSERT_NE(DataTypeName(t), nullptr) << v;
    EXPECT_STREQ(DataTypeName(t), "invalid") << v;
  }
  // Any int, as a C caller passes it.
  for (int v : {12, 13, -1, -12, 1000, std::numeric_limits<int>::min(),
                std::numeric_limits<int>::max()}) {
    EXPECT_EQ(c_caller::CallAsC(&DataTypeSize, v), 0u) << v;
    const char *name = c_caller::CallAsC(&DataTypeName, v);
    ASSERT_NE(name, nullptr) << v;
    EXPECT_STREQ(name, "invalid") << v;
    EXPECT_FALSE(infiniccl::IsValidDataType(v)) << v;
  }
}

TEST(RedOp, NamesOfEveryOpAndInvalid) {
  EXPECT_STREQ(RedOpName(infinicclSum), "sum");
  EXPECT_STREQ(RedOpName(infinicclProd), "prod");
  EXPECT_STREQ(RedOpName(infinicclMax), "max");
  EXPECT_STREQ(RedOpName(infinicclMin), "min");
  EXPECT_STREQ(RedOpName(infinicclAvg), "avg");
  EXPECT_STREQ(RedOpName(infinicclBand), "band");
  EXPECT_STREQ(RedOpName(infinicclBor), "bor");
  EXPECT_STREQ(RedOpName(infinicclBxor), "bxor");
  for (int v = 0; v < infinicclNumOps; ++v) EXPECT_TRUE(infiniccl::IsValidRedOp(v));
  for (int v = 0; v < infinicclNumOps; ++v)
    EXPECT_EQ(infiniccl::IsBitwiseRedOp(v), v >= 5) << v;
  for (int v : {8, 9, 10}) {
    EXPECT_STREQ(RedOpName(static_cast<infinicclRedOp_t>(v)), "invalid") << v;
  }
  for (int v : {8, 9, -1, 1000, std::numeric_limits<int>::min()}) {
    const char *name = c_caller::CallAsC(&RedOpName, v);
    ASSERT_NE(name, nullptr) << v;
    EXPECT_STREQ(name, "invalid") << v;
    EXPECT_FALSE(infiniccl::IsValidRedOp(v)) << v;
  }
}

// ---- DivideInPlace -----------------------------------------------------------

// Divides `in` (plus a sentinel element that must stay untouched) and
// compares with `want`, both written out by hand.
template <typename T>
void ExpectDivide(infinicclDataType_t t, std::vector<T> in, int divisor,
                  const std::vector<T> &want) {
  ASSERT_EQ(in.size(), want.size());
  ASSERT_EQ(DataTypeSize(t), sizeof(T));
  const T sentinel = static_cast<T>(77);
  in.push_back(sentinel);
  DivideInPlace(in.data(), want.size(), t, divisor);
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(in[i], want[i]) << DataTypeName(t) << " element " << i << " / " << divisor;
  }
  EXPECT_EQ(in.back(), sentinel) << DataTypeName(t) << ": wrote past count";
}

TEST(DivideInPlace, IntegersTruncateTowardZero) {
  ExpectDivide<int8_t>(infinicclInt8, {7, -7, 127, -128, -1, 1, 0, -6}, 3,
                       {2, -2, 42, -42, 0, 0, 0, -2});
  ExpectDivide<int8_t>(infinicclInt8, {-128, 127, -3}, 2, {-64, 63, -1});
  ExpectDivide<int16_t>(infinicclInt16, {-32768, 32767, -9, 9}, 5, {-6553, 6553, -1, 1});
  ExpectDivide<int32_t>(infinicclInt32, {INT32_MIN, INT32_MAX, -20, 20, -21}, 7,
                        {-306783378, 306783378, -2, 2, -3});
  ExpectDivide<int64_t>(infinicclInt64, {INT64_MIN, INT64_MAX, -5, 5}, 3,
                        {-3074457345618258602LL, 3074457345618258602LL, -1, 1});
  ExpectDivide<int64_t>(infinicclInt64, {int64_t{1} << 62, -(int64_t{1} << 40) - 1}, 4,
                        {int64_t{1} << 60, -(int64_t{1} << 38)});
  ExpectDivide<uint8_t>(infinicclUInt8, {255, 3, 4, 0}, 4, {63, 0, 1, 0});
  ExpectDivide<uint16_t>(infinicclUInt16, {65535, 65534, 1}, 2, {32767, 32767, 0});
  ExpectDivide<uint32_t>(infinicclUInt32, {4294967295u, 19u}, 10, {429496729u, 1u});
  ExpectDivide<uint64_t>(infinicclUInt64, {UINT64_MAX, 10}, 3,
                         {0x5555555555555555ULL, 3});
  // Large rank counts.
  ExpectDivide<int32_t>(infinicclInt32, {-1000000, 999999}, 1000, {-1000, 999});
  ExpectDivide<uint64_t>(infinicclUInt64, {UINT64_MAX}, 65536, {0xffffffffffffULL});
}

TEST(DivideInPlace, Float32AndFloat64RoundOnce) {
  ExpectDivide<float>(infinicclFloat32, {1.0f, 2.0f, -1.0f, 6.0f, 0.0f}, 3,
                      {ref::FromBits(0x3eaaaaabu), ref::FromBits(0x3f2aaaabu),
                       ref::FromBits(0xbeaaaaabu), 2.0f, 0.0f});
  ExpectDivide<float>(infinicclFloat32, {FLT_MAX, FLT_TRUE_MIN, 3 * FLT_TRUE_MIN}, 2,
                      {FLT_MAX / 2, 0.0f, 2 * FLT_TRUE_MIN});  // ties to even
  double third;
  const uint64_t third_bits = 0x3fd5555555555555ULL;
  std::memcpy(&third, &third_bits, sizeof third);
  ExpectDivide<double>(infinicclFloat64, {1.0, -3.0, 10.0}, 3, {third, -1.0, 10.0 / 3});
  // Every float32 1..4096 divided by 7, against double division rounded once.
  std::vector<float> in, want;
  for (int i = -4096; i <= 4096; ++i) {
    in.push_back(static_cast<float>(i));
    want.push_back(static_cast<float>(static_cast<double>(i) / 7.0));
  }
  ExpectDivide<float>(infinicclFloat32, in, 7, want);
}

TEST(DivideInPlace, Float16EveryFiniteValueMatchesNative) {
  // Hand-checked: 7/3 = 2.3333 -> 2.333984375 (0x40ab); 1/3 -> 0x3555.
  ExpectDivide<uint16_t>(infinicclFloat16, {0x4700 /*7*/, 0x3c00 /*1*/, 0xc700 /*-7*/}, 3,
                         {0x40ab, 0x3555, 0xc0ab});
  // Subnormal ties: 3*2^-24 / 2 = 1.5*2^-24 -> 2*2^-24; 1*2^-24 / 2 -> 0;
  // 5*2^-24 / 2 -> 2*2^-24; 7*2^-24 / 2 -> 4*2^-24.
  ExpectDivide<uint16_t>(infinicclFloat16, {0x0003, 0x0001, 0x0005, 0x0007, 0x8001}, 2,
                         {0x0002, 0x0000, 0x0002, 0x0004, 0x8000});
  for (int divisor : {2, 3, 7, 1000, 65536}) {
    std::vector<uint16_t> in, want;
    for (uint32_t h = 0; h < 0x10000u; ++h) {
      if (!ref::IsHalfFinite(static_cast<uint16_t>(h))) continue;
      const double q = ref::HalfToDouble(static_cast<uint16_t>(h)) / divisor;
      if (q == 0) continue;  // sign of a zero quotient checked separately
      in.push_back(static_cast<uint16_t>(h));
      want.push_back(ref::DoubleToHalf(q));
    }
    ExpectDivide<uint16_t>(infinicclFloat16, in, divisor, want);
  }
  ExpectDivide<uint16_t>(infinicclFloat16, {0x0000, 0x8000, 0x7c00, 0xfc00}, 3,
                         {0x0000, 0x8000, 0x7c00, 0xfc00});
}

TEST(DivideInPlace, BFloat16EveryFiniteValueMatchesReference) {
  // Hand-checked: 7/3 -> 2.328125 (0x4015); 1/3 -> 0.333984375 (0x3eab).
  ExpectDivide<uint16_t>(infinicclBFloat16, {0x40e0 /*7*/, 0x3f80 /*1*/, 0xc0e0 /*-7*/},
                         3, {0x4015, 0x3eab, 0xc015});
  ExpectDivide<uint16_t>(infinicclBFloat16, {0x0003, 0x0001, 0x0005, 0x0007}, 2,
                         {0x0002, 0x0000, 0x0002, 0x0004});
  for (int divisor : {2, 3, 7, 1000}) {
    std::vector<uint16_t> in, want;
    for (uint32_t h = 0; h < 0x10000u; ++h) {
      if (!ref::IsBf16Finite(static_cast<uint16_t>(h))) continue;
      const double q = ref::Bf16ToDouble(static_cast<uint16_t>(h)) / divisor;
      if (q == 0) continue;
      in.push_back(static_cast<uint16_t>(h));
      want.push_back(ref::DoubleToBf16(q));
    }
    ExpectDivide<uint16_t>(infinicclBFloat16, in, divisor, want);
  }
}

TEST(DivideInPlace, NaNStaysNaN) {
  uint16_t h[2] = {0x7e00, 0xfe01};
  DivideInPlace(h, 2, infinicclFloat16, 3);
  EXPECT_TRUE(ref::IsHalfNaN(h[0]) && ref::IsHalfNaN(h[1]));
  uint16_t b[2] = {0x7fc0, 0xff81};
  DivideInPlace(b, 2, infinicclBFloat16, 3);
  EXPECT_TRUE(ref::IsBf16NaN(b[0]) && ref::IsBf16NaN(b[1]));
}

TEST(DivideInPlace, DivisorOneLeavesEveryTypeUnchanged) {
  for (int t = 0; t < infinicclNumTypes; ++t) {
    const auto dtype = static_cast<infinicclDataType_t>(t);
    // Bytes that form odd values in every type, NaN payloads included.
    unsigned char buf[64], before[64];
    for (size_t i = 0; i < sizeof buf; ++i)
      buf[i] = static_cast<unsigned char>(0xff - 3 * i);
    buf[0] = 0x01;  // 0x7c01-style signalling NaN bytes for 16-bit floats
    buf[1] = 0x7c;
    std::memcpy(before, buf, sizeof buf);
    DivideInPlace(buf, sizeof buf / DataTypeSize(dtype), dtype, 1);
    EXPECT_EQ(std::memcmp(buf, before, sizeof buf), 0) << DataTypeName(dtype);
  }
}

TEST(DivideInPlace, CountZeroIsANoOp) {
  for (int t = 0; t < infinicclNumTypes; ++t) {
    const auto dtype = static_cast<infinicclDataType_t>(t);
    unsigned char buf[16], before[16];
    for (size_t i = 0; i < sizeof buf; ++i) buf[i] = static_cast<unsigned char>(0x40 + i);
    std::memcpy(before, buf, sizeof buf);
    DivideInPlace(buf, 0, dtype, 3);
    EXPECT_EQ(std::memcmp(buf, before, sizeof buf), 0) << DataTypeName(dtype);
  }
  DivideInPlace(nullptr, 0, infinicclFloat32, 4);  // NULL with count 0: no access
}

// Stores `v` as element i of a buffer of `dtype` (v must be representable).
void Store(unsigned char *buf, infinicclDataType_t dtype, size_t i, double v) {
  auto put = [&](auto x) { std::memcpy(buf + i * sizeof x, &x, sizeof x); };
  switch (dtype) {
    case infinicclInt8: return put(static_cast<int8_t>(v));
    case infinicclInt16: return put(static_cast<int16_t>(v));
    case infinicclInt32: return put(static_cast<int32_t>(v));
    case infinicclInt64: return put(static_cast<int64_t>(v));
    case infinicclUInt8: return put(static_cast<uint8_t>(v));
    case infinicclUInt16: return put(static_cast<uint16_t>(v));
    case infinicclUInt32: return put(static_cast<uint32_t>(v));
    case infinicclUInt64: return put(static_cast<uint64_t>(v));
    case infinicclFloat16: return put(ref::DoubleToHalf(v));
    case infinicclBFloat16: return put(ref::DoubleToBf16(v));
    case infinicclFloat32: return put(static_cast<float>(v));
    case infinicclFloat64: return put(v);
    default: FAIL() << "bad dtype";
  }
}

TEST(DivideInPlace, EveryTypeDividesSmallIntegers) {
  // The same small values in every type, divided by the rank counts 2 and 4.
  const double values[] = {12, 8, 100, 0, 124};
  constexpr size_t n = std::size(values);
  for (int t = 0; t < infinicclNumTypes; ++t) {
    const auto dtype = static_cast<infinicclDataType_t>(t);
    for (int divisor : {2, 4}) {
      unsigned char got[n * 8], want[n * 8];
      for (size_t i = 0; i < n; ++i) {
        Store(got, dtype, i, values[i]);
        Store(want, dtype, i, values[i] / divisor);  // all exact quotients
      }
      DivideInPlace(got, n, dtype, divisor);
      EXPECT_EQ(std::memcmp(got, want, n * DataTypeSize(dtype)), 0)
          << DataTypeName(dtype) << " / " << divisor;
    }
  }
}

}  // namespace
