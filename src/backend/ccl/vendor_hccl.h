// Huawei HCCL (Ascend): the generic names CclBackend calls, adapted to HCCL's
// API (hccl/hccl.h, libhccl, on ACL streams).
//
// WRITTEN FROM CANN'S PUBLIC DOCUMENTATION (hccl.h, hccl_types.h as CANN
// publishes them) AND OPEN CODE THAT CALLS HCCL; NOT YET VERIFIED ON ASCEND
// HARDWARE. Built and tested here only against the stand-in of
// tests/standin/ascend (host memory, the documented signatures).
//
// Where HCCL is not NCCL:
//   - the id (HcclRootInfo) is 4108 bytes, more than infinicclUniqueId holds:
//     communicators are made under MPI only (kBootstrapOverMpi), rank 0's
//     HcclGetRootInfo broadcast over the communicator's MPI, then
//     HcclCommInitRootInfo;
//   - HcclBroadcast is in place: out of place, the root first copies its
//     send buffer to the receive buffer on the same stream;
//   - no group calls: Send/Recv between GroupStart and GroupEnd are collected
//     and issued at GroupEnd as one HcclBatchSendRecv per communicator and
//     stream (AllToAll, Gather and Scatter are such groups);
//   - reductions: sum, prod, max, min of int8, int16, int32, int64, uint64,
//     float16, float32, float64 and bfloat16 (hccl.h); no Avg, no uint8 or
//     uint32 reduction, which the route sends to MPI (Unsupported);
//   - result codes of its own (HcclResult), mapped in ResultCode;
//   - no version call: the version is "unknown".
#pragma once

#include <acl/acl.h>
#include <hccl/hccl.h>
#include <hccl/hccl_types.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "backend/ccl/vendor_api.h"
#include "core/coll_args.h"

namespace infiniccl::ccl {

struct HcclApi {
  static constexpr const char *kName = "HCCL";
  static constexpr const char *kPrefix = "Hccl";
  static constexpr DeviceKind kDeviceKind = DeviceKind::kAscend;
  static constexpr bool kBootstrapOverMpi = true;
  static constexpr bool kHasSplit = false;
  static constexpr bool kNativeAllToAllGatherScatter = false;
  using Stream = aclrtStream;
  using Result = HcclResult;
  using Comm = HcclComm;
  using UniqueId = HcclRootInfo;
  using DataType = HcclDataType;
  using RedOp = HcclReduceOp;
  static constexpr Result kSuccess = HCCL_SUCCESS;
  static constexpr Result kInProgress = HCCL_SUCCESS;  // HCCL has no such result

