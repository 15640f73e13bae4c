// Helpers shared by the MPI test programs.
//
// Everything here is written independently of the library (own fp16/bf16
// codecs, own expected values) so a test can never agree with a library bug
// by sharing its code. Values are exact small integers, as nccl-tests uses,
// so every dtype holds them exactly and results can be compared bit for bit;
// only Avg on floating types needs a tolerance (one rounding of the type).
#ifndef INFINICCL_TESTS_MPI_TEST_UTIL_H_
#define INFINICCL_TESTS_MPI_TEST_UTIL_H_

#include <infiniccl/infiniccl.h>
#include <mpi.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cmath>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

namespace itest {

// ---- failure recording ------------------------------------------------------
// Failures are counted, not fatal, so one run reports every broken case; only
// the first few are printed to keep logs readable.
inline int g_rank = -1;
inline long g_failures = 0;
inline constexpr long kMaxPrinted = 25;

__attribute__((format(printf, 4, 5))) inline void Fail(const char *file, int line,
                                                       const char *cond,
                                                       const char *fmt = nullptr,
                                                       ...) {
  ++g_failures;
  if (g_failures > kMaxPrinted) return;
  // One write per line, so lines from several ranks do not interleave.
  char line_buf[1024];
  int len = std::snprintf(line_buf, sizeof line_buf, "[rank %d] FAIL %s:%d: %s%s", g_rank, file,
                          line, cond, fmt != nullptr ? ": " : "");
  if (fmt != nullptr && len >= 0 && size_t(len) < sizeof line_buf) {
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(line_buf + len, sizeof line_buf - len, fmt, ap);
    va_end(ap);
  }
  std::fprintf(stderr, "%s\n", line_buf);
  if (g_failures == kMaxPrinted)
    std::fprintf(stderr, "[rank %d] (further failures counted, not printed)\n", g_rank);
}

// The failures of every rank, summed over MPI_COMM_WORLD (a collective: all
// ranks call it, before MPI is finalised).
inline long TotalFailures() {
  long total = 0;
  MPI_Allreduce(&g_failures, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  return total;
}

// CHECK(cond) or CHECK(cond, "printf format", args...).
#define CHECK(cond, ...)                                                     \
  do {                                                                       \
    if (!(cond)) ::itest::Fail(__FILE__, __LINE__, #cond __VA_OPT__(, ) __VA_ARGS__); \
  } while (0)

// Checks a call's result code and shows the library's own message on mismatch.
#define CHECK_RC(call, expected)                                                   \
  do {                                                                             \
    infinicclResult_t rc_ = (call);                                                \
    if (rc_ != (expected))                                                         \
      ::itest::Fail(__FILE__, __LINE__, #call, "got %d (%s), expected %d (%s); last error: %s", \
                    int(rc_), ::itest::ResultName(rc_), int(expected),             \
                    ::itest::ResultName(expected), ::itest::SafeLastError());      \
  } while (0)

inline const char *ResultName(infinicclResult_t r) {
  static const char *const kNames[] = {"Success",       "UnhandledError", "SystemError",
                                       "InternalError", "InvalidArgument", "InvalidUsage",
                                       "RemoteError",   "InProgress",     "NotSupported",
                                       "NumResults"};
  return (r >= 0 && r < 10) ? kNames[r] : "?";
}

inline const char *SafeLastError() {
  const char *m = infinicclGetLastError(nullptr);
  return m != nullptr ? m : "(null)";
}

// The library's staging counters now (infinicclGetStagingStats).
inline infinicclStagingStats StagingStats() {
  infinicclStagingStats s{};
  CHECK(infinicclGetStagingStats(&s) == infinicclSuccess);
  return s;
}

// True when msg names `call` as a whole word, optionally prefixed by
// "infiniccl": looking for "Reduce" must not match "AllReduce" or
// "ReduceScatter", or a stale message would pass for the wrong call.
inline bool NamesCall(const char *msg, std::string_view call) {
  if (msg == nullptr) return false;
  std::string_view m(msg);
  auto is_ident = [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) != 0; };
  for (size_t pos = m.find(call); pos != std::string_view::npos; pos = m.find(call, pos + 1)) {
    bool left_ok = pos == 0 || !is_ident(m[pos - 1]) ||
                   (pos >= 9 && m.substr(pos - 9, 9) == "infiniccl");
    bool right_ok = pos + call.size() == m.size() || !is_ident(m[pos + call.size()]);
    if (left_ok && right_ok) return true;
  }
  return false;
}

// ---- fp16 / bf16, round to nearest even ---------------------------------
inline uint16_t FloatToHalf(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  uint32_t a = x & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | 0x7e00u;  // NaN
  if (a >= 0x477ff000u) return sign | 0x7c00u; // >= 65520 rounds to inf
  if (a < 0x38800000u) {                       // below 2^-14: subnormal or zero
    uint32_t e = a >> 23;
    if (e < 102) return sign;                  // below 2^-25: rounds to zero
    uint32_t m = (a & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - e;                  // value = m * 2^(e-150) = h * 2^-24
    uint32_t h = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1u))) ++h;
    return static_cast<uint16_t>(sign | h);
  }
  uint32_t r = a - 0x38000000u;                // rebias exponent 127 -> 15
  uint32_t h = r >> 13, rem = r & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // carry may reach inf: fine
  return static_cast<uint16_t>(sign | h);
}

