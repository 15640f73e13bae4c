// The fp16/bf16 reduction kernels (the bodies of the user-defined MPI ops):
// inout[i] = op(in[i], inout[i]), computed and rounded once to nearest even.
// Expected values come from exact double arithmetic rounded by the
// references in reference.h.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "mpi/mpi_types.h"
#include "reference.h"

namespace {

using infiniccl::ReduceBFloat16;
using infiniccl::ReduceHalf;
using ref::Hex;

enum class Kind { kHalf, kBf16 };

uint16_t Encode(Kind k, double v) {
  return k == Kind::kHalf ? ref::DoubleToHalf(v) : ref::DoubleToBf16(v);
}
double Decode(Kind k, uint16_t b) {
  return k == Kind::kHalf ? ref::HalfToDouble(b) : ref::Bf16ToDouble(b);
}
void Reduce(Kind k, infinicclRedOp_t op, const std::vector<uint16_t> &in,
            std::vector<uint16_t> *inout) {
  ASSERT_EQ(in.size(), inout->size());
  if (k == Kind::kHalf) {
    ReduceHalf(op, in.data(), inout->data(), in.size());
  } else {
    ReduceBFloat16(op, in.data(), inout->data(), in.size());
  }
}
// The result in double: exact for binary16 sums and for all products; a
// bfloat16 sum can need more than 53 bits, but double has more than
// 2*8+2 bits of precision, so rounding it to double and then to bfloat16
// still gives the correctly rounded result.
double Exact(infinicclRedOp_t op, double a, double b) {
  switch (op) {
    case infinicclProd: return a * b;
    case infinicclMax: return std::max(a, b);
    case infinicclMin: return std::min(a, b);
    default: return a + b;  // Sum and Avg
  }
}

const infinicclRedOp_t kOps[] = {infinicclSum, infinicclProd, infinicclMax, infinicclMin,
                                 infinicclAvg};

class Reduce16 : public ::testing::TestWithParam<Kind> {};

TEST_P(Reduce16, SmallExactIntegers) {
  const Kind k = GetParam();
  const std::vector<double> a = {1, 2, 3, -4, 0, 100, -7, 12};
  const std::vector<double> b = {5, 6, -7, 8, 0, -3, -9, 12};
  struct Expect {
    infinicclRedOp_t op;
    std::vector<double> want;
  };
  const Expect expects[] = {
      {infinicclSum, {6, 8, -4, 4, 0, 97, -16, 24}},
      {infinicclAvg, {6, 8, -4, 4, 0, 97, -16, 24}},  // Avg's combine step is Sum
      {infinicclProd, {5, 12, -21, -32, 0, -300, 63, 144}},
      {infinicclMax, {5, 6, 3, 8, 0, 100, -7, 12}},
      {infinicclMin, {1, 2, -7, -4, 0, -3, -9, 12}},
  };
  for (const Expect &e : expects) {
    std::vector<uint16_t> in, inout;
    for (double v : a) in.push_back(Encode(k, v));
    for (double v : b) inout.push_back(Encode(k, v));
    const std::vector<uint16_t> in_before = in;
    Reduce(k, e.op, in, &inout);
    EXPECT_EQ(in, in_before) << "`in` must not be modified";
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(Decode(k, inout[i]), e.want[i])
          << "op " << e.op << " element " << i << ": " << a[i] << ", " << b[i];
    }
  }
}

TEST_P(Reduce16, OnlyTheFirstNElementsChange) {
  const Kind k = GetParam();
  std::vector<uint16_t> in(4, Encode(k, 1)), inout(4, Encode(k, 2));
  if (k == Kind::kHalf) {
    ReduceHalf(infinicclSum, in.data(), inout.data(), 3);
  } else {
    ReduceBFloat16(infinicclSum, in.data(), inout.data(), 3);
  }
  EXPECT_EQ(Decode(k, inout[2]), 3.0);
  EXPECT_EQ(Decode(k, inout[3]), 2.0);
  // n == 0 touches nothing.
  if (k == Kind::kHalf) {
    ReduceHalf(infinicclSum, in.data(), inout.data(), 0);
  } else {
    ReduceBFloat16(infinicclSum, in.data(), inout.data(), 0);
  }
  EXPECT_EQ(Decode(k, inout[0]), 3.0);
}

