#include "dtype.h"

#include <type_traits>

#include "core/float16.h"

namespace bench {
namespace {

// The library's conversions (round to nearest even), so the benchmark checks
// against the same rounding the library does.
using infiniccl::BFloat16ToFloat;
using infiniccl::FloatToBFloat16;
using infiniccl::FloatToHalf;
using infiniccl::HalfToFloat;

constexpr DType kTypes[] = {
    {"int8", infinicclInt8, 1, Kind::kSigned},
    {"int16", infinicclInt16, 2, Kind::kSigned},
    {"int32", infinicclInt32, 4, Kind::kSigned},
    {"int64", infinicclInt64, 8, Kind::kSigned},
    {"uint8", infinicclUInt8, 1, Kind::kUnsigned},
    {"uint16", infinicclUInt16, 2, Kind::kUnsigned},
    {"uint32", infinicclUInt32, 4, Kind::kUnsigned},
    {"uint64", infinicclUInt64, 8, Kind::kUnsigned},
    {"float16", infinicclFloat16, 2, Kind::kHalf},
    {"bfloat16", infinicclBFloat16, 2, Kind::kBFloat},
    {"float32", infinicclFloat32, 4, Kind::kFloat},
    {"float64", infinicclFloat64, 8, Kind::kFloat},
};

struct Alias {
  const char *alias;
  const char *name;
};
constexpr Alias kAliases[] = {{"half", "float16"},   {"fp16", "float16"},
                              {"bf16", "bfloat16"},  {"float", "float32"},
                              {"double", "float64"}, {"char", "int8"},
                              {"int", "int32"}};

constexpr RedOp kOps[] = {{"sum", infinicclSum},
                          {"prod", infinicclProd},
                          {"max", infinicclMax},
                          {"min", infinicclMin},
                          {"avg", infinicclAvg},
                          {"band", infinicclBand},
                          {"bor", infinicclBor},
                          {"bxor", infinicclBxor}};

// Element-wise op on native types; integer Sum/Prod wrap (no signed UB).
// Band/Bor/Bxor: integer types only (options refuse the others).
template <typename T>
T Apply(infinicclRedOp_t op, T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    if (op == infinicclBand) return static_cast<T>(a & b);
    if (op == infinicclBor) return static_cast<T>(a | b);
    if (op == infinicclBxor) return static_cast<T>(a ^ b);
  }
  switch (op) {
    case infinicclMax: return a < b ? b : a;
    case infinicclMin: return b < a ? b : a;
    case infinicclProd:
      if constexpr (std::is_integral_v<T>)
        return static_cast<T>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
      else
        return a * b;
    default:  // Sum, Avg (divided afterwards)
      if constexpr (std::is_integral_v<T>)
        return static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
      else
        return a + b;
  }
}

template <typename T>
void CombineT(infinicclRedOp_t op, void *out, const void *a, const void *b, size_t n) {
  T *o = static_cast<T *>(out);
  const T *x = static_cast<const T *>(a);
  const T *y = static_cast<const T *>(b);
  for (size_t i = 0; i < n; ++i) o[i] = Apply<T>(op, x[i], y[i]);
}

// float16/bfloat16: combine in float, round once per step.
template <float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float)>
void Combine16(infinicclRedOp_t op, void *out, const void *a, const void *b, size_t n) {
  uint16_t *o = static_cast<uint16_t *>(out);
  const uint16_t *x = static_cast<const uint16_t *>(a);
  const uint16_t *y = static_cast<const uint16_t *>(b);
  for (size_t i = 0; i < n; ++i)
    o[i] = FromFloat(Apply<float>(op, ToFloat(x[i]), ToFloat(y[i])));
}

}  // namespace

const DType *FindDType(const std::string &name) {
  std::string canonical = name;
  for (const Alias &a : kAliases)
    if (name == a.alias) canonical = a.name;
  for (const DType &t : kTypes)
    if (canonical == t.name) return &t;
  return nullptr;
}

const char *DTypeNames() {
  return "int8 int16 int32 int64 uint8 uint16 uint32 uint64 float16 bfloat16 "
         "float32 float64 (aliases: char int half float double fp16 bf16)";
}

MPI_Datatype MpiMoveType(const DType &t) {
  switch (t.id) {
    case infinicclInt8: return MPI_INT8_T;
    case infinicclInt16: return MPI_INT16_T;
    case infinicclInt32: return MPI_INT32_T;
    case infinicclInt64: return MPI_INT64_T;
    case infinicclUInt8: return MPI_UINT8_T;
    case infinicclUInt16: return MPI_UINT16_T;
    case infinicclUInt32: return MPI_UINT32_T;
    case infinicclUInt64: return MPI_UINT64_T;
    case infinicclFloat16:
    case infinicclBFloat16: return MPI_UINT16_T;
    case infinicclFloat32: return MPI_FLOAT;
    case infinicclFloat64: return MPI_DOUBLE;
    default: return MPI_DATATYPE_NULL;
  }
}