inline float HalfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0) {
    float v = std::ldexp(static_cast<float>(m), -24);
    return sign ? -v : v;
  }
  if (e == 31) return std::bit_cast<float>(sign | 0x7f800000u | (m << 13));
  return std::bit_cast<float>(sign | ((e + 112) << 23) | (m << 13));
}

inline uint16_t FloatToBFloat16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

inline float BFloat16ToFloat(uint16_t b) { return std::bit_cast<float>(uint32_t(b) << 16); }

// ---- dtypes ------------------------------------------------------------------
struct DtypeInfo {
  infinicclDataType_t dt;
  const char *name;
  size_t size;
  bool is_float;
  bool is_signed;
  int mant_bits;  // explicit mantissa bits (floating types): Avg tolerance
  double lo;      // data patterns span [lo, lo + span): every value exact
  double span;
};

inline constexpr DtypeInfo kDtypes[infinicclNumTypes] = {
    {infinicclInt8, "Int8", 1, false, true, 0, -128, 256},
    {infinicclInt16, "Int16", 2, false, true, 0, -32768, 65536},
    {infinicclInt32, "Int32", 4, false, true, 0, -1073741824.0, 2147483648.0},
    {infinicclInt64, "Int64", 8, false, true, 0, -0x1p51, 0x1p52},
    {infinicclUInt8, "UInt8", 1, false, false, 0, 0, 256},
    {infinicclUInt16, "UInt16", 2, false, false, 0, 0, 65536},
    {infinicclUInt32, "UInt32", 4, false, false, 0, 0, 4294967296.0},
    {infinicclUInt64, "UInt64", 8, false, false, 0, 0, 0x1p53},
    {infinicclFloat16, "Float16", 2, true, true, 10, -2048, 4097},
    {infinicclBFloat16, "BFloat16", 2, true, true, 7, -256, 513},
    {infinicclFloat32, "Float32", 4, true, true, 23, -0x1p24, 0x1p25 + 1},
    {infinicclFloat64, "Float64", 8, true, true, 52, -0x1p52, 0x1p53},
};

inline const DtypeInfo &Info(infinicclDataType_t dt) { return kDtypes[dt]; }

inline const char *OpName(infinicclRedOp_t op) {
  static const char *const kNames[] = {"Sum", "Prod", "Max", "Min", "Avg", "Band", "Bor", "Bxor"};
  return (op >= 0 && op < infinicclNumOps) ? kNames[op] : "-";
}

