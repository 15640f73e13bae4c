// A stand-in for CANN's libhccl (tests only): the HCCL calls InfiniCCL's
// adapter makes, with HCCL's documented signatures, types and result codes,
// running real collectives among the processes of one machine over host
// memory (common/ccl_engine.h). Buffers must be the ACL stand-in's device
// memory (HCCL_E_PTR otherwise), reductions only of the types hccl.h lists
// (HCCL_E_NOT_SUPPORT otherwise); every call is counted by name through the
// ACL stand-in (iccl_standin_ascend_count("HcclAllReduce"), ...). Each runs
// in its stream's order (ccl_engine.h: OnStream): behind a host function
// that holds the stream, it runs when the stream is released and a failure
// is the communicator's asynchronous error.
#include <hccl/hccl.h>

#include <cstring>
#include <memory>
#include <string>

#include "../common/ccl_engine.h"

namespace {

// Its state and lifetime: ccl_engine.h (CommState).
struct Comm : standin::CommState {};

bool ToElem(HcclDataType t, standin::Elem *e) {
  using standin::Elem;
  switch (t) {
    case HCCL_DATA_TYPE_INT8: *e = Elem::kI8; return true;
    case HCCL_DATA_TYPE_INT16: *e = Elem::kI16; return true;
    case HCCL_DATA_TYPE_INT32: *e = Elem::kI32; return true;
    case HCCL_DATA_TYPE_FP16: *e = Elem::kF16; return true;
    case HCCL_DATA_TYPE_FP32: *e = Elem::kF32; return true;
    case HCCL_DATA_TYPE_INT64: *e = Elem::kI64; return true;
    case HCCL_DATA_TYPE_UINT64: *e = Elem::kU64; return true;
    case HCCL_DATA_TYPE_UINT8: *e = Elem::kU8; return true;
    case HCCL_DATA_TYPE_UINT16: *e = Elem::kU16; return true;
    case HCCL_DATA_TYPE_UINT32: *e = Elem::kU32; return true;
    case HCCL_DATA_TYPE_FP64: *e = Elem::kF64; return true;
    case HCCL_DATA_TYPE_BFP16: *e = Elem::kBF16; return true;
    default: return false;
  }
}

// The reduction types hccl.h documents for AllReduce/Reduce/ReduceScatter.
bool Reducible(HcclDataType t) {
  return t == HCCL_DATA_TYPE_INT8 || t == HCCL_DATA_TYPE_INT16 || t == HCCL_DATA_TYPE_INT32 ||
         t == HCCL_DATA_TYPE_INT64 || t == HCCL_DATA_TYPE_UINT64 || t == HCCL_DATA_TYPE_FP16 ||
         t == HCCL_DATA_TYPE_FP32 || t == HCCL_DATA_TYPE_FP64 || t == HCCL_DATA_TYPE_BFP16;
}

bool ToOp(HcclReduceOp op, standin::Op *o) {
  switch (op) {
    case HCCL_REDUCE_SUM: *o = standin::Op::kSum; return true;
    case HCCL_REDUCE_PROD: *o = standin::Op::kProd; return true;
    case HCCL_REDUCE_MAX: *o = standin::Op::kMax; return true;
    case HCCL_REDUCE_MIN: *o = standin::Op::kMin; return true;
    default: return false;
  }
}

HcclResult Err(HcclResult r, const std::string &what) {
  iccl_standin_ascend_set_error(what.c_str());
  return r;
}

// Common checks: communicator, type, device buffers of `bytes`.
HcclResult Check(const char *name, HcclComm comm, HcclDataType t, standin::Elem *e,
                 const void *a, size_t abytes, const void *b, size_t bbytes) {
  iccl_standin_ascend_record(name);
  if (comm == nullptr) return Err(HCCL_E_PTR, std::string(name) + ": null communicator");
  if (!ToElem(t, e)) return Err(HCCL_E_PARA, std::string(name) + ": invalid data type");
  if ((a != nullptr || abytes) && !iccl_standin_ascend_is_device(a, abytes))
    return Err(HCCL_E_PTR, std::string(name) + ": buffer is not device memory");
  if ((b != nullptr || bbytes) && !iccl_standin_ascend_is_device(b, bbytes))
    return Err(HCCL_E_PTR, std::string(name) + ": buffer is not device memory");
  return HCCL_SUCCESS;
}

standin::Clique &C(HcclComm comm) { return *static_cast<Comm *>(comm)->clique; }

HcclResult Done(bool ok, const char *name) {
  return ok ? HCCL_SUCCESS : Err(HCCL_E_TIMEOUT, std::string(name) + ": exchange failed");
}

// `body` in `stream`'s order (ccl_engine.h); not run if the communicator
// was destroyed meanwhile.
HcclResult OnStream(HcclComm comm, aclrtStream stream, std::function<HcclResult()> body) {
  return standin::OnComm<HcclResult, aclrtStream>(static_cast<Comm *>(comm),
                                                  iccl_standin_ascend_enqueue, stream,
                                                  std::move(body), HCCL_SUCCESS, HCCL_E_PARA,
                                                  HCCL_E_INTERNAL);
}

}  // namespace

