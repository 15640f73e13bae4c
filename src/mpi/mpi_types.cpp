#include "mpi/mpi_types.h"

#include <cstdint>
#include <utility>

#include "mpi/mpi_error.h"
#include "core/float16.h"

namespace infiniccl {

namespace {

template <float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float)>
void Reduce16(infinicclRedOp_t op, const void *in_v, void *inout_v, size_t n) {
  const uint16_t *in = static_cast<const uint16_t *>(in_v);
  uint16_t *inout = static_cast<uint16_t *>(inout_v);
  for (size_t i = 0; i < n; ++i) {
    const float a = ToFloat(in[i]);
    const float b = ToFloat(inout[i]);
    float r;
    switch (op) {
      case infinicclProd: r = a * b; break;
      case infinicclMax: r = a > b ? a : b; break;
      case infinicclMin: r = a < b ? a : b; break;
      default: r = a + b; break;  // Sum, and Avg's sum step
    }
    inout[i] = FromFloat(r);
  }
}

// MPI calls these with its own length type: int for MPI_Op_create, MPI_Count
// for MPI-4's MPI_Op_create_c.
template <bool kBf16, infinicclRedOp_t kOp, typename Len>
void UserOp(void *in, void *inout, Len *len, MPI_Datatype *) {
  const size_t n = static_cast<size_t>(*len);
  if (kBf16) {
    ReduceBFloat16(kOp, in, inout, n);
  } else {
    ReduceHalf(kOp, in, inout, n);
  }
}

// Unsigned Max/Min as user-defined ops: MPICH 4.0.x compares unsigned
// integers as signed in its built-in MPI_MAX/MPI_MIN (pmodels/mpich#6083),
// and Open MPI 4.1.2-4.1.4 had the same class of bug (open-mpi/ompi#10525).
template <typename T, bool kMax, typename Len>
void UnsignedMaxMin(void *in_v, void *inout_v, Len *len, MPI_Datatype *) {
  const T *in = static_cast<const T *>(in_v);
  T *inout = static_cast<T *>(inout_v);
  const size_t n = static_cast<size_t>(*len);
  for (size_t i = 0; i < n; ++i) {
    if (kMax ? in[i] > inout[i] : in[i] < inout[i]) inout[i] = in[i];
  }
}

#if MPI_VERSION >= 4
using LenType = MPI_Count;
int CreateOp(void (*fn)(void *, void *, MPI_Count *, MPI_Datatype *), MPI_Op *op) {
  return MPI_Op_create_c(fn, 1, op);
}
#else
using LenType = int;
int CreateOp(void (*fn)(void *, void *, int *, MPI_Datatype *), MPI_Op *op) {
  return MPI_Op_create(fn, 1, op);
}
#endif

struct Table {
  MPI_Datatype types[infinicclNumTypes];
  // [0]: float16, [1]: bfloat16; indexed by op (Sum, Prod, Max, Min).
  MPI_Op float16_ops[2][4] = {{MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL},
                              {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL}};
  // [UInt8, UInt16, UInt32, UInt64][Max, Min]
  MPI_Op unsigned_ops[4][2] = {{MPI_OP_NULL, MPI_OP_NULL},
                               {MPI_OP_NULL, MPI_OP_NULL},
                               {MPI_OP_NULL, MPI_OP_NULL},
                               {MPI_OP_NULL, MPI_OP_NULL}};
  bool ready = false;
};
Table g_table;

// Indexed by op: Sum, Prod, Max, Min, (Avg: Sum), Band, Bor, Bxor.
const MPI_Op kBuiltinOps[infinicclNumOps] = {MPI_SUM,  MPI_PROD, MPI_MAX, MPI_MIN,
                                             MPI_SUM,  MPI_BAND, MPI_BOR, MPI_BXOR};

Status MakeTwoByteType(const char *name, MPI_Datatype *out) {
  INFINICCL_RETURN_IF_ERROR(
      MpiCheck(MPI_Type_contiguous(2, MPI_BYTE, out), "MPI_Type_contiguous"));
  MPI_Type_set_name(*out, name);
  return MpiCheck(MPI_Type_commit(out), "MPI_Type_commit");
}

template <bool kBf16>
Status MakeOps(MPI_Op ops[4]) {
  INFINICCL_RETURN_IF_ERROR(MpiCheck(CreateOp(&UserOp<kBf16, infinicclSum, LenType>, &ops[0]), "MPI_Op_create"));
  INFINICCL_RETURN_IF_ERROR(MpiCheck(CreateOp(&UserOp<kBf16, infinicclProd, LenType>, &ops[1]), "MPI_Op_create"));
  INFINICCL_RETURN_IF_ERROR(MpiCheck(CreateOp(&UserOp<kBf16, infinicclMax, LenType>, &ops[2]), "MPI_Op_create"));
  return MpiCheck(CreateOp(&UserOp<kBf16, infinicclMin, LenType>, &ops[3]), "MPI_Op_create");
}

template <typename T>
Status MakeUnsignedOps(MPI_Op ops[2]) {
  INFINICCL_RETURN_IF_ERROR(MpiCheck(CreateOp(&UnsignedMaxMin<T, true, LenType>, &ops[0]), "MPI_Op_create"));
  return MpiCheck(CreateOp(&UnsignedMaxMin<T, false, LenType>, &ops[1]), "MPI_Op_create");
}

int UnsignedIndex(infinicclDataType_t dtype) {
  switch (dtype) {
    case infinicclUInt8: return 0;
    case infinicclUInt16: return 1;
    case infinicclUInt32: return 2;
    case infinicclUInt64: return 3;
    default: return -1;
  }
}

}  // namespace