  static DataType Type(CclType t) {
    switch (t) {
      case CclType::kInt8: return HCCL_DATA_TYPE_INT8;
      case CclType::kUint8: return HCCL_DATA_TYPE_UINT8;
      case CclType::kInt32: return HCCL_DATA_TYPE_INT32;
      case CclType::kUint32: return HCCL_DATA_TYPE_UINT32;
      case CclType::kInt64: return HCCL_DATA_TYPE_INT64;
      case CclType::kUint64: return HCCL_DATA_TYPE_UINT64;
      case CclType::kFloat16: return HCCL_DATA_TYPE_FP16;
      case CclType::kBfloat16: return HCCL_DATA_TYPE_BFP16;
      case CclType::kFloat32: return HCCL_DATA_TYPE_FP32;
      case CclType::kFloat64: return HCCL_DATA_TYPE_FP64;
    }
    return HCCL_DATA_TYPE_INT8;
  }
  static size_t SizeOf(DataType t) {
    switch (t) {
      case HCCL_DATA_TYPE_INT8:
      case HCCL_DATA_TYPE_UINT8: return 1;
      case HCCL_DATA_TYPE_INT16:
      case HCCL_DATA_TYPE_UINT16:
      case HCCL_DATA_TYPE_FP16:
      case HCCL_DATA_TYPE_BFP16: return 2;
      case HCCL_DATA_TYPE_INT32:
      case HCCL_DATA_TYPE_UINT32:
      case HCCL_DATA_TYPE_FP32: return 4;
      default: return 8;
    }
  }
  // Avg never reaches here (Unsupported).
  static RedOp Op(CclOp op) {
    switch (op) {
      case CclOp::kProd: return HCCL_REDUCE_PROD;
      case CclOp::kMax: return HCCL_REDUCE_MAX;
      case CclOp::kMin: return HCCL_REDUCE_MIN;
      default: return HCCL_REDUCE_SUM;
    }
  }
  static const char *Unsupported(const CollArgs &a) {
    if (!IsReduction(a.kind)) return nullptr;
    if (a.op == infinicclAvg) return "HCCL has no Avg reduction";
    if (a.dtype == infinicclUInt8 || a.dtype == infinicclUInt32) {
      return "HCCL documents no uint8 or uint32 reduction";
    }
    return nullptr;
  }
  static infinicclResult_t ResultCode(Result r) {
    switch (static_cast<int>(r)) {
      case 0: return infinicclSuccess;
      case 1:   // HCCL_E_PARA
      case 2:   // HCCL_E_PTR
        return infinicclInvalidArgument;
      case 5:  // HCCL_E_NOT_SUPPORT
      case 6:  // HCCL_E_NOT_FOUND
      case 7:  // HCCL_E_UNAVAIL
        return infinicclInvalidUsage;
      case 3:  // HCCL_E_MEMORY
      case 8:  // HCCL_E_SYSCALL
      case 10:  // HCCL_E_OPEN_FILE_FAILURE
        return infinicclSystemError;
      case 9:   // HCCL_E_TIMEOUT
      case 11:  // HCCL_E_TCP_CONNECT
      case 12:  // HCCL_E_ROCE_CONNECT
      case 13:  // HCCL_E_TCP_TRANSFER
      case 14:  // HCCL_E_ROCE_TRANSFER
      case 19:  // HCCL_E_NETWORK
      case 21:  // HCCL_E_REMOTE
        return infinicclRemoteError;
      case 15:  // HCCL_E_RUNTIME
      case 16:  // HCCL_E_DRV
        return infinicclUnhandledError;
      default: return infinicclInternalError;
    }
  }
  static const char *GetErrorString(Result r) {
    static const char *const kNames[] = {
        "HCCL_SUCCESS",        "HCCL_E_PARA",          "HCCL_E_PTR",
        "HCCL_E_MEMORY",       "HCCL_E_INTERNAL",      "HCCL_E_NOT_SUPPORT",
        "HCCL_E_NOT_FOUND",    "HCCL_E_UNAVAIL",       "HCCL_E_SYSCALL",
        "HCCL_E_TIMEOUT",      "HCCL_E_OPEN_FILE_FAILURE", "HCCL_E_TCP_CONNECT",
        "HCCL_E_ROCE_CONNECT", "HCCL_E_TCP_TRANSFER",  "HCCL_E_ROCE_TRANSFER",
        "HCCL_E_RUNTIME",      "HCCL_E_DRV",           "HCCL_E_PROFILING",
        "HCCL_E_CCE",          "HCCL_E_NETWORK",       "HCCL_E_AGAIN",
        "HCCL_E_REMOTE",       "HCCL_E_SUSPENDING"};
    const int i = static_cast<int>(r);
    return i >= 0 && i < static_cast<int>(sizeof(kNames) / sizeof(kNames[0])) ? kNames[i]
                                                                             : "HCCL error";
  }
  static const char *GetLastError(Comm) { return ""; }
  static Result GetVersion(int *) { return HCCL_E_NOT_SUPPORT; }
  static Result GetUniqueId(UniqueId *id) { return HcclGetRootInfo(id); }
  static Result CommInitRank(Comm *c, int n, const UniqueId &id, int rank) {
    return HcclCommInitRootInfo(static_cast<uint32_t>(n), &id, static_cast<uint32_t>(rank), c);
  }
  static Result CommDestroy(Comm c) { return HcclCommDestroy(c); }
  // HCCL documents no abort: the communicator is destroyed.
  static Result CommAbort(Comm c) { return HcclCommDestroy(c); }
  static Result CommGetAsyncError(Comm c, Result *r) { return HcclGetCommAsyncError(c, r); }
  static Result CommSplit(Comm, int, int, Comm *) { return HCCL_E_NOT_SUPPORT; }

