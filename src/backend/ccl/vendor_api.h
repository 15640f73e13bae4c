// The generic names CclBackend calls, for a CCL whose API is NCCL's under
// the prefix `p` (nccl, mccl): each type, constant and function is p + the
// generic name (ncclResult_t, ncclSuccess, ncclAllReduce, ...), and kPrefix
// ("nccl") is how error messages name the vendor's call; `stream` is the
// device runtime's stream type. Used inside a vendor's `Api` struct
// (vendor_nccl.h, vendor_mccl.h), which adds what differs between CCLs: its
// name and device kind, version format, split and the calls only some CCLs
// have. A name mapping only, as device/cuda_like/ has for the runtimes.
#pragma once

#include <cstddef>

#include "backend/ccl/ccl_mapping.h"
#include "device/device_runtime.h"

// Half/Float/Double rather than NCCL's Float16/Float32/Float64: NCCL defines
// both spellings (same values), MCCL the first.
// clang-format off
#define INFINICCL_CCL_API(p, stream)                                                     \
  static constexpr const char *kPrefix = #p;                                             \
  using Stream = stream;                                                                 \
  using Result = p##Result_t;                                                            \
  using Comm = p##Comm_t;                                                                \
  using UniqueId = p##UniqueId;                                                          \
  using DataType = p##DataType_t;                                                        \
  using RedOp = p##RedOp_t;                                                              \
  static constexpr Result kSuccess = p##Success;                                         \
  static constexpr Result kInProgress = p##InProgress;                                   \
                                                                                         \
  static DataType Type(CclType t) {                                                      \
    switch (t) {                                                                         \
      case CclType::kInt8: return p##Int8;                                               \
      case CclType::kUint8: return p##Uint8;                                             \
      case CclType::kInt32: return p##Int32;                                             \
      case CclType::kUint32: return p##Uint32;                                           \
      case CclType::kInt64: return p##Int64;                                             \
      case CclType::kUint64: return p##Uint64;                                           \
      case CclType::kFloat16: return p##Half;                                            \
      case CclType::kBfloat16: return p##Bfloat16;                                       \
      case CclType::kFloat32: return p##Float;                                           \
      case CclType::kFloat64: return p##Double;                                          \
    }                                                                                    \
    return p##Int8;                                                                      \
  }                                                                                      \
  static RedOp Op(CclOp op) {                                                            \
    switch (op) {                                                                        \
      case CclOp::kSum: return p##Sum;                                                   \
      case CclOp::kProd: return p##Prod;                                                 \
      case CclOp::kMax: return p##Max;                                                   \
      case CclOp::kMin: return p##Min;                                                   \
      case CclOp::kAvg: return p##Avg;                                                   \
    }                                                                                    \
    return p##Sum;                                                                       \
  }                                                                                      \
                                                                                         \
  static Result GetVersion(int *v) { return p##GetVersion(v); }                          \
  static const char *GetErrorString(Result r) { return p##GetErrorString(r); }           \
  static const char *GetLastError(Comm c) { return p##GetLastError(c); }                 \
  static Result GetUniqueId(UniqueId *id) { return p##GetUniqueId(id); }                 \
  static Result CommInitRank(Comm *c, int n, UniqueId id, int rank) {                    \
    return p##CommInitRank(c, n, id, rank);                                              \
  }                                                                                      \
  static Result CommDestroy(Comm c) { return p##CommDestroy(c); }                        \
  static Result CommAbort(Comm c) { return p##CommAbort(c); }                            \
  static Result CommGetAsyncError(Comm c, Result *r) {                                   \
    return p##CommGetAsyncError(c, r);                                                   \
  }                                                                                      \
  static Result GroupStart() { return p##GroupStart(); }                                 \
  static Result GroupEnd() { return p##GroupEnd(); }                                     \
                                                                                         \
  static Result AllReduce(const void *s, void *r, size_t n, DataType t, RedOp op,        \
                          Comm c, Stream st) {                                           \
    return p##AllReduce(s, r, n, t, op, c, st);                                          \
  }                                                                                      \
  static Result Broadcast(const void *s, void *r, size_t n, DataType t, int root,        \
                          Comm c, Stream st) {                                           \
    return p##Broadcast(s, r, n, t, root, c, st);                                        \
  }                                                                                      \
  static Result Reduce(const void *s, void *r, size_t n, DataType t, RedOp op, int root, \
                       Comm c, Stream st) {                                              \
    return p##Reduce(s, r, n, t, op, root, c, st);                                       \
  }                                                                                      \
  static Result AllGather(const void *s, void *r, size_t n, DataType t, Comm c,          \
                          Stream st) {                                                   \
    return p##AllGather(s, r, n, t, c, st);                                              \
  }                                                                                      \
  static Result ReduceScatter(const void *s, void *r, size_t n, DataType t, RedOp op,    \
                              Comm c, Stream st) {                                       \
    return p##ReduceScatter(s, r, n, t, op, c, st);                                      \
  }                                                                                      \
  static Result Send(const void *s, size_t n, DataType t, int peer, Comm c, Stream st) { \
    return p##Send(s, n, t, peer, c, st);                                                \
  }                                                                                      \
  static Result Recv(void *r, size_t n, DataType t, int peer, Comm c, Stream st) {       \
    return p##Recv(r, n, t, peer, c, st);                                                \
  }
// clang-format on