void ReduceHalf(infinicclRedOp_t op, const void *in, void *inout, size_t n) {
  Reduce16<HalfToFloat, FloatToHalf>(op, in, inout, n);
}

void ReduceBFloat16(infinicclRedOp_t op, const void *in, void *inout, size_t n) {
  Reduce16<BFloat16ToFloat, FloatToBFloat16>(op, in, inout, n);
}

Status MpiTypeTable::Create() {
  if (g_table.ready) return Status::Ok();
  Table t;
  // Float16 and BFloat16 are made below.
  const std::pair<infinicclDataType_t, MPI_Datatype> types[] = {
      {infinicclInt8, MPI_INT8_T},           {infinicclInt16, MPI_INT16_T},
      {infinicclInt32, MPI_INT32_T},         {infinicclInt64, MPI_INT64_T},
      {infinicclUInt8, MPI_UINT8_T},         {infinicclUInt16, MPI_UINT16_T},
      {infinicclUInt32, MPI_UINT32_T},       {infinicclUInt64, MPI_UINT64_T},
      {infinicclFloat32, MPI_FLOAT},         {infinicclFloat64, MPI_DOUBLE},
      {infinicclFloat16, MPI_DATATYPE_NULL}, {infinicclBFloat16, MPI_DATATYPE_NULL}};
  for (const auto &[dtype, type] : types) t.types[dtype] = type;
  g_table = t;  // partially built state is cleaned up by Destroy on error
  INFINICCL_RETURN_IF_ERROR(MakeTwoByteType("infiniccl_float16", &g_table.types[infinicclFloat16]));
  INFINICCL_RETURN_IF_ERROR(MakeTwoByteType("infiniccl_bfloat16", &g_table.types[infinicclBFloat16]));
  INFINICCL_RETURN_IF_ERROR(MakeOps<false>(g_table.float16_ops[0]));
  INFINICCL_RETURN_IF_ERROR(MakeOps<true>(g_table.float16_ops[1]));
  INFINICCL_RETURN_IF_ERROR(MakeUnsignedOps<uint8_t>(g_table.unsigned_ops[0]));
  INFINICCL_RETURN_IF_ERROR(MakeUnsignedOps<uint16_t>(g_table.unsigned_ops[1]));
  INFINICCL_RETURN_IF_ERROR(MakeUnsignedOps<uint32_t>(g_table.unsigned_ops[2]));
  INFINICCL_RETURN_IF_ERROR(MakeUnsignedOps<uint64_t>(g_table.unsigned_ops[3]));
  g_table.ready = true;
  return Status::Ok();
}

void MpiTypeTable::Destroy() {
  auto free_ops = [](auto &table) {
    for (auto &ops : table) {
      for (MPI_Op &op : ops) {
        if (op != MPI_OP_NULL) MPI_Op_free(&op);
      }
    }
  };
  free_ops(g_table.float16_ops);
  free_ops(g_table.unsigned_ops);
  for (infinicclDataType_t d : {infinicclFloat16, infinicclBFloat16}) {
    if (g_table.types[d] != MPI_DATATYPE_NULL) MPI_Type_free(&g_table.types[d]);
  }
  g_table.ready = false;
}

bool MpiTypeTable::Ready() { return g_table.ready; }

MPI_Datatype MpiTypeTable::Type(infinicclDataType_t dtype) {
  return g_table.types[dtype];
}

MPI_Op MpiTypeTable::Op(infinicclDataType_t dtype, infinicclRedOp_t op) {
  const int index = op == infinicclAvg ? 0 : static_cast<int>(op);
  if (dtype == infinicclFloat16 || dtype == infinicclBFloat16) {
    // No bitwise op of a floating type (validation refuses it): MPI_OP_NULL,
    // which MPI rejects, rather than a read past the table.
    if (index >= 4) return MPI_OP_NULL;
    return g_table.float16_ops[dtype == infinicclFloat16 ? 0 : 1][index];
  }
  const int u = UnsignedIndex(dtype);
  if (u >= 0 && (op == infinicclMax || op == infinicclMin)) {
    return g_table.unsigned_ops[u][op == infinicclMax ? 0 : 1];
  }
  return kBuiltinOps[index];
}

}  // namespace infiniccl
