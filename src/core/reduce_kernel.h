// The body of ReduceInto (core/reduce.h), compiled once per instruction set:
// reduce_baseline.cpp (the build's own flags), reduce_avx2.cpp (AVX2, FMA,
// F16C) and reduce_avx512.cpp (AVX-512 F, BW, VL, DQ) each define
// INFINICCL_REDUCE_NS and include this file, so every compilation lands in its
// own namespace; reduce.cpp picks one at run time. The arithmetic is plain
// loops that the compiler vectorises at the width the flags allow; the 16-bit
// float conversions are written with intrinsics where the flags provide them
// (F16C for float16, integer shifts for bfloat16) and give the same bits as
// core/float16.h's scalar ones.
//
// Everything here has internal linkage, and the AVX builds call no inline
// function of another header: an out-of-line copy of such a function, compiled
// with AVX instructions, could be the one the linker keeps for the whole
// program.
#ifndef INFINICCL_REDUCE_NS
#error "define INFINICCL_REDUCE_NS before including core/reduce_kernel.h"
#endif

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "core/float16.h"
#include "core/reduce.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
#define INFINICCL_REDUCE_AVX512 1
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*() and warn about
// it where they are inlined (GCC bug 105593).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#elif defined(__AVX2__) && defined(__F16C__)
#define INFINICCL_REDUCE_AVX2 1
#include <immintrin.h>
#endif

namespace infiniccl::INFINICCL_REDUCE_NS {

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
  } else if constexpr (kOp == infinicclMin) {
    return b < a ? b : a;
  } else if constexpr (kOp == infinicclBand) {
    return static_cast<T>(a & b);
  } else if constexpr (kOp == infinicclBor) {
    return static_cast<T>(a | b);
  } else {
    static_assert(kOp == infinicclBxor);
    return static_cast<T>(a ^ b);
  }
}

#if defined(INFINICCL_REDUCE_AVX512)
// step(i, lanes) over [0, len) 16 elements at a time: every lane but in the
// last, partial step, which has a mask of the elements left.
template <typename Step>
inline void By16(size_t len, Step step) {
  size_t i = 0;
  for (; i + 16 <= len; i += 16) step(i, __mmask16(0xffff));
  if (i < len) step(i, static_cast<__mmask16>((1u << (len - i)) - 1u));
}
#endif

// A type combined as it is stored.
template <typename T>
struct Plain {
  using Acc = T;
  static constexpr bool kConverts = false;
  static void Store(const T *in, T *out, size_t len) { std::memcpy(out, in, len * sizeof(T)); }
};

// float16: combined in float. Float to half rounds to nearest even; overflow
// gives Inf; every NaN becomes the quiet NaN of its sign (0x7e00), as
// FloatToHalf does.
struct Half {
  using Acc = float;
  static constexpr bool kConverts = true;
#if defined(INFINICCL_REDUCE_AVX512)
  static void Load(const uint16_t *in, float *out, size_t len) {
    By16(len, [&](size_t i, __mmask16 m) {
      const __m256i h = _mm256_maskz_loadu_epi16(m, in + i);
      _mm512_mask_storeu_ps(out + i, m, _mm512_maskz_cvtph_ps(m, h));
    });
  }
  static void Store(const float *in, uint16_t *out, size_t len) {
    const __m256i keep = _mm256_set1_epi16(static_cast<short>(0xfe00));
    By16(len, [&](size_t i, __mmask16 m) {
      const __m512 x = _mm512_maskz_loadu_ps(m, in + i);
      __m256i h = _mm512_maskz_cvtps_ph(m, x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      // The instruction keeps a NaN's top payload bits; FloatToHalf drops them.
      const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
      h = _mm256_mask_blend_epi16(nan, h, _mm256_and_si256(h, keep));
      _mm256_mask_storeu_epi16(out + i, m, h);
    });
  }
#elif defined(INFINICCL_REDUCE_AVX2)
  static void Load(const uint16_t *in, float *out, size_t len) {
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
      _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(
                                    reinterpret_cast<const __m128i *>(in + i))));
    }
    if (i < len) {  // the tail through a full vector
      uint16_t h[8] = {};
      float f[8];
      std::memcpy(h, in + i, (len - i) * sizeof(uint16_t));
      _mm256_storeu_ps(f, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(h))));
      std::memcpy(out + i, f, (len - i) * sizeof(float));
    }
  }
  static __m128i Eight(__m256 x) {
    const __m128i h = _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    // The instruction keeps a NaN's top payload bits; FloatToHalf drops them.
    const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(x, x, _CMP_UNORD_Q));
    const __m128i nan16 = _mm_packs_epi32(_mm256_castsi256_si128(nan),
                                          _mm256_extracti128_si256(nan, 1));
    return _mm_andnot_si128(_mm_and_si128(nan16, _mm_set1_epi16(0x01ff)), h);
  }
  static void Store(const float *in, uint16_t *out, size_t len) {
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
      _mm_storeu_si128(reinterpret_cast<__m128i *>(out + i), Eight(_mm256_loadu_ps(in + i)));
    }
    if (i < len) {
      float f[8] = {};
      uint16_t h[8];
      std::memcpy(f, in + i, (len - i) * sizeof(float));
      _mm_storeu_si128(reinterpret_cast<__m128i *>(h), Eight(_mm256_loadu_ps(f)));
      std::memcpy(out + i, h, (len - i) * sizeof(uint16_t));
    }
  }