extern "C" {

HcclResult HcclGetRootInfo(HcclRootInfo *rootInfo) {
  iccl_standin_ascend_record("HcclGetRootInfo");
  if (rootInfo == nullptr) return Err(HCCL_E_PTR, "HcclGetRootInfo: null");
  std::memset(rootInfo->internal, 0, sizeof rootInfo->internal);
  const std::string name = standin::NewCliqueName();
  std::memcpy(rootInfo->internal, name.c_str(), name.size());
  return HCCL_SUCCESS;
}

HcclResult HcclCommInitRootInfo(uint32_t nRanks, const HcclRootInfo *rootInfo, uint32_t rank,
                                HcclComm *comm) {
  iccl_standin_ascend_record("HcclCommInitRootInfo");
  if (rootInfo == nullptr || comm == nullptr) return Err(HCCL_E_PTR, "HcclCommInitRootInfo: null");
  if (nRanks == 0 || rank >= nRanks) return Err(HCCL_E_PARA, "HcclCommInitRootInfo: bad rank");
  const std::string name(rootInfo->internal, strnlen(rootInfo->internal, sizeof rootInfo->internal));
  if (name.empty()) return Err(HCCL_E_PARA, "HcclCommInitRootInfo: empty root info");
  auto c = standin::NewComm<Comm>(name, static_cast<int>(rank), static_cast<int>(nRanks));
  // Like HCCL, initialisation is collective.
  switch (standin::JoinClique(*c->clique)) {
    case standin::Join::kOk: break;
    case standin::Join::kTimeout:
      return Err(HCCL_E_TIMEOUT, "HcclCommInitRootInfo: not every rank joined");
    case standin::Join::kSpansHosts:
      return Err(HCCL_E_UNAVAIL, "HcclCommInitRootInfo: ranks on several hosts "
                                 "(stand-in, ICCL_STANDIN_CCL_ONE_NODE=1)");
  }
  c->self = c;
  *comm = c.get();
  return HCCL_SUCCESS;
}

HcclResult HcclCommDestroy(HcclComm comm) {
  iccl_standin_ascend_record("HcclCommDestroy");
  if (comm == nullptr) return Err(HCCL_E_PTR, "HcclCommDestroy: null");
  standin::CommState::Destroy(static_cast<Comm *>(comm),
                              std::getenv("ICCL_STANDIN_DESTROY_LOCAL") == nullptr);
  return HCCL_SUCCESS;
}

HcclResult HcclGetRankId(HcclComm comm, uint32_t *rank) {
  iccl_standin_ascend_record("HcclGetRankId");
  if (comm == nullptr || rank == nullptr) return Err(HCCL_E_PTR, "HcclGetRankId: null");
  *rank = static_cast<uint32_t>(C(comm).rank());
  return HCCL_SUCCESS;
}

HcclResult HcclGetRankSize(HcclComm comm, uint32_t *size) {
  iccl_standin_ascend_record("HcclGetRankSize");
  if (comm == nullptr || size == nullptr) return Err(HCCL_E_PTR, "HcclGetRankSize: null");
  *size = static_cast<uint32_t>(C(comm).size());
  return HCCL_SUCCESS;
}

HcclResult HcclGetCommAsyncError(HcclComm comm, HcclResult *asyncError) {
  if (comm == nullptr || asyncError == nullptr)
    return Err(HCCL_E_PTR, "HcclGetCommAsyncError: null");
  *asyncError = static_cast<HcclResult>(static_cast<Comm *>(comm)->async_error.load());
  return HCCL_SUCCESS;
}

HcclResult HcclAllReduce(void *s, void *r, uint64_t count, HcclDataType t, HcclReduceOp op,
                         HcclComm comm, aclrtStream stream) {
  standin::Elem e;
  standin::Op o;
  const size_t bytes = count * (ToElem(t, &e) ? standin::ElemSize(e) : 1);
  if (HcclResult q = Check("HcclAllReduce", comm, t, &e, s, bytes, r, bytes)) return q;
  if (!Reducible(t) || !ToOp(op, &o)) return Err(HCCL_E_NOT_SUPPORT, "HcclAllReduce: type/op");
  return OnStream(comm, stream, [=] {
    return Done(standin::CclAllReduce(C(comm), s, r, count, e, o), "HcclAllReduce");
  });
}

HcclResult HcclBroadcast(void *buf, uint64_t count, HcclDataType t, uint32_t root,
                         HcclComm comm, aclrtStream stream) {
  standin::Elem e;
  const size_t bytes = count * (ToElem(t, &e) ? standin::ElemSize(e) : 1);
  if (HcclResult q = Check("HcclBroadcast", comm, t, &e, buf, bytes, nullptr, 0)) return q;
  if (root >= static_cast<uint32_t>(C(comm).size())) return Err(HCCL_E_PARA, "HcclBroadcast: root");
  return OnStream(comm, stream, [=] {
    return Done(standin::CclBroadcast(C(comm), buf, buf, count, e, static_cast<int>(root)),
                "HcclBroadcast");
  });
}

HcclResult HcclReduce(void *s, void *r, uint64_t count, HcclDataType t, HcclReduceOp op,
                      uint32_t root, HcclComm comm, aclrtStream stream) {
  standin::Elem e;
  standin::Op o;
  const size_t bytes = count * (ToElem(t, &e) ? standin::ElemSize(e) : 1);
  const bool me = comm != nullptr && root == static_cast<uint32_t>(C(comm).rank());
  if (HcclResult q = Check("HcclReduce", comm, t, &e, s, bytes, me ? r : nullptr, me ? bytes : 0))
    return q;
  if (!Reducible(t) || !ToOp(op, &o)) return Err(HCCL_E_NOT_SUPPORT, "HcclReduce: type/op");
  if (root >= static_cast<uint32_t>(C(comm).size())) return Err(HCCL_E_PARA, "HcclReduce: root");
  return OnStream(comm, stream, [=] {
    return Done(standin::CclReduce(C(comm), s, r, count, e, o, static_cast<int>(root)),
                "HcclReduce");
  });
}

HcclResult HcclAllGather(void *s, void *r, uint64_t count, HcclDataType t, HcclComm comm,
                         aclrtStream stream) {
  standin::Elem e;
  const size_t bytes = count * (ToElem(t, &e) ? standin::ElemSize(e) : 1);
  const size_t total = comm ? bytes * C(comm).size() : 0;
  if (HcclResult q = Check("HcclAllGather", comm, t, &e, s, bytes, r, total)) return q;
  return OnStream(comm, stream, [=] {
    return Done(standin::CclAllGather(C(comm), s, r, count, e), "HcclAllGather");
  });
}

HcclResult HcclReduceScatter(void *s, void *r, uint64_t count, HcclDataType t, HcclReduceOp op,
                             HcclComm comm, aclrtStream stream) {
  standin::Elem e;
  standin::Op o;
  const size_t bytes = count * (ToElem(t, &e) ? standin::ElemSize(e) : 1);
  const size_t total = comm ? bytes * C(comm).size() : 0;
  if (HcclResult q = Check("HcclReduceScatter", comm, t, &e, s, total, r, bytes)) return q;
  if (!Reducible(t) || !ToOp(op, &o)) return Err(HCCL_E_NOT_SUPPORT, "HcclReduceScatter: type/op");
  return OnStream(comm, stream, [=] {
    return Done(standin::CclReduceScatter(C(comm), s, r, count, e, o), "HcclReduceScatter");
  });
}

HcclResult HcclSend(void *s, uint64_t count, HcclDataType t, uint32_t dest, HcclComm comm,
                    aclrtStream stream) {
  standin::Elem e;
  const size_t bytes = count * (ToElem(t, &e) ? standin::ElemSize(e) : 1);
  if (HcclResult q = Check("HcclSend", comm, t, &e, s, bytes, nullptr, 0)) return q;
  if (dest >= static_cast<uint32_t>(C(comm).size())) return Err(HCCL_E_PARA, "HcclSend: rank");
  return OnStream(comm, stream, [=] {
    return Done(C(comm).Send(static_cast<int>(dest), s, bytes), "HcclSend");
  });
}

HcclResult HcclRecv(void *r, uint64_t count, HcclDataType t, uint32_t src, HcclComm comm,
                    aclrtStream stream) {
  standin::Elem e;
  const size_t bytes = count * (ToElem(t, &e) ? standin::ElemSize(e) : 1);
  if (HcclResult q = Check("HcclRecv", comm, t, &e, r, bytes, nullptr, 0)) return q;
  if (src >= static_cast<uint32_t>(C(comm).size())) return Err(HCCL_E_PARA, "HcclRecv: rank");
  return OnStream(comm, stream, [=] {
    return Done(C(comm).Recv(static_cast<int>(src), r, bytes), "HcclRecv");
  });
}

// Checked at the call; run in the stream's order, sends first (they never
// wait), then receives: no ordering deadlock.
HcclResult HcclBatchSendRecv(HcclSendRecvItem *items, uint32_t n, HcclComm comm,
                             aclrtStream stream) {
  iccl_standin_ascend_record("HcclBatchSendRecv");
  if (comm == nullptr || (items == nullptr && n > 0))
    return Err(HCCL_E_PTR, "HcclBatchSendRecv: null");
  std::vector<HcclSendRecvItem> list(items, items + n);
  std::vector<size_t> bytes(n);
  for (uint32_t i = 0; i < n; ++i) {
    const HcclSendRecvItem &it = list[i];
    standin::Elem e;
    if (!ToElem(it.dataType, &e)) return Err(HCCL_E_PARA, "HcclBatchSendRecv: data type");
    bytes[i] = it.count * standin::ElemSize(e);
    if (it.remoteRank >= static_cast<uint32_t>(C(comm).size()))
      return Err(HCCL_E_PARA, "HcclBatchSendRecv: rank");
    if (!iccl_standin_ascend_is_device(it.buf, bytes[i]))
      return Err(HCCL_E_PTR, "HcclBatchSendRecv: buffer is not device memory");
    iccl_standin_ascend_record(it.sendRecvType == HCCL_SEND ? "HcclBatchSendRecv:send"
                                                            : "HcclBatchSendRecv:recv");
  }
  return OnStream(comm, stream, [=] {
    for (int pass = 0; pass < 2; ++pass) {
      for (size_t i = 0; i < list.size(); ++i) {
        const HcclSendRecvItem &it = list[i];
        const int peer = static_cast<int>(it.remoteRank);
        if (pass == 0 && it.sendRecvType == HCCL_SEND) {
          if (!C(comm).Send(peer, it.buf, bytes[i]))
            return Err(HCCL_E_TIMEOUT, "HcclBatchSendRecv: send failed");
        } else if (pass == 1 && it.sendRecvType == HCCL_RECV) {
          if (!C(comm).Recv(peer, it.buf, bytes[i]))
            return Err(HCCL_E_TIMEOUT, "HcclBatchSendRecv: receive failed");
        }
      }
    }
    return HCCL_SUCCESS;
  });
}

}  // extern "C"