// Element idx of buffer p, written from / read into a double. Callers keep
// values representable (integers in range), so the conversions are exact
// except Avg results on floating types, which are rounded to nearest even.
inline void Encode(infinicclDataType_t dt, void *p, size_t idx, double v) {
  char *b = static_cast<char *>(p);
  auto put = [&](auto x) { std::memcpy(b + idx * sizeof(x), &x, sizeof(x)); };
  switch (dt) {
    case infinicclInt8: put(static_cast<int8_t>(v)); break;
    case infinicclInt16: put(static_cast<int16_t>(v)); break;
    case infinicclInt32: put(static_cast<int32_t>(v)); break;
    case infinicclInt64: put(static_cast<int64_t>(v)); break;
    case infinicclUInt8: put(static_cast<uint8_t>(v)); break;
    case infinicclUInt16: put(static_cast<uint16_t>(v)); break;
    case infinicclUInt32: put(static_cast<uint32_t>(v)); break;
    case infinicclUInt64: put(static_cast<uint64_t>(v)); break;
    case infinicclFloat16: put(FloatToHalf(static_cast<float>(v))); break;
    case infinicclBFloat16: put(FloatToBFloat16(static_cast<float>(v))); break;
    case infinicclFloat32: put(static_cast<float>(v)); break;
    case infinicclFloat64: put(v); break;
    default: break;
  }
}

inline double Decode(infinicclDataType_t dt, const void *p, size_t idx) {
  const char *b = static_cast<const char *>(p);
  auto get = [&](auto x) {
    std::memcpy(&x, b + idx * sizeof(x), sizeof(x));
    return x;
  };
  switch (dt) {
    case infinicclInt8: return get(int8_t{});
    case infinicclInt16: return get(int16_t{});
    case infinicclInt32: return get(int32_t{});
    case infinicclInt64: return static_cast<double>(get(int64_t{}));
    case infinicclUInt8: return get(uint8_t{});
    case infinicclUInt16: return get(uint16_t{});
    case infinicclUInt32: return get(uint32_t{});
    case infinicclUInt64: return static_cast<double>(get(uint64_t{}));
    case infinicclFloat16: return HalfToFloat(get(uint16_t{}));
    case infinicclBFloat16: return BFloat16ToFloat(get(uint16_t{}));
    case infinicclFloat32: return get(float{});
    case infinicclFloat64: return get(double{});
    default: return NAN;
  }
}

// ---- value patterns ---------------------------------------------------------
inline uint64_t Mix(uint64_t seed, uint64_t rank, uint64_t idx) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + rank * 0xC2B2AE3D27D4EB4Full + idx;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Input of data-moving collectives: distinct per (seed, rank, index) across the
// whole exact range of the type, so misplaced blocks or stale data show up.
inline double DataValue(infinicclDataType_t dt, uint64_t seed, int rank, size_t idx) {
  const DtypeInfo &d = Info(dt);
  return d.lo + static_cast<double>(Mix(seed, uint64_t(rank), idx) %
                                    static_cast<uint64_t>(d.span));
}

// Rank `rank`'s DataValue pattern of `seed`, `count` elements, encoded.
inline std::vector<unsigned char> Pattern(infinicclDataType_t dt, uint64_t seed, int rank,
                                          size_t count) {
  std::vector<unsigned char> v(count * Info(dt).size);
  for (size_t i = 0; i < count; ++i) Encode(dt, v.data(), i, DataValue(dt, seed, rank, i));
  return v;
}

// Elements of `got` that differ from rank `from`'s pattern of `seed`.
inline size_t Wrong(infinicclDataType_t dt, uint64_t seed, int from, const void *got,
                    size_t count) {
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    if (Decode(dt, got, i) != DataValue(dt, seed, from, i)) ++wrong;
  }
  return wrong;
}

// The bitwise ops (integer types only).
inline bool IsBitwise(infinicclRedOp_t op) {
  return op == infinicclBand || op == infinicclBor || op == infinicclBxor;
}

