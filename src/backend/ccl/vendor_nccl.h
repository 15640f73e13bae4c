// NCCL's names for the generic ones CclBackend calls (a name mapping only,
// as device/cuda_like/vendor_cuda.h is for the runtime). The vendor function
// is always kPrefix + the generic name, which error messages use.
#pragma once

#include <nccl.h>

#include <cstddef>
#include <cstdio>

#include "backend/ccl/ccl_mapping.h"
#include "device/device_runtime.h"

namespace infiniccl::ccl {

struct NcclApi {
  static constexpr const char *kName = "NCCL";
  static constexpr const char *kPrefix = "nccl";
  static constexpr DeviceKind kDeviceKind = DeviceKind::kCuda;
  static constexpr bool kNativeAllToAllGatherScatter =
      NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0);

  using Result = ncclResult_t;
  using Comm = ncclComm_t;
  using UniqueId = ncclUniqueId;
  using DataType = ncclDataType_t;
  using RedOp = ncclRedOp_t;
  using Stream = cudaStream_t;

  static constexpr Result kSuccess = ncclSuccess;
  static constexpr Result kInProgress = ncclInProgress;

  static DataType Type(CclType t) {
    switch (t) {
      case CclType::kInt8: return ncclInt8;
      case CclType::kUint8: return ncclUint8;
      case CclType::kInt32: return ncclInt32;
      case CclType::kUint32: return ncclUint32;
      case CclType::kInt64: return ncclInt64;
      case CclType::kUint64: return ncclUint64;
      case CclType::kFloat16: return ncclFloat16;
      case CclType::kBfloat16: return ncclBfloat16;
      case CclType::kFloat32: return ncclFloat32;
      case CclType::kFloat64: return ncclFloat64;
    }
    return ncclInt8;
  }
  static RedOp Op(CclOp op) {
    switch (op) {
      case CclOp::kSum: return ncclSum;
      case CclOp::kProd: return ncclProd;
      case CclOp::kMax: return ncclMax;
      case CclOp::kMin: return ncclMin;
      case CclOp::kAvg: return ncclAvg;
    }
    return ncclSum;
  }

  // NCCL_VERSION_CODE: major * 10000 + minor * 100 + patch since 2.9.
  static void FormatVersion(int v, char *buf, size_t size) {
    std::snprintf(buf, size, "%d.%d.%d", v / 10000, (v % 10000) / 100, v % 100);
  }

  static Result GetVersion(int *v) { return ncclGetVersion(v); }
  static const char *GetErrorString(Result r) { return ncclGetErrorString(r); }
  static const char *GetLastError(Comm c) { return ncclGetLastError(c); }
  static Result GetUniqueId(UniqueId *id) { return ncclGetUniqueId(id); }
  static Result CommInitRank(Comm *c, int n, UniqueId id, int rank) {
    return ncclCommInitRank(c, n, id, rank);
  }
  static Result CommDestroy(Comm c) { return ncclCommDestroy(c); }
  static Result CommAbort(Comm c) { return ncclCommAbort(c); }
  static Result CommGetAsyncError(Comm c, Result *r) {
    return ncclCommGetAsyncError(c, r);
  }
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 18, 0)
  // ncclCommSplit (2.18): shares the parent's resources; a negative color is
  // NCCL_SPLIT_NOCOLOR (takes part, gets no communicator).
  static constexpr bool kHasSplit = true;
  static Result CommSplit(Comm c, int color, int key, Comm *out) {
    return ncclCommSplit(c, color < 0 ? NCCL_SPLIT_NOCOLOR : color, key, out, nullptr);
  }
  // The child's place, for a split without MPI to say it.
  static Result CommUserRank(Comm c, int *rank) { return ncclCommUserRank(c, rank); }
  static Result CommCount(Comm c, int *count) { return ncclCommCount(c, count); }
#else
  static constexpr bool kHasSplit = false;
  static Result CommSplit(Comm, int, int, Comm *) { return ncclInvalidUsage; }
#endif
  static Result GroupStart() { return ncclGroupStart(); }
  static Result GroupEnd() { return ncclGroupEnd(); }

  static Result AllReduce(const void *s, void *r, size_t n, DataType t, RedOp op, Comm c,
                          Stream st) {
    return ncclAllReduce(s, r, n, t, op, c, st);
  }
  static Result Broadcast(const void *s, void *r, size_t n, DataType t, int root, Comm c,
                          Stream st) {
    return ncclBroadcast(s, r, n, t, root, c, st);
  }
  static Result Reduce(const void *s, void *r, size_t n, DataType t, RedOp op, int root,
                       Comm c, Stream st) {
    return ncclReduce(s, r, n, t, op, root, c, st);
  }
  static Result AllGather(const void *s, void *r, size_t n, DataType t, Comm c,
                          Stream st) {
    return ncclAllGather(s, r, n, t, c, st);
  }
  static Result ReduceScatter(const void *s, void *r, size_t n, DataType t, RedOp op,
                              Comm c, Stream st) {
    return ncclReduceScatter(s, r, n, t, op, c, st);
  }
  static Result Send(const void *s, size_t n, DataType t, int peer, Comm c, Stream st) {
    return ncclSend(s, n, t, peer, c, st);
  }
  static Result Recv(void *r, size_t n, DataType t, int peer, Comm c, Stream st) {
    return ncclRecv(r, n, t, peer, c, st);
  }
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0)
  static Result AlltoAll(const void *s, void *r, size_t n, DataType t, Comm c,
                         Stream st) {
    return ncclAlltoAll(s, r, n, t, c, st);
  }
  static Result Gather(const void *s, void *r, size_t n, DataType t, int root, Comm c,
                       Stream st) {
    return ncclGather(s, r, n, t, root, c, st);
  }
  static Result Scatter(const void *s, void *r, size_t n, DataType t, int root, Comm c,
                        Stream st) {
    return ncclScatter(s, r, n, t, root, c, st);
  }
#endif
};

}  // namespace infiniccl::ccl
