// Cambricon CNCL (MLU): the generic names CclBackend calls, adapted to CNCL's
// API (cncl.h, libcncl, on CNRT queues).
//
// WRITTEN FROM CAMBRICON'S PUBLIC DOCUMENTATION (the CNCL developer guide and
// cncl.h as published) AND OPEN CODE THAT CALLS CNCL; NOT YET VERIFIED ON
// CAMBRICON HARDWARE. Built and tested here only against the stand-in of
// tests/standin/cambricon (host memory, the documented signatures).
//
// Where CNCL is not NCCL:
//   - the id (cnclCliqueId: 128 bytes and a hash) does not fit in
//     infinicclUniqueId: communicators are made under MPI only
//     (kBootstrapOverMpi): rank 0's cnclGetCliqueId broadcast over MPI, then
//     cnclInitComms for this process's one communicator on its current MLU;
//   - no 64-bit float type and no Avg: such calls go to MPI (Unsupported);
//     64-bit integer reductions too (not in the reduction types we could
//     confirm in the documentation);
//   - result codes of its own (cnclResult_t, grouped by the low nibble),
//     mapped in ResultCode; cnclGetCommAsyncError returns the error itself.
#pragma once

#include <cncl.h>
#include <cnrt.h>

#include <cstddef>
#include <cstdio>

#include "backend/ccl/vendor_api.h"
#include "core/coll_args.h"

namespace infiniccl::ccl {

struct CnclApi {
  static constexpr const char *kName = "CNCL";
  static constexpr const char *kPrefix = "cncl";
  static constexpr DeviceKind kDeviceKind = DeviceKind::kCambricon;
  static constexpr bool kBootstrapOverMpi = true;
  static constexpr bool kHasSplit = false;
  static constexpr bool kNativeAllToAllGatherScatter = false;
  using Stream = cnrtQueue_t;
  using Result = cnclResult_t;
  using Comm = cnclComm_t;
  using UniqueId = cnclCliqueId;
  using DataType = cnclDataType_t;
  using RedOp = cnclReduceOp_t;
  static constexpr Result kSuccess = CNCL_RET_SUCCESS;
  static constexpr Result kInProgress = CNCL_RET_ASYNC_IN_PROGRESS;

