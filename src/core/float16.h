// IEEE binary16 and bfloat16 <-> float conversions, round to nearest even.
// Used by the reduction operators for 16-bit floating types: they accumulate
// in float and round once per combination step.
#pragma once

#include <cstdint>
#include <cstring>

namespace infiniccl {

inline uint32_t FloatBits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  return x;
}

inline float BitsToFloat(uint32_t x) {
  float f;
  std::memcpy(&f, &x, sizeof f);
  return f;
}

inline float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    // Zero or subnormal: mant * 2^-24 is exact in float.
    const float v = static_cast<float>(mant) * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  if (exp == 31) return BitsToFloat(sign | 0x7f800000u | (mant << 13));
  return BitsToFloat(sign | ((exp + 112u) << 23) | (mant << 13));
}

inline uint16_t FloatToHalf(float f) {
  const uint32_t x = FloatBits(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) {  // Inf or NaN (NaN stays quiet NaN)
    return sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0u);
  }
  if (absx >= 0x477ff000u) return sign | 0x7c00u;  // >= 65520 rounds to Inf
  const uint32_t e = absx >> 23;
  uint32_t q, rem, halfway;
  if (absx < 0x38800000u) {  // below 2^-14: half subnormal (unit 2^-24)
    const uint32_t shift = 126u - e;
    if (shift >= 25u) return sign;  // below half the smallest subnormal
    const uint32_t m = (absx & 0x7fffffu) | 0x800000u;
    q = m >> shift;
    rem = m & ((1u << shift) - 1u);
    halfway = 1u << (shift - 1u);
  } else {
    q = ((e - 112u) << 10) | ((absx & 0x7fffffu) >> 13);
    rem = absx & 0x1fffu;
    halfway = 0x1000u;
  }
  if (rem > halfway || (rem == halfway && (q & 1u))) ++q;  // carry may bump exp
  return static_cast<uint16_t>(sign | q);
}

inline float BFloat16ToFloat(uint16_t h) {
  return BitsToFloat(static_cast<uint32_t>(h) << 16);
}

inline uint16_t FloatToBFloat16(float f) {
  const uint32_t x = FloatBits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) {
    return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  }
  const uint32_t bias = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + bias) >> 16);
}

}  // namespace infiniccl