TEST_P(Reduce16, RandomPairsMatchExactArithmeticRoundedOnce) {
  const Kind k = GetParam();
  std::mt19937 rng(12345);
  std::uniform_int_distribution<uint32_t> bits(0, 0xffff);
  const size_t n = 50000;
  std::vector<uint16_t> a, b;
  while (a.size() < n) {
    const uint16_t x = static_cast<uint16_t>(bits(rng));
    const uint16_t y = static_cast<uint16_t>(bits(rng));
    const bool finite = k == Kind::kHalf ? ref::IsHalfFinite(x) && ref::IsHalfFinite(y)
                                         : ref::IsBf16Finite(x) && ref::IsBf16Finite(y);
    if (!finite) continue;
    a.push_back(x);
    b.push_back(y);
  }
  for (infinicclRedOp_t op : kOps) {
    ref::Mismatches m(k == Kind::kHalf ? "ReduceHalf random" : "ReduceBFloat16 random");
    std::vector<uint16_t> inout = b;
    Reduce(k, op, a, &inout);
    for (size_t i = 0; i < n; ++i) {
      const double exact = Exact(op, Decode(k, a[i]), Decode(k, b[i]));
      const uint16_t want = Encode(k, exact);
      if (exact == 0) {
        // The sign of a zero result (e.g. max(+0, -0), x + -x) is not
        // specified; only the value is checked.
        m.Check(Decode(k, inout[i]) == 0,
                [&] { return "op " + std::to_string(op) + ": got " + Hex(inout[i]); });
        continue;
      }
      m.Check(inout[i] == want, [&] {
        return "op " + std::to_string(op) + " " + Hex(a[i]) + ", " + Hex(b[i]) +
               ": got " + Hex(inout[i]) + " want " + Hex(want);
      });
    }
  }
}

TEST_P(Reduce16, InfAndNaN) {
  const Kind k = GetParam();
  const double inf = HUGE_VAL;
  std::vector<uint16_t> in = {Encode(k, inf), Encode(k, inf), Encode(k, -inf),
                              Encode(k, 1)};
  std::vector<uint16_t> inout = {Encode(k, 1), Encode(k, -inf), Encode(k, -5),
                                 Encode(k, -inf)};
  Reduce(k, infinicclSum, in, &inout);
  EXPECT_EQ(Decode(k, inout[0]), inf);
  EXPECT_TRUE(std::isnan(Decode(k, inout[1]))) << Hex(inout[1]);  // inf + -inf
  EXPECT_EQ(Decode(k, inout[2]), -inf);
  EXPECT_EQ(Decode(k, inout[3]), -inf);
  std::vector<uint16_t> nan_in = {k == Kind::kHalf ? uint16_t{0x7e00} : uint16_t{0x7fc0}};
  std::vector<uint16_t> nan_inout = {Encode(k, 3)};
  Reduce(k, infinicclSum, nan_in, &nan_inout);
  EXPECT_TRUE(std::isnan(Decode(k, nan_inout[0]))) << Hex(nan_inout[0]);
}

INSTANTIATE_TEST_SUITE_P(Types, Reduce16, ::testing::Values(Kind::kHalf, Kind::kBf16),
                         [](const ::testing::TestParamInfo<Kind> &info) {
                           return info.param == Kind::kHalf ? "Half" : "BFloat16";
                         });