MPI_Datatype MpiReduceType(const DType &t) {
  if (t.kind == Kind::kHalf || t.kind == Kind::kBFloat) return MPI_DATATYPE_NULL;
  return MpiMoveType(t);
}

const RedOp *FindRedOp(const std::string &name) {
  for (const RedOp &o : kOps)
    if (name == o.name) return &o;
  return nullptr;
}

MPI_Op MpiOp(infinicclRedOp_t op) {
  switch (op) {
    case infinicclProd: return MPI_PROD;
    case infinicclMax: return MPI_MAX;
    case infinicclMin: return MPI_MIN;
    case infinicclBand: return MPI_BAND;
    case infinicclBor: return MPI_BOR;
    case infinicclBxor: return MPI_BXOR;
    default: return MPI_SUM;
  }
}

double Load(const DType &t, const void *p, size_t i) {
  switch (t.id) {
    case infinicclInt8: return static_cast<const int8_t *>(p)[i];
    case infinicclInt16: return static_cast<const int16_t *>(p)[i];
    case infinicclInt32: return static_cast<const int32_t *>(p)[i];
    case infinicclInt64: return static_cast<double>(static_cast<const int64_t *>(p)[i]);
    case infinicclUInt8: return static_cast<const uint8_t *>(p)[i];
    case infinicclUInt16: return static_cast<const uint16_t *>(p)[i];
    case infinicclUInt32: return static_cast<const uint32_t *>(p)[i];
    case infinicclUInt64: return static_cast<double>(static_cast<const uint64_t *>(p)[i]);
    case infinicclFloat16: return HalfToFloat(static_cast<const uint16_t *>(p)[i]);
    case infinicclBFloat16: return BFloat16ToFloat(static_cast<const uint16_t *>(p)[i]);
    case infinicclFloat32: return static_cast<const float *>(p)[i];
    case infinicclFloat64: return static_cast<const double *>(p)[i];
    default: return 0.0;
  }
}

void Store(const DType &t, void *p, size_t i, double v) {
  switch (t.id) {
    case infinicclInt8: static_cast<int8_t *>(p)[i] = static_cast<int8_t>(v); break;
    case infinicclInt16: static_cast<int16_t *>(p)[i] = static_cast<int16_t>(v); break;
    case infinicclInt32: static_cast<int32_t *>(p)[i] = static_cast<int32_t>(v); break;
    case infinicclInt64: static_cast<int64_t *>(p)[i] = static_cast<int64_t>(v); break;
    case infinicclUInt8: static_cast<uint8_t *>(p)[i] = static_cast<uint8_t>(v); break;
    case infinicclUInt16: static_cast<uint16_t *>(p)[i] = static_cast<uint16_t>(v); break;
    case infinicclUInt32: static_cast<uint32_t *>(p)[i] = static_cast<uint32_t>(v); break;
    case infinicclUInt64: static_cast<uint64_t *>(p)[i] = static_cast<uint64_t>(v); break;
    case infinicclFloat16:
      static_cast<uint16_t *>(p)[i] = FloatToHalf(static_cast<float>(v));
      break;
    case infinicclBFloat16:
      static_cast<uint16_t *>(p)[i] = FloatToBFloat16(static_cast<float>(v));
      break;
    case infinicclFloat32: static_cast<float *>(p)[i] = static_cast<float>(v); break;
    case infinicclFloat64: static_cast<double *>(p)[i] = v; break;
    default: break;
  }
}

double RoundTo(const DType &t, double v) {
  alignas(8) unsigned char cell[8];
  Store(t, cell, 0, v);
  return Load(t, cell, 0);
}

void Combine(const DType &t, infinicclRedOp_t op, void *out, const void *a, const void *b,
             size_t n) {
  switch (t.id) {
    case infinicclInt8: CombineT<int8_t>(op, out, a, b, n); break;
    case infinicclInt16: CombineT<int16_t>(op, out, a, b, n); break;
    case infinicclInt32: CombineT<int32_t>(op, out, a, b, n); break;
    case infinicclInt64: CombineT<int64_t>(op, out, a, b, n); break;
    case infinicclUInt8: CombineT<uint8_t>(op, out, a, b, n); break;
    case infinicclUInt16: CombineT<uint16_t>(op, out, a, b, n); break;
    case infinicclUInt32: CombineT<uint32_t>(op, out, a, b, n); break;
    case infinicclUInt64: CombineT<uint64_t>(op, out, a, b, n); break;
    case infinicclFloat16: Combine16<HalfToFloat, FloatToHalf>(op, out, a, b, n); break;
    case infinicclBFloat16:
      Combine16<BFloat16ToFloat, FloatToBFloat16>(op, out, a, b, n);
      break;
    case infinicclFloat32: CombineT<float>(op, out, a, b, n); break;
    case infinicclFloat64: CombineT<double>(op, out, a, b, n); break;
    default: break;
  }
}


}  // namespace bench