  static Result AllReduce(const void *s, void *r, size_t n, DataType t, RedOp op, Comm c,
                          Stream st) {
    return HcclAllReduce(const_cast<void *>(s), r, n, t, op, c, st);
  }
  static Result Broadcast(const void *s, void *r, size_t n, DataType t, int root, Comm c,
                          Stream st) {
    if (s != r) {
      uint32_t me = 0;
      const Result q = HcclGetRankId(c, &me);
      if (q != HCCL_SUCCESS) return q;
      if (static_cast<int>(me) == root && n > 0) {
        const size_t bytes = n * SizeOf(t);
        if (aclrtMemcpyAsync(r, bytes, s, bytes, ACL_MEMCPY_DEVICE_TO_DEVICE, st) !=
            ACL_SUCCESS) {
          return HCCL_E_RUNTIME;
        }
      }
    }
    return HcclBroadcast(r, n, t, static_cast<uint32_t>(root), c, st);
  }
  static Result Reduce(const void *s, void *r, size_t n, DataType t, RedOp op, int root,
                       Comm c, Stream st) {
    return HcclReduce(const_cast<void *>(s), r, n, t, op, static_cast<uint32_t>(root), c, st);
  }
  static Result AllGather(const void *s, void *r, size_t n, DataType t, Comm c, Stream st) {
    return HcclAllGather(const_cast<void *>(s), r, n, t, c, st);
  }
  static Result ReduceScatter(const void *s, void *r, size_t n, DataType t, RedOp op,
                              Comm c, Stream st) {
    return HcclReduceScatter(const_cast<void *>(s), r, n, t, op, c, st);
  }

  // Groups: collected, then one HcclBatchSendRecv per communicator and stream.
  struct Pending {
    HcclSendRecvItem item;
    Comm comm;
    Stream stream;
  };
  static std::vector<Pending> &Batch() {
    thread_local std::vector<Pending> batch;
    return batch;
  }
  static int &Depth() {
    thread_local int depth = 0;
    return depth;
  }
  static Result GroupStart() {
    ++Depth();
    return HCCL_SUCCESS;
  }
  static Result GroupEnd() {
    if (Depth() == 0) return HCCL_E_PARA;  // unbalanced
    if (--Depth() > 0) return HCCL_SUCCESS;
    std::vector<Pending> batch;
    batch.swap(Batch());
    Result first = HCCL_SUCCESS;
    std::vector<bool> done(batch.size(), false);
    for (size_t i = 0; i < batch.size(); ++i) {
      if (done[i]) continue;
      std::vector<HcclSendRecvItem> items;
      for (size_t j = i; j < batch.size(); ++j) {
        if (!done[j] && batch[j].comm == batch[i].comm && batch[j].stream == batch[i].stream) {
          items.push_back(batch[j].item);
          done[j] = true;
        }
      }
      const Result r = HcclBatchSendRecv(items.data(), static_cast<uint32_t>(items.size()),
                                         batch[i].comm, batch[i].stream);
      if (first == HCCL_SUCCESS) first = r;
    }
    return first;
  }
  static Result Send(const void *s, size_t n, DataType t, int peer, Comm c, Stream st) {
    if (Depth() > 0) {
      Batch().push_back({{HCCL_SEND, const_cast<void *>(s), n, t, static_cast<uint32_t>(peer)},
                         c, st});
      return HCCL_SUCCESS;
    }
    return HcclSend(const_cast<void *>(s), n, t, static_cast<uint32_t>(peer), c, st);
  }
  static Result Recv(void *r, size_t n, DataType t, int peer, Comm c, Stream st) {
    if (Depth() > 0) {
      Batch().push_back({{HCCL_RECV, r, n, t, static_cast<uint32_t>(peer)}, c, st});
      return HCCL_SUCCESS;
    }
    return HcclRecv(r, n, t, static_cast<uint32_t>(peer), c, st);
  }
};

}  // namespace infiniccl::ccl
