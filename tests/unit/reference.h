// Reference conversions for the unit tests, computed independently of
// src/core/float16.h:
//  - binary16: GCC's native _Float16 (libgcc's soft-float __truncsfhf2 /
//    __truncdfhf2 on x86-64 without AVX512-FP16: round to nearest even);
//  - bfloat16: nearest representable value found with double arithmetic by
//    comparing the distances to the two neighbours, ties to even mantissa.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

namespace ref {

inline uint32_t Bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  return x;
}
inline float FromBits(uint32_t x) {
  float f;
  std::memcpy(&f, &x, sizeof f);
  return f;
}

// ---- binary16 --------------------------------------------------------------

inline uint16_t HalfBits(_Float16 h) {
  uint16_t b;
  std::memcpy(&b, &h, sizeof b);
  return b;
}
inline _Float16 HalfFromBits(uint16_t b) {
  _Float16 h;
  std::memcpy(&h, &b, sizeof h);
  return h;
}
// float -> half, rounded once by the compiler's conversion.
inline uint16_t FloatToHalf(float f) {
  return HalfBits(static_cast<_Float16>(f));
}
// double -> half, rounded once (no intermediate float).
inline uint16_t DoubleToHalf(double d) {
  return HalfBits(static_cast<_Float16>(d));
}
inline float HalfToFloat(uint16_t b) {
  return static_cast<float>(HalfFromBits(b));
}
inline double HalfToDouble(uint16_t b) {
  return static_cast<double>(HalfFromBits(b));
}
inline bool IsHalfNaN(uint16_t b) {
  return (b & 0x7c00u) == 0x7c00u && (b & 0x3ffu) != 0;
}
inline bool IsHalfFinite(uint16_t b) {
  return (b & 0x7c00u) != 0x7c00u;
}

// ---- bfloat16 --------------------------------------------------------------

inline bool IsBf16NaN(uint16_t b) {
  return (b & 0x7f80u) == 0x7f80u && (b & 0x7fu) != 0;
}
inline bool IsBf16Finite(uint16_t b) {
  return (b & 0x7f80u) != 0x7f80u;
}

// Value of a bfloat16 bit pattern from its fields (not by shifting into a
// float): sign, 8-bit exponent (bias 127), 7-bit mantissa.
inline double Bf16ToDouble(uint16_t b) {
  const bool neg = (b & 0x8000u) != 0;
  const int exp = (b >> 7) & 0xff;
  const int mant = b & 0x7f;
  double v;
  if (exp == 0) {
    v = std::ldexp(static_cast<double>(mant), -133);
  } else if (exp == 255) {
    v = mant == 0 ? HUGE_VAL : std::nan("");
  } else {
    v = std::ldexp(static_cast<double>(128 + mant), exp - 127 - 7);
  }
  return neg ? -v : v;
}

// Nearest bfloat16 to `d` (any double), ties to even; overflow to inf.
// NaN maps to a quiet NaN.
inline uint16_t DoubleToBf16(double d) {
  if (std::isnan(d)) return 0x7fc0;
  const uint16_t sign = std::signbit(d) ? 0x8000 : 0;
  if (std::isinf(d)) return sign | 0x7f80;
  const double a = std::fabs(d);
  if (a == 0) return sign;
  int e = std::ilogb(a);   // a in [2^e, 2^(e+1))
  if (e < -126) e = -126;  // subnormals share the spacing of the lowest binade
  if (e > 127) return sign | 0x7f80;
  const double ulp = std::ldexp(1.0, e - 7);
  const double k = std::floor(a / ulp);  // exact: division by a power of two
  const double lo = k * ulp, hi = (k + 1) * ulp;
  const double dlo = a - lo, dhi = hi - a;
  double r;
  if (dlo < dhi) {
    r = lo;
  } else if (dhi < dlo) {
    r = hi;
  } else {
    r = std::fmod(k, 2.0) == 0 ? lo : hi;
  }
  if (r >= std::ldexp(1.0, 128)) return sign | 0x7f80;
  // r has at most 8 significant bits and is in float range: exact as float,
  // and its low 16 bits are zero.
  const uint32_t bits = Bits(static_cast<float>(r));
  EXPECT_EQ(bits & 0xffffu, 0u) << "reference bug for " << d;
  return static_cast<uint16_t>(sign | (bits >> 16));
}
inline uint16_t FloatToBf16(float f) {
  return DoubleToBf16(static_cast<double>(f));
}

// ---- failure reporting for sweeps -----------------------------------------

// Counts mismatches in a loop over millions of inputs and reports the first
// few, so that a broken conversion gives a readable failure.
class Mismatches {
 public:
  explicit Mismatches(const char *what) : what_(what) {}
  template <typename Msg>
  void Check(bool ok, Msg &&msg) {
    ++checked_;
    if (ok) return;
    if (++count_ <= 10) ADD_FAILURE() << what_ << ": " << msg();
  }
  ~Mismatches() {
    EXPECT_EQ(count_, 0u) << what_ << ": " << count_ << " mismatches out of " << checked_;
    EXPECT_GT(checked_, 0u) << what_ << ": nothing was checked";
  }

 private:
  const char *what_;
  size_t count_ = 0;
  size_t checked_ = 0;
};

inline std::string Hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%x", v);
  return buf;
}

}  // namespace ref