// Results that need rounding, written out by hand.
TEST(ReduceHalf, RoundingTiesToEven) {
  struct Case {
    infinicclRedOp_t op;
    double a, b, want;
  };
  const Case cases[] = {
      {infinicclSum, 2048, 1, 2048},  // 2049: tie 2048/2050 -> 2048
      {infinicclSum, 2050, 1, 2052},  // 2051: tie 2050/2052 -> 2052
      {infinicclSum, -2048, -1, -2048},
      {infinicclSum, -2050, -1, -2052},
      {infinicclAvg, 2050, 1, 2052},
      {infinicclSum, 2048, 1.5, 2050},  // 2049.5: nearer 2050
      {infinicclProd, 45, 91, 4096},    // 4095: tie 4094/4096 -> 4096
      {infinicclProd, -45, 91, -4096},
      {infinicclSum, 65504, 8, 65504},      // 65512 rounds down
      {infinicclSum, 65504, 16, HUGE_VAL},  // 65520: tie -> inf
      {infinicclProd, 256, 256, HUGE_VAL},
      {infinicclProd, -256, 256, -HUGE_VAL},
      {infinicclProd, 0x1p-14, 0x1p-10, 0x1p-24},  // into the subnormals
      {infinicclProd, 0x1p-14, 0x1p-11, 0},        // 2^-25: tie -> 0
      {infinicclMax, -3, -2, -2},
      {infinicclMin, -3, -2, -3},
  };
  for (const Case &c : cases) {
    std::vector<uint16_t> in = {ref::DoubleToHalf(c.a)};
    std::vector<uint16_t> inout = {ref::DoubleToHalf(c.b)};
    ASSERT_EQ(ref::HalfToDouble(in[0]), c.a);
    ASSERT_EQ(ref::HalfToDouble(inout[0]), c.b);
    ReduceHalf(c.op, in.data(), inout.data(), 1);
    const uint16_t want = ref::DoubleToHalf(c.want);
    EXPECT_EQ(inout[0], want) << "op " << c.op << " " << c.a << ", " << c.b << ": got "
                              << ref::HalfToDouble(inout[0]);
    // The same through the native conversion of the exact result.
    EXPECT_EQ(inout[0], ref::DoubleToHalf(Exact(c.op, c.a, c.b)));
  }
}

TEST(ReduceBFloat16, RoundingTiesToEven) {
  struct Case {
    infinicclRedOp_t op;
    double a, b, want;
  };
  const Case cases[] = {
      {infinicclSum, 256, 1, 256},  // 257: tie 256/258 -> 256
      {infinicclSum, 258, 1, 260},  // 259: tie 258/260 -> 260
      {infinicclSum, -256, -1, -256},
      {infinicclSum, -258, -1, -260},
      {infinicclAvg, 258, 1, 260},
      {infinicclSum, 256, 1.5, 258},                  // 257.5: nearer 258
      {infinicclProd, 17, 17, 288},                   // 289: tie 288/290 -> 288
      {infinicclProd, 19, 19, 360},                   // 361: tie 360/362 -> 360
      {infinicclProd, 0x1.fep127, 2, HUGE_VAL},       // overflow
      {infinicclSum, 0x1.fep127, 0x1p119, HUGE_VAL},  // tie at max -> inf
      {infinicclSum, 0x1.fep127, 0x1p118, 0x1.fep127},
      {infinicclMax, -3, -2, -2},
      {infinicclMin, -3, -2, -3},
  };
  for (const Case &c : cases) {
    std::vector<uint16_t> in = {ref::DoubleToBf16(c.a)};
    std::vector<uint16_t> inout = {ref::DoubleToBf16(c.b)};
    ASSERT_EQ(ref::Bf16ToDouble(in[0]), c.a);
    ASSERT_EQ(ref::Bf16ToDouble(inout[0]), c.b);
    ReduceBFloat16(c.op, in.data(), inout.data(), 1);
    EXPECT_EQ(ref::Bf16ToDouble(inout[0]), c.want)
        << "op " << c.op << " " << c.a << ", " << c.b << ": got " << Hex(inout[0]);
  }
}

}  // namespace