// Input of reductions. Sum/Avg: |v| <= 5, so |sum| <= 5n stays exact in int8
// and bf16 for n <= 25. Max/Min: wider, negative for signed types. Prod:
// factors in {1, 2} (and -1 for signed), at most six 2s across all ranks so
// |product| <= 64 fits int8. Band/Bor/Bxor: arbitrary bits over the type's
// width (the sign bit included), 53 bits sign-extended for the 64-bit types
// so every value and every result is exact in a double; rank r's element
// also has bit r % width set and bit (r + 1) % width clear, so a rank's
// data missing or counted twice changes a bit.
inline double ReduceValue(infinicclDataType_t dt, infinicclRedOp_t op, uint64_t seed, int rank,
                          size_t idx) {
  uint64_t h = Mix(seed, uint64_t(rank), idx);
  bool sgn = Info(dt).is_signed;
  if (IsBitwise(op)) {
    const int bits = Info(dt).size == 8 ? 53 : int(Info(dt).size * 8);
    // Every other element denser (3/4 of the bits), so that Band keeps
    // bits across 4 ranks.
    uint64_t v = (idx % 2 ? h | Mix(seed + 1, uint64_t(rank), idx) : h) &
                 ((uint64_t{1} << bits) - 1);
    v |= uint64_t{1} << (rank % bits);
    v &= ~(uint64_t{1} << ((rank + 1) % bits));
    if (sgn && (v >> (bits - 1)) & 1) return double(int64_t(v) - (int64_t{1} << (bits - 1)) * 2);
    return double(v);
  }
  switch (op) {
    case infinicclProd: {
      double v = (rank < 6 && h % 3 == 0) ? 2 : 1;
      return (sgn && (h >> 8) % 5 == 0) ? -v : v;
    }
    case infinicclMax:
    case infinicclMin:
      if (!Info(dt).is_float && !sgn) {
        // Half the values have the top bit set, so comparing unsigned types as
        // signed shows (MPICH 4.0.2 does: pmodels/mpich#6083). 64-bit values
        // step by 2^11 to stay exact in a double.
        const size_t bits = Info(dt).size * 8;
        const double top = std::ldexp(1.0, int(bits) - 1);
        const uint64_t span = bits == 8 ? 128 : 201;
        return ((h & 1) ? top : 0) + double((h >> 1) % span) * (bits == 64 ? 2048 : 1);
      }
      return double(int64_t(h % 201) - 100);
    default:
      return sgn ? double(int64_t(h % 11) - 5) : double(h % 11);
  }
}

// Reference result of a reduction over ranks 0..n-1: Max/Min on the exact
// values (held in double, which also holds uint64 values above INT64_MAX),
// Sum/Prod/Avg in int64.
inline double ExpectedReduce(infinicclDataType_t dt, infinicclRedOp_t op, uint64_t seed, int n,
                             size_t idx) {
  if (IsBitwise(op)) {  // two's complement in int64: sign-extended stays sign-extended
    int64_t acc = static_cast<int64_t>(ReduceValue(dt, op, seed, 0, idx));
    for (int r = 1; r < n; ++r) {
      const int64_t v = static_cast<int64_t>(ReduceValue(dt, op, seed, r, idx));
      acc = op == infinicclBand ? (acc & v) : op == infinicclBor ? (acc | v) : (acc ^ v);
    }
    return static_cast<double>(acc);
  }
  if (op == infinicclMax || op == infinicclMin) {
    double m = ReduceValue(dt, op, seed, 0, idx);
    for (int r = 1; r < n; ++r) {
      double v = ReduceValue(dt, op, seed, r, idx);
      m = op == infinicclMax ? std::max(m, v) : std::min(m, v);
    }
    return m;
  }
  int64_t acc = static_cast<int64_t>(ReduceValue(dt, op, seed, 0, idx));
  for (int r = 1; r < n; ++r) {
    int64_t v = static_cast<int64_t>(ReduceValue(dt, op, seed, r, idx));
    acc = op == infinicclProd ? acc * v : acc + v;
  }
  if (op != infinicclAvg) return static_cast<double>(acc);
  if (Info(dt).is_float) return static_cast<double>(acc) / n;
  return static_cast<double>(acc / n);  // C division truncates toward zero
}