  // Float64 never reaches here (Unsupported).
  static DataType Type(CclType t) {
    switch (t) {
      case CclType::kInt8: return cnclInt8;
      case CclType::kUint8: return cnclUint8;
      case CclType::kInt32: return cnclInt32;
      case CclType::kUint32: return cnclUint32;
      case CclType::kInt64: return cnclInt64;
      case CclType::kUint64: return cnclUint64;
      case CclType::kFloat16: return cnclFloat16;
      case CclType::kBfloat16: return cnclBfloat16;
      case CclType::kFloat32: return cnclFloat32;
      case CclType::kFloat64: return cnclInvalid;
    }
    return cnclInt8;
  }
  // Avg never reaches here (Unsupported).
  static RedOp Op(CclOp op) {
    switch (op) {
      case CclOp::kProd: return cnclProd;
      case CclOp::kMax: return cnclMax;
      case CclOp::kMin: return cnclMin;
      default: return cnclSum;
    }
  }
  static const char *Unsupported(const CollArgs &a) {
    if (a.dtype == infinicclFloat64) return "CNCL has no 64-bit float type";
    if (!IsReduction(a.kind)) return nullptr;
    if (a.op == infinicclAvg) return "CNCL has no Avg reduction";
    if (a.dtype == infinicclInt64 || a.dtype == infinicclUInt64) {
      return "CNCL's 64-bit integer reductions are not confirmed by its documentation";
    }
    return nullptr;
  }
  static infinicclResult_t ResultCode(Result r) {
    const int v = static_cast<int>(r);
    if (v == 0) return infinicclSuccess;
    switch (v) {
      case 0x11: return infinicclInvalidUsage;      // CNCL_RET_ERR_UNSUPPORTED
      case 0x21: return infinicclInvalidArgument;  // CNCL_RET_ERR_NULL_POINTER
      case 0x61: return infinicclInvalidUsage;      // CNCL_RET_ERR_NOT_INIT
      case 0x06: return infinicclInProgress;        // CNCL_RET_ASYNC_IN_PROGRESS
      default: break;
    }
    switch (v & 0xf) {
      case 0x2: return infinicclSystemError;       // CNCL_RET_ERR_SYSTEM family
      case 0x3:                                    // CNRT errors
      case 0x4: return infinicclUnhandledError;    // CNDev errors
      case 0x6: return infinicclRemoteError;       // asynchronous errors
      case 0x7: return infinicclInvalidArgument;   // CNCL_RET_ERR_ARGUMENTS
      case 0x8: return infinicclSystemError;       // MLU memory pool
      case 0x9: return infinicclRemoteError;       // CNCL_RET_IB_RECV_NOTREADY
      default: return infinicclInternalError;
    }
  }
  static const char *GetErrorString(Result r) { return cnclGetErrorStr(r); }
  static const char *GetLastError(Comm) { return ""; }
  // The version of the headers built against (CNCL_MAJOR_VERSION...), as
  // major * 10000 + minor * 100 + patch.
  static Result GetVersion(int *v) {
#if defined(CNCL_MAJOR_VERSION) && defined(CNCL_MINOR_VERSION) && defined(CNCL_PATCH_VERSION)
    *v = CNCL_MAJOR_VERSION * 10000 + CNCL_MINOR_VERSION * 100 + CNCL_PATCH_VERSION;
    return CNCL_RET_SUCCESS;
#else
    (void)v;
    return CNCL_RET_ERR_UNSUPPORTED;
#endif
  }
  static void FormatVersion(int v, char *buf, size_t size) {
    std::snprintf(buf, size, "%d.%d.%d (headers)", v / 10000, (v % 10000) / 100, v % 100);
  }
  static Result GetUniqueId(UniqueId *id) { return cnclGetCliqueId(id); }
  // One communicator for this process, on its current MLU.
  static Result CommInitRank(Comm *c, int n, const UniqueId &id, int rank) {
    int dev = 0;
    if (cnrtGetDevice(&dev) != cnrtSuccess) return CNCL_RET_ERR_MLU_RUNTIME;
    UniqueId copy = id;
    return cnclInitComms(c, 1, &dev, &rank, n, &copy);
  }
  static Result CommDestroy(Comm c) { return cnclFreeComm(c); }
  static Result CommAbort(Comm c) { return cnclAbortComm(c); }
  static Result CommGetAsyncError(Comm c, Result *r) {
    *r = cnclGetCommAsyncError(c);
    return CNCL_RET_SUCCESS;
  }
  static Result CommSplit(Comm, int, int, Comm *) { return CNCL_RET_ERR_UNSUPPORTED; }
  static Result GroupStart() { return cnclGroupStart(); }
  static Result GroupEnd() { return cnclGroupEnd(); }

  static Result AllReduce(const void *s, void *r, size_t n, DataType t, RedOp op, Comm c,
                          Stream st) {
    return cnclAllReduce(s, r, n, t, op, c, st);
  }
  static Result Broadcast(const void *s, void *r, size_t n, DataType t, int root, Comm c,
                          Stream st) {
    return cnclBroadcast(s, r, n, t, root, c, st);
  }
  static Result Reduce(const void *s, void *r, size_t n, DataType t, RedOp op, int root,
                       Comm c, Stream st) {
    return cnclReduce(s, r, n, t, op, root, c, st);
  }
  static Result AllGather(const void *s, void *r, size_t n, DataType t, Comm c, Stream st) {
    return cnclAllGather(s, r, n, t, c, st);
  }
  static Result ReduceScatter(const void *s, void *r, size_t n, DataType t, RedOp op,
                              Comm c, Stream st) {
    return cnclReduceScatter(s, r, n, t, op, c, st);
  }
  static Result Send(const void *s, size_t n, DataType t, int peer, Comm c, Stream st) {
    return cnclSend(const_cast<void *>(s), n, t, peer, c, st);
  }
  static Result Recv(void *r, size_t n, DataType t, int peer, Comm c, Stream st) {
    return cnclRecv(r, n, t, peer, c, st);
  }
};

}  // namespace infiniccl::ccl
