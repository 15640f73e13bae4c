// MetaX MCCL's names for the generic ones CclBackend calls (mccl.h and
// libmccl from the MACA SDK). MCCL follows NCCL's API with the mccl prefix;
// the names here come from MACA's documentation and open-source code that
// calls MCCL (FlagCX's MetaX adaptor, InfiniCore, PyTorch's MCCL process
// group). Not yet built against a MACA SDK or run on a MetaX device.
// AlltoAll, Gather and Scatter go as grouped Send/Recv (MCCL's native ones,
// if any, are not documented where we could read).
#pragma once

#if __has_include(<mccl/mccl.h>)
#include <mccl/mccl.h>
#else
#include <mccl.h>
#endif
#if __has_include(<mcr/mc_runtime_api.h>)
#include <mcr/mc_runtime_api.h>
#else
#include <mc_runtime_api.h>
#endif

#include <cstddef>
#include <cstdio>

#include "backend/ccl/ccl_mapping.h"
#include "device/device_runtime.h"

namespace infiniccl::ccl {

struct McclApi {
  static constexpr const char *kName = "MCCL";
  static constexpr const char *kPrefix = "mccl";
  static constexpr DeviceKind kDeviceKind = DeviceKind::kMaca;
  static constexpr bool kNativeAllToAllGatherScatter = false;

  using Result = mcclResult_t;
  using Comm = mcclComm_t;
  using UniqueId = mcclUniqueId;
  using DataType = mcclDataType_t;
  using RedOp = mcclRedOp_t;
  using Stream = mcStream_t;

  static constexpr Result kSuccess = mcclSuccess;
  static constexpr Result kInProgress = mcclInProgress;

  static DataType Type(CclType t) {
    switch (t) {
      case CclType::kInt8: return mcclInt8;
      case CclType::kUint8: return mcclUint8;
      case CclType::kInt32: return mcclInt32;
      case CclType::kUint32: return mcclUint32;
      case CclType::kInt64: return mcclInt64;
      case CclType::kUint64: return mcclUint64;
      case CclType::kFloat16: return mcclHalf;
      case CclType::kBfloat16: return mcclBfloat16;
      case CclType::kFloat32: return mcclFloat;
      case CclType::kFloat64: return mcclDouble;
    }
    return mcclInt8;
  }
  static RedOp Op(CclOp op) {
    switch (op) {
      case CclOp::kSum: return mcclSum;
      case CclOp::kProd: return mcclProd;
      case CclOp::kMax: return mcclMax;
      case CclOp::kMin: return mcclMin;
      case CclOp::kAvg: return mcclAvg;
    }
    return mcclSum;
  }

  // MCCL's version encoding is not documented where we could read it.
  static void FormatVersion(int v, char *buf, size_t size) {
    std::snprintf(buf, size, "%d", v);
  }

  static Result GetVersion(int *v) { return mcclGetVersion(v); }
  static const char *GetErrorString(Result r) { return mcclGetErrorString(r); }
  static const char *GetLastError(Comm c) { return mcclGetLastError(c); }
  static Result GetUniqueId(UniqueId *id) { return mcclGetUniqueId(id); }
  static Result CommInitRank(Comm *c, int n, UniqueId id, int rank) {
    return mcclCommInitRank(c, n, id, rank);
  }
  static Result CommDestroy(Comm c) { return mcclCommDestroy(c); }
  static Result CommAbort(Comm c) { return mcclCommAbort(c); }
  static Result CommGetAsyncError(Comm c, Result *r) {
    return mcclCommGetAsyncError(c, r);
  }
  // No split used on MCCL (its API is not verified): a child communicator
  // gets a CCL communicator of its own instead (ccl_attach.cpp).
  static constexpr bool kHasSplit = false;
  static Result CommSplit(Comm, int, int, Comm *) { return Result{}; }
  static Result GroupStart() { return mcclGroupStart(); }
  static Result GroupEnd() { return mcclGroupEnd(); }

  static Result AllReduce(const void *s, void *r, size_t n, DataType t, RedOp op, Comm c,
                          Stream st) {
    return mcclAllReduce(s, r, n, t, op, c, st);
  }
  static Result Broadcast(const void *s, void *r, size_t n, DataType t, int root, Comm c,
                          Stream st) {
    return mcclBroadcast(s, r, n, t, root, c, st);
  }
  static Result Reduce(const void *s, void *r, size_t n, DataType t, RedOp op, int root,
                       Comm c, Stream st) {
    return mcclReduce(s, r, n, t, op, root, c, st);
  }
  static Result AllGather(const void *s, void *r, size_t n, DataType t, Comm c,
                          Stream st) {
    return mcclAllGather(s, r, n, t, c, st);
  }
  static Result ReduceScatter(const void *s, void *r, size_t n, DataType t, RedOp op,
                              Comm c, Stream st) {
    return mcclReduceScatter(s, r, n, t, op, c, st);
  }
  static Result Send(const void *s, size_t n, DataType t, int peer, Comm c, Stream st) {
    return mcclSend(s, n, t, peer, c, st);
  }
  static Result Recv(void *r, size_t n, DataType t, int peer, Comm c, Stream st) {
    return mcclRecv(r, n, t, peer, c, st);
  }
};

}  // namespace infiniccl::ccl
