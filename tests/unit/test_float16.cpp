// float <-> binary16 / bfloat16 conversions of core/float16.h against
// independent references (see reference.h).
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>

#include "core/float16.h"
#include "reference.h"

namespace {

using infiniccl::BFloat16ToFloat;
using infiniccl::FloatToBFloat16;
using infiniccl::FloatToHalf;
using infiniccl::HalfToFloat;
using ref::Hex;

// ---- the references themselves --------------------------------------------

TEST(Reference, NativeFloat16RoundsOnceToNearestEven) {
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to even -> 1.
  EXPECT_EQ(ref::FloatToHalf(1.0f + 0x1p-11f), 0x3c00);
  EXPECT_EQ(ref::FloatToHalf(1.0f + 3 * 0x1p-11f), 0x3c02);
  // Just above halfway, visible in double but not in float: the double
  // conversion must not go through float (that would round to 1.0).
  EXPECT_EQ(ref::DoubleToHalf(1.0 + 0x1p-11 + 0x1p-40), 0x3c01);
  EXPECT_EQ(ref::HalfToFloat(0x7bff), 65504.0f);
  EXPECT_EQ(ref::HalfToFloat(0x0001), 0x1p-24f);
}

TEST(Reference, Bf16ByDistances) {
  EXPECT_EQ(ref::DoubleToBf16(1.0), 0x3f80);
  EXPECT_EQ(ref::DoubleToBf16(1.0 + 0x1p-8), 0x3f80);      // tie -> even
  EXPECT_EQ(ref::DoubleToBf16(1.0 + 3 * 0x1p-8), 0x3f82);  // tie -> even
  EXPECT_EQ(ref::DoubleToBf16(1.0 + 0x1p-8 + 0x1p-30), 0x3f81);
  EXPECT_EQ(ref::DoubleToBf16(-2.0), 0xc000);
  EXPECT_EQ(ref::DoubleToBf16(0x1p-133), 0x0001);
  EXPECT_EQ(ref::DoubleToBf16(0x1p128), 0x7f80);
  EXPECT_EQ(ref::Bf16ToDouble(0x7f7f), 0x1.fep127);
  EXPECT_EQ(ref::Bf16ToDouble(0x0001), 0x1p-133);
  EXPECT_EQ(ref::Bf16ToDouble(0xbf80), -1.0);
}

// ---- binary16 --------------------------------------------------------------

TEST(Float16, EveryHalfPatternToFloatAndBack) {
  ref::Mismatches to_float("HalfToFloat"), back("FloatToHalf(HalfToFloat(h))");
  for (uint32_t i = 0; i < 0x10000u; ++i) {
    const uint16_t h = static_cast<uint16_t>(i);
    const float got = HalfToFloat(h);
    const float want = ref::HalfToFloat(h);
    if (ref::IsHalfNaN(h)) {
      to_float.Check(std::isnan(got) && std::signbit(got) == ((h & 0x8000u) != 0),
                     [&] { return Hex(h) + " is NaN, got " + std::to_string(got); });
      const uint16_t rt = FloatToHalf(got);
      back.Check(ref::IsHalfNaN(rt) && (rt & 0x8000u) == (h & 0x8000u),
                 [&] { return Hex(h) + " -> " + Hex(rt); });
      continue;
    }
    // Bit equality: distinguishes -0 from +0.
    to_float.Check(ref::Bits(got) == ref::Bits(want), [&] {
      return Hex(h) + ": got " + Hex(ref::Bits(got)) + " want " + Hex(ref::Bits(want));
    });
    const uint16_t rt = FloatToHalf(got);
    back.Check(rt == h, [&] { return Hex(h) + " -> " + Hex(rt); });
  }
}

// Every midpoint between two adjacent halves (including 65504..65536, the
// threshold of overflow) rounds to the even one; one float ulp either side
// rounds to the nearer one.
TEST(Float16, HalfwayCasesTiesToEven) {
  ref::Mismatches m("FloatToHalf at/near midpoints");
  for (uint32_t h = 0; h <= 0x7bffu; ++h) {
    const double lo = ref::HalfToDouble(static_cast<uint16_t>(h));
    const double hi =
        h == 0x7bffu ? 65536.0 : ref::HalfToDouble(static_cast<uint16_t>(h + 1));
    const float mid = static_cast<float>((lo + hi) / 2);
    ASSERT_EQ(static_cast<double>(mid), (lo + hi) / 2) << "midpoint not exact in float";
    const uint32_t even = (h & 1u) ? h + 1 : h;  // 0x7c00 (inf) is even
    const float below = std::nextafter(mid, 0.0f);
    const float above = std::nextafter(mid, 1e30f);
    for (uint32_t sign : {0u, 0x8000u}) {
      const float s = sign ? -1.0f : 1.0f;
      const uint16_t got_mid = FloatToHalf(s * mid);
      const uint16_t got_below = FloatToHalf(s * below);
      const uint16_t got_above = FloatToHalf(s * above);
      m.Check(got_mid == (sign | even) && got_mid == ref::FloatToHalf(s * mid),
              [&] { return "mid of " + Hex(sign | h) + " -> " + Hex(got_mid); });
      m.Check(got_below == (sign | h) && got_below == ref::FloatToHalf(s * below),
              [&] { return "below mid of " + Hex(sign | h) + " -> " + Hex(got_below); });
      m.Check(got_above == (sign | (h + 1)) && got_above == ref::FloatToHalf(s * above),
              [&] { return "above mid of " + Hex(sign | h) + " -> " + Hex(got_above); });
    }
  }
}

// A strided sweep over all 2^32 float bit patterns, and a dense one over the
// exponents that land in or next to the half range (2^-26 .. 2^17).
TEST(Float16, FloatSweepMatchesNativeConversion) {
  ref::Mismatches m("FloatToHalf sweep");
  auto check = [&](uint32_t bits) {
    const float f = ref::FromBits(bits);
    const uint16_t got = FloatToHalf(f);
    if (std::isnan(f)) {
      m.Check(ref::IsHalfNaN(got), [&] { return Hex(bits) + " -> " + Hex(got); });
      return;
    }
    const uint16_t want = ref::FloatToHalf(f);
    m.Check(got == want, [&] {
      return Hex(bits) + " (" + std::to_string(f) + "): got " + Hex(got) + " want " +
             Hex(want);
    });
  };
  for (uint64_t b = 0; b <= 0xffffffffu; b += 4093) check(static_cast<uint32_t>(b));
  for (uint32_t sign : {0u, 0x80000000u}) {
    for (uint64_t b = uint64_t{101} << 23; b < uint64_t{144} << 23; b += 13) {
      check(sign | static_cast<uint32_t>(b));
    }
  }
  // Every float whose low 13 bits are at or next to the rounding boundary.
  for (uint32_t sign : {0u, 0x80000000u}) {
    for (uint32_t hi = 0; hi < (0x48000000u >> 13); ++hi) {
      for (uint32_t low : {0x0fffu, 0x1000u, 0x1001u, 0x0u, 0x1fffu}) {
        check(sign | (hi << 13) | low);
      }
    }
  }
}

TEST(Float16, SpecialValues) {
  struct Case {
    float in;
    uint16_t want;
  };
  const float inf = std::numeric_limits<float>::infinity();
  const Case cases[] = {
      {0.0f, 0x0000},
      {-0.0f, 0x8000},
      {1.0f, 0x3c00},
      {-2.0f, 0xc000},
      {65504.0f, 0x7bff},                        // max finite
      {std::nextafter(65520.0f, 0.0f), 0x7bff},  // just below the overflow tie
      {65520.0f, 0x7c00},                        // tie, rounds to inf
      {65536.0f, 0x7c00},
      {-65520.0f, 0xfc00},
      {1e10f, 0x7c00},
      {FLT_MAX, 0x7c00},
      {-FLT_MAX, 0xfc00},
      {inf, 0x7c00},
      {-inf, 0xfc00},
      {0x1p-24f, 0x0001},  // min subnormal
      {0x1p-25f, 0x0000},  // tie -> 0
      {-0x1p-25f, 0x8000},
      {std::nextafter(0x1p-25f, 1.0f), 0x0001},
      {1.5f * 0x1p-24f, 0x0002},          // tie -> even (2)
      {2.5f * 0x1p-24f, 0x0002},          // tie -> even (2)
      {0x1p-14f, 0x0400},                 // min normal
      {0x1p-14f - 0x1p-25f, 0x0400},      // tie 0x3ff/0x400 -> 0x400
      {0x1p-14f - 3 * 0x1p-25f, 0x03fe},  // tie 0x3fe/0x3ff -> 0x3fe
      {0x1p-30f, 0x0000},
      {FLT_TRUE_MIN, 0x0000},  // float subnormal
      {-FLT_TRUE_MIN, 0x8000},
      {2049.0f, 0x6800},  // tie 2048/2050 -> 2048
      {2051.0f, 0x6802},  // tie 2050/2052 -> 2052
      {0.1f, 0x2e66},
  };
  for (const Case &c : cases) {
    EXPECT_EQ(FloatToHalf(c.in), c.want) << c.in;
    EXPECT_EQ(ref::FloatToHalf(c.in), c.want) << "reference disagrees for " << c.in;
  }
  for (float nan :
       {std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN(),
        std::numeric_limits<float>::signaling_NaN(), ref::FromBits(0x7f800001u),
        ref::FromBits(0xff800001u), ref::FromBits(0x7fffffffu)}) {
    const uint16_t h = FloatToHalf(nan);
    EXPECT_TRUE(ref::IsHalfNaN(h)) << Hex(ref::Bits(nan)) << " -> " << Hex(h);
    EXPECT_EQ(h & 0x8000u, (ref::Bits(nan) >> 16) & 0x8000u) << "sign of NaN";
  }
  EXPECT_EQ(ref::Bits(HalfToFloat(0x8000)), 0x80000000u);
  EXPECT_EQ(HalfToFloat(0x7c00), inf);
  EXPECT_EQ(HalfToFloat(0xfc00), -inf);
  EXPECT_EQ(HalfToFloat(0x03ff), 1023 * 0x1p-24f);
}

// ---- bfloat16 --------------------------------------------------------------

TEST(BFloat16, EveryPatternToFloatAndBack) {
  ref::Mismatches to_float("BFloat16ToFloat"),
      back("FloatToBFloat16(BFloat16ToFloat(h))");
  for (uint32_t i = 0; i < 0x10000u; ++i) {
    const uint16_t h = static_cast<uint16_t>(i);
    const float got = BFloat16ToFloat(h);
    if (ref::IsBf16NaN(h)) {
      to_float.Check(std::isnan(got), [&] { return Hex(h) + " is NaN"; });
      const uint16_t rt = FloatToBFloat16(got);
      back.Check(ref::IsBf16NaN(rt) && (rt & 0x8000u) == (h & 0x8000u),
                 [&] { return Hex(h) + " -> " + Hex(rt); });
      continue;
    }
    const double want = ref::Bf16ToDouble(h);
    to_float.Check(
        static_cast<double>(got) == want && std::signbit(got) == ((h & 0x8000u) != 0),
        [&] { return Hex(h) + ": got " + std::to_string(got); });
    const uint16_t rt = FloatToBFloat16(got);
    back.Check(rt == h, [&] { return Hex(h) + " -> " + Hex(rt); });
  }
}

TEST(BFloat16, HalfwayCasesTiesToEven) {
  ref::Mismatches m("FloatToBFloat16 at/near midpoints");
  for (uint32_t h = 0; h <= 0x7f7fu; ++h) {
    const double lo = ref::Bf16ToDouble(static_cast<uint16_t>(h));
    const double hi =
        h == 0x7f7fu ? 0x1p128 : ref::Bf16ToDouble(static_cast<uint16_t>(h + 1));
    const float mid = static_cast<float>((lo + hi) / 2);
    ASSERT_EQ(static_cast<double>(mid), (lo + hi) / 2);
    const uint32_t even = (h & 1u) ? h + 1 : h;  // 0x7f80 (inf) is even
    const float below = std::nextafter(mid, 0.0f);
    const float above = std::nextafter(mid, std::numeric_limits<float>::infinity());
    for (uint32_t sign : {0u, 0x8000u}) {
      const float s = sign ? -1.0f : 1.0f;
      const uint16_t got_mid = FloatToBFloat16(s * mid);
      const uint16_t got_below = FloatToBFloat16(s * below);
      const uint16_t got_above = FloatToBFloat16(s * above);
      m.Check(got_mid == (sign | even) && got_mid == ref::FloatToBf16(s * mid),
              [&] { return "mid of " + Hex(sign | h) + " -> " + Hex(got_mid); });
      m.Check(got_below == (sign | h),
              [&] { return "below mid of " + Hex(sign | h) + " -> " + Hex(got_below); });
      m.Check(got_above == (sign | (h + 1)),
              [&] { return "above mid of " + Hex(sign | h) + " -> " + Hex(got_above); });
    }
  }
}

TEST(BFloat16, FloatSweepMatchesReference) {
  ref::Mismatches m("FloatToBFloat16 sweep");
  auto check = [&](uint32_t bits) {
    const float f = ref::FromBits(bits);
    const uint16_t got = FloatToBFloat16(f);
    if (std::isnan(f)) {
      m.Check(ref::IsBf16NaN(got) && (got & 0x8000u) == ((bits >> 16) & 0x8000u),
              [&] { return Hex(bits) + " -> " + Hex(got); });
      return;
    }
    const uint16_t want = ref::FloatToBf16(f);
    m.Check(got == want,
            [&] { return Hex(bits) + ": got " + Hex(got) + " want " + Hex(want); });
  };
  for (uint64_t b = 0; b <= 0xffffffffu; b += 1021) check(static_cast<uint32_t>(b));
  // Every upper half with the low 16 bits at or next to the rounding boundary.
  for (uint32_t hi = 0; hi < 0x10000u; ++hi) {
    for (uint32_t low : {0x0000u, 0x0001u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu}) {
      check((hi << 16) | low);
    }
  }
}

TEST(BFloat16, SpecialValues) {
  struct Case {
    uint32_t in;
    uint16_t want;
  };
  const Case cases[] = {
      {0x00000000u, 0x0000}, {0x80000000u, 0x8000},  // +-0
      {0x3f800000u, 0x3f80},                         // 1
      {0x3f808000u, 0x3f80},                         // 1 + 2^-8: tie -> even
      {0x3f818000u, 0x3f82},                         // 1 + 3*2^-8: tie -> even
      {0x3f808001u, 0x3f81},                         // just above the tie
      {0x7f7f7fffu, 0x7f7f},                         // just below the overflow tie
      {0x7f7f8000u, 0x7f80},                         // tie at max: rounds to inf
      {0x7f7fffffu, 0x7f80},                         // FLT_MAX -> inf
      {0xff7fffffu, 0xff80},                         // -FLT_MAX -> -inf
      {0x7f800000u, 0x7f80}, {0xff800000u, 0xff80},  // +-inf
      {0x00000001u, 0x0000},                         // float subnormal, below half ulp
      {0x00008000u, 0x0000},                         // tie -> even 0
      {0x00018000u, 0x0002},                         // 1.5 ulp: tie -> 2
      {0x00008001u, 0x0001}, {0x43808000u, 0x4380},  // 257: tie 256/258 -> 256
      {0x43818000u, 0x4382},                         // 259: tie 258/260 -> 260
  };
  for (const Case &c : cases) {
    const float f = ref::FromBits(c.in);
    EXPECT_EQ(FloatToBFloat16(f), c.want) << Hex(c.in);
    EXPECT_EQ(ref::FloatToBf16(f), c.want) << "reference disagrees for " << Hex(c.in);
  }
  // NaN stays NaN, including payloads that live only in the low 16 bits
  // (truncating or rounding those naively would give inf).
  for (uint32_t nan : {0x7f800001u, 0xff800001u, 0x7f80ffffu, 0x7fc00000u, 0xffc00000u,
                       0x7fffffffu, 0x7f808000u}) {
    const uint16_t h = FloatToBFloat16(ref::FromBits(nan));
    EXPECT_TRUE(ref::IsBf16NaN(h)) << Hex(nan) << " -> " << Hex(h);
    EXPECT_EQ(h & 0x8000u, (nan >> 16) & 0x8000u) << "sign of NaN " << Hex(nan);
  }
}

}  // namespace