// Exact match, except Avg on floating types: within one rounding of the type.
inline bool Matches(infinicclDataType_t dt, infinicclRedOp_t op, double got, double expected) {
  if (op == infinicclAvg && Info(dt).is_float)
    return std::fabs(got - expected) <= std::ldexp(std::fabs(expected), -Info(dt).mant_bits);
  return got == expected;
}

// Rank `rank`'s input of a reduction test: ReduceValue for each element.
inline std::vector<unsigned char> ReduceInput(infinicclDataType_t dt, infinicclRedOp_t op,
                                              uint64_t seed, int rank, size_t count) {
  std::vector<unsigned char> h(count * Info(dt).size);
  for (size_t i = 0; i < count; ++i) Encode(dt, h.data(), i, ReduceValue(dt, op, seed, rank, i));
  return h;
}

// Elements of `got` that are not the reduction of `n` ranks' ReduceInput.
inline long CountWrongReduce(int n, infinicclDataType_t dt, infinicclRedOp_t op, uint64_t seed,
                             const std::vector<unsigned char> &got, size_t count) {
  long wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    if (!Matches(dt, op, Decode(dt, got.data(), i), ExpectedReduce(dt, op, seed, n, i))) ++wrong;
  }
  return wrong;
}

// ---- guarded buffers -------------------------------------------------------------
// A byte buffer with guard zones either side; the body starts as a known fill
// byte, so untouched regions and out-of-bounds writes can both be detected.
class GuardedBuffer {
 public:
  static constexpr size_t kGuard = 256;
  static constexpr unsigned char kGuardByte = 0xA5;
  static constexpr unsigned char kFillByte = 0x5A;

  explicit GuardedBuffer(size_t bytes) : bytes_(Checked(bytes)), storage_(bytes_ + 2 * kGuard, kGuardByte) {
    std::memset(data(), kFillByte, bytes_);
    if (on_create != nullptr) on_create(this);
  }
  ~GuardedBuffer() {
    if (on_destroy != nullptr) on_destroy(this);
  }
  GuardedBuffer(const GuardedBuffer &) = delete;
  GuardedBuffer &operator=(const GuardedBuffer &) = delete;
  // The whole storage, guards included (device mirrors copy all of it).
  unsigned char *storage() { return storage_.data(); }
  size_t storage_bytes() const { return storage_.size(); }
  // Hooks for the device-buffer variant of the tests (device_mirror.h).
  static inline void (*on_create)(GuardedBuffer *) = nullptr;
  static inline void (*on_destroy)(GuardedBuffer *) = nullptr;
  unsigned char *data() { return storage_.data() + kGuard; }
  const unsigned char *data() const { return storage_.data() + kGuard; }
  size_t bytes() const { return bytes_; }

  bool GuardsIntact() const {
    for (size_t i = 0; i < kGuard; ++i)
      if (storage_[i] != kGuardByte || storage_[kGuard + bytes_ + i] != kGuardByte) return false;
    return true;
  }
  // True when bytes [from, to) still hold the initial fill.
  bool Untouched(size_t from, size_t to) const {
    return std::all_of(data() + from, data() + to, [](unsigned char c) { return c == kFillByte; });
  }

 private:
  // Bounds the size for the optimiser too: GCC 12 otherwise warns that the
  // memset could exceed the maximum object size when bytes + guards wraps.
  static size_t Checked(size_t bytes) {
    if (bytes > (SIZE_MAX >> 2)) std::abort();
    return bytes;
  }
  size_t bytes_;
  std::vector<unsigned char> storage_;
};

}  // namespace itest

#endif  // INFINICCL_TESTS_MPI_TEST_UTIL_H_