#else
  static void Load(const uint16_t *in, float *out, size_t len) {
    for (size_t i = 0; i < len; ++i) out[i] = HalfToFloat(in[i]);
  }
  static void Store(const float *in, uint16_t *out, size_t len) {
    for (size_t i = 0; i < len; ++i) out[i] = FloatToHalf(in[i]);
  }
#endif
};

// bfloat16: the top half of a float. Float to bfloat16 rounds to nearest
// even; a NaN keeps its sign and top payload bits and is made quiet (bit 6),
// as FloatToBFloat16 does.
struct BFloat16 {
  using Acc = float;
  static constexpr bool kConverts = true;
#if defined(INFINICCL_REDUCE_AVX512)
  static void Load(const uint16_t *in, float *out, size_t len) {
    By16(len, [&](size_t i, __mmask16 m) {
      const __m512i x = _mm512_maskz_cvtepu16_epi32(m, _mm256_maskz_loadu_epi16(m, in + i));
      _mm512_mask_storeu_ps(out + i, m, _mm512_castsi512_ps(_mm512_slli_epi32(x, 16)));
    });
  }
  static void Store(const float *in, uint16_t *out, size_t len) {
    const __m512i one = _mm512_set1_epi32(1), half = _mm512_set1_epi32(0x7fff);
    const __m512i abs = _mm512_set1_epi32(0x7fffffff), inf = _mm512_set1_epi32(0x7f800000);
    const __m512i quiet = _mm512_set1_epi32(0x40);
    By16(len, [&](size_t i, __mmask16 m) {
      const __m512i x = _mm512_castps_si512(_mm512_maskz_loadu_ps(m, in + i));
      const __m512i top = _mm512_srli_epi32(x, 16);
      const __m512i bias = _mm512_add_epi32(half, _mm512_and_si512(top, one));
      __m512i r = _mm512_srli_epi32(_mm512_add_epi32(x, bias), 16);
      const __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(x, abs), inf);
      r = _mm512_mask_or_epi32(r, nan, top, quiet);
      _mm256_mask_storeu_epi16(out + i, m, _mm512_maskz_cvtepi32_epi16(m, r));
    });
  }
#elif defined(INFINICCL_REDUCE_AVX2)
  static void Load(const uint16_t *in, float *out, size_t len) {
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
      const __m256i x =
          _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(in + i)));
      _mm256_storeu_ps(out + i, _mm256_castsi256_ps(_mm256_slli_epi32(x, 16)));
    }
    for (; i < len; ++i) {
      const uint32_t x = static_cast<uint32_t>(in[i]) << 16;
      std::memcpy(out + i, &x, sizeof x);
    }
  }
  static __m128i Eight(__m256i x) {
    const __m256i top = _mm256_srli_epi32(x, 16);
    const __m256i bias =
        _mm256_add_epi32(_mm256_set1_epi32(0x7fff), _mm256_and_si256(top, _mm256_set1_epi32(1)));
    const __m256i r = _mm256_srli_epi32(_mm256_add_epi32(x, bias), 16);
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(x, _mm256_set1_epi32(0x7fffffff)),
                                           _mm256_set1_epi32(0x7f800000));
    const __m256i q = _mm256_or_si256(top, _mm256_set1_epi32(0x40));
    const __m256i v = _mm256_blendv_epi8(r, q, nan);  // every lane <= 0xffff
    return _mm_packus_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  }
  static void Store(const float *in, uint16_t *out, size_t len) {
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
      const __m256i x = _mm256_castps_si256(_mm256_loadu_ps(in + i));
      _mm_storeu_si128(reinterpret_cast<__m128i *>(out + i), Eight(x));
    }
    if (i < len) {
      uint32_t f[8] = {};
      uint16_t h[8];
      std::memcpy(f, in + i, (len - i) * sizeof(float));
      _mm_storeu_si128(reinterpret_cast<__m128i *>(h),
                       Eight(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(f))));
      std::memcpy(out + i, h, (len - i) * sizeof(uint16_t));
    }
  }
#else
  static void Load(const uint16_t *in, float *out, size_t len) {
    for (size_t i = 0; i < len; ++i) out[i] = BFloat16ToFloat(in[i]);
  }
  static void Store(const float *in, uint16_t *out, size_t len) {
    for (size_t i = 0; i < len; ++i) out[i] = FloatToBFloat16(in[i]);
  }
#endif
};

// Source `k`'s block as Acc: the source itself, or converted into `buf`.
template <typename T, typename Codec>
inline const typename Codec::Acc *View(const T *src, typename Codec::Acc *buf, size_t len) {
  if constexpr (Codec::kConverts) {
    Codec::Load(src, buf, len);
    return buf;
  } else {
    (void)buf, (void)len;
    return src;
  }
}

template <typename T, typename Codec, infinicclRedOp_t kOp>
void ReduceBlocks(T *dst, const T *const *srcs, int n, size_t count, int divisor, T *copy) {
  using Acc = typename Codec::Acc;
  alignas(64) Acc acc[kBlock];
  alignas(64) Acc buf[Codec::kConverts ? kBlock : 1];
  for (size_t at = 0; at < count; at += kBlock) {
    const size_t len = count - at < kBlock ? count - at : kBlock;
    const Acc *a = View<T, Codec>(srcs[0] + at, acc, len);
    if (n == 1) {
      if (a != acc) std::memcpy(acc, a, len * sizeof(Acc));
    } else {
      const Acc *b = View<T, Codec>(srcs[1] + at, buf, len);
      for (size_t i = 0; i < len; ++i) acc[i] = Combine<Acc, kOp>(a[i], b[i]);
    }
    for (int k = 2; k < n; ++k) {
      const Acc *b = View<T, Codec>(srcs[k] + at, buf, len);
      for (size_t i = 0; i < len; ++i) acc[i] = Combine<Acc, kOp>(acc[i], b[i]);
    }
    if constexpr (kOp == infinicclAvg) {
      const Acc div = static_cast<Acc>(divisor);
      for (size_t i = 0; i < len; ++i) acc[i] = static_cast<Acc>(acc[i] / div);
    }
    T *d = dst + at;
    Codec::Store(acc, d, len);
    if (copy != nullptr) std::memcpy(copy + at, d, len * sizeof(T));
  }
}

// Integer Avg divides the wrapped sum as the type (DivideInPlace's rule).
// The bitwise ops exist for integer types only (validation refuses the
// others).
template <typename T, typename Codec>
void ReduceTyped(void *dst, const void *const *srcs, int n, size_t count, infinicclRedOp_t op,
                 int divisor, void *copy_to) {
  T *d = static_cast<T *>(dst);
  T *c = static_cast<T *>(copy_to);
  const T *const *s = reinterpret_cast<const T *const *>(srcs);
  switch (op) {
    case infinicclSum: return ReduceBlocks<T, Codec, infinicclSum>(d, s, n, count, 1, c);
    case infinicclProd: return ReduceBlocks<T, Codec, infinicclProd>(d, s, n, count, 1, c);
    case infinicclMax: return ReduceBlocks<T, Codec, infinicclMax>(d, s, n, count, 1, c);
    case infinicclMin: return ReduceBlocks<T, Codec, infinicclMin>(d, s, n, count, 1, c);
    case infinicclAvg: return ReduceBlocks<T, Codec, infinicclAvg>(d, s, n, count, divisor, c);
    default: break;
  }
  if constexpr (std::is_integral_v<typename Codec::Acc>) {
    switch (op) {
      case infinicclBand: return ReduceBlocks<T, Codec, infinicclBand>(d, s, n, count, 1, c);
      case infinicclBor: return ReduceBlocks<T, Codec, infinicclBor>(d, s, n, count, 1, c);
      case infinicclBxor: return ReduceBlocks<T, Codec, infinicclBxor>(d, s, n, count, 1, c);
      default: return;
    }
  }
}

template <typename T>
void ReducePlain(void *dst, const void *const *srcs, int n, size_t count, infinicclRedOp_t op,
                 int divisor, void *copy) {
  ReduceTyped<T, Plain<T>>(dst, srcs, n, count, op, divisor, copy);
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
      return ReduceTyped<uint16_t, Half>(dst, srcs, n, count, op, div, copy);
    case infinicclBFloat16:
      return ReduceTyped<uint16_t, BFloat16>(dst, srcs, n, count, op, div, copy);
    default: return;
  }
}

}  // namespace infiniccl::INFINICCL_REDUCE_NS
