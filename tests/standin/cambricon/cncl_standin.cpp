// A stand-in for Cambricon's libcncl (tests only): the CNCL calls InfiniCCL's
// adapter makes, with CNCL's documented signatures, types and result codes,
// running real collectives among the processes of one machine over host
// memory (common/ccl_engine.h). Buffers must be the CNRT stand-in's device
// memory (CNCL_RET_ERR_NULL_POINTER otherwise... as the closest documented
// code: CNCL_RET_ERR_ARGUMENTS); no 64-bit float type exists in cnclDataType_t.
// Every call is counted through the CNRT stand-in. Each runs in its queue's
// order (ccl_engine.h: OnStream): behind a host function that holds the
// queue, it runs when the queue is released and a failure is the
// communicator's asynchronous error (cnclGetCommAsyncError).
#include <cncl.h>

#include <cstring>
#include <memory>
#include <string>

#include "../common/ccl_engine.h"

// Its state and lifetime: ccl_engine.h (CommState).
struct cnclComm : standin::CommState {};

namespace {

bool ToElem(cnclDataType_t t, standin::Elem *e) {
  using standin::Elem;
  switch (t) {
    case cnclInt8: *e = Elem::kI8; return true;
    case cnclUint8: *e = Elem::kU8; return true;
    case cnclInt16: *e = Elem::kI16; return true;
    case cnclUint16: *e = Elem::kU16; return true;
    case cnclInt32: *e = Elem::kI32; return true;
    case cnclUint32: *e = Elem::kU32; return true;
    case cnclInt64: *e = Elem::kI64; return true;
    case cnclUint64: *e = Elem::kU64; return true;
    case cnclFloat16: *e = Elem::kF16; return true;
    case cnclBfloat16: *e = Elem::kBF16; return true;
    case cnclFloat32: *e = Elem::kF32; return true;
    default: return false;
  }
}

bool ToOp(cnclReduceOp_t op, standin::Op *o) {
  switch (op) {
    case cnclSum: *o = standin::Op::kSum; return true;
    case cnclProd: *o = standin::Op::kProd; return true;
    case cnclMax: *o = standin::Op::kMax; return true;
    case cnclMin: *o = standin::Op::kMin; return true;
  }
  return false;
}

cnclResult_t Check(const char *name, cnclComm_t comm, cnclDataType_t t, standin::Elem *e,
                   const void *a, size_t abytes, const void *b, size_t bbytes) {
  iccl_standin_cambricon_record(name);
  if (comm == nullptr) return CNCL_RET_ERR_NULL_POINTER;
  if (!ToElem(t, e)) return CNCL_RET_ERR_UNSUPPORTED;
  if ((a != nullptr || abytes) && !iccl_standin_cambricon_is_device(a, abytes))
    return CNCL_RET_ERR_ARGUMENTS;
  if ((b != nullptr || bbytes) && !iccl_standin_cambricon_is_device(b, bbytes))
    return CNCL_RET_ERR_ARGUMENTS;
  return CNCL_RET_SUCCESS;
}

size_t Bytes(size_t n, cnclDataType_t t) {
  standin::Elem e;
  return n * (ToElem(t, &e) ? standin::ElemSize(e) : 1);
}

cnclResult_t Done(bool ok) { return ok ? CNCL_RET_SUCCESS : CNCL_RET_ERR_SYSTEM; }

// `body` in `queue`'s order (ccl_engine.h).
// Not run if the communicator was freed meanwhile.
cnclResult_t OnQueue(cnclComm_t comm, cnrtQueue_t queue, std::function<cnclResult_t()> body) {
  return standin::OnComm<cnclResult_t, cnrtQueue_t>(comm, iccl_standin_cambricon_enqueue, queue,
                                                    std::move(body), CNCL_RET_SUCCESS,
                                                    CNCL_RET_ERR_ARGUMENTS, CNCL_RET_ERR_INTERNAL);
}

}  // namespace

extern "C" {

const char *cnclGetErrorStr(cnclResult_t r) {
  switch (r) {
    case CNCL_RET_SUCCESS: return "CNCL_RET_SUCCESS";
    case CNCL_RET_ERR_UNSUPPORTED: return "CNCL_RET_ERR_UNSUPPORTED";
    case CNCL_RET_ERR_NULL_POINTER: return "CNCL_RET_ERR_NULL_POINTER";
    case CNCL_RET_ERR_ARGUMENTS: return "CNCL_RET_ERR_ARGUMENTS";
    case CNCL_RET_ERR_SYSTEM: return "CNCL_RET_ERR_SYSTEM (stand-in: exchange failed)";
    case CNCL_RET_ERR_INIT: return "CNCL_RET_ERR_INIT";
    case CNCL_RET_ERR_MLU_RUNTIME: return "CNCL_RET_ERR_MLU_RUNTIME";
    default: return "CNCL error";
  }
}

cnclResult_t cnclGetCliqueId(cnclCliqueId_t id) {
  iccl_standin_cambricon_record("cnclGetCliqueId");
  if (id == nullptr) return CNCL_RET_ERR_NULL_POINTER;
  std::memset(id, 0, sizeof *id);
  const std::string name = standin::NewCliqueName();
  if (name.size() >= sizeof id->data) return CNCL_RET_ERR_INTERNAL;
  std::memcpy(id->data, name.c_str(), name.size());
  id->hash = std::hash<std::string>()(name);
  return CNCL_RET_SUCCESS;
}

// One communicator per process is all the stand-in supports (num_comm == 1).
cnclResult_t cnclInitComms(cnclComm_t *comms, int num_comm, const int *dev_list,
                           const int *rank_list, int nrank, const cnclCliqueId_t id) {
  iccl_standin_cambricon_record("cnclInitComms");
  if (comms == nullptr || dev_list == nullptr || rank_list == nullptr || id == nullptr)
    return CNCL_RET_ERR_NULL_POINTER;
  if (num_comm != 1 || nrank <= 0 || rank_list[0] < 0 || rank_list[0] >= nrank)
    return CNCL_RET_ERR_ARGUMENTS;
  const std::string name(id->data, strnlen(id->data, sizeof id->data));
  if (name.empty() || id->hash != std::hash<std::string>()(name)) return CNCL_RET_ERR_ARGUMENTS;
  auto c = standin::NewComm<cnclComm>(name, rank_list[0], nrank);
  // Ranks on several hosts with ICCL_STANDIN_CCL_ONE_NODE=1: an init failure.
  if (standin::JoinClique(*c->clique) != standin::Join::kOk) return CNCL_RET_ERR_INIT;
  c->self = c;
  comms[0] = c.get();
  return CNCL_RET_SUCCESS;
}

cnclResult_t cnclFreeComm(cnclComm_t comm) {
  iccl_standin_cambricon_record("cnclFreeComm");
  if (comm == nullptr) return CNCL_RET_ERR_NULL_POINTER;
  standin::CommState::Destroy(comm, true);
  return CNCL_RET_SUCCESS;
}

cnclResult_t cnclAbortComm(cnclComm_t comm) {
  iccl_standin_cambricon_record("cnclAbortComm");
  if (comm == nullptr) return CNCL_RET_ERR_NULL_POINTER;
  standin::CommState::Destroy(comm, false);
  return CNCL_RET_SUCCESS;
}

cnclResult_t cnclGetCommAsyncError(cnclComm_t comm) {
  return comm == nullptr ? CNCL_RET_ERR_NULL_POINTER
                         : static_cast<cnclResult_t>(comm->async_error.load());
}

}  // extern "C"

namespace {
// Send/Recv between cnclGroupStart and cnclGroupEnd are issued at the
// outermost GroupEnd, sends first (they never wait), as a group lets them
// run in any order.
struct PendingP2p {
  bool send;
  cnclComm_t comm;
  void *buf;
  size_t bytes;
  int peer;
  cnrtQueue_t queue;
};
thread_local int t_group_depth = 0;
thread_local std::vector<PendingP2p> t_pending;

cnclResult_t RunP2p(const PendingP2p &p) {
  return Done(p.send ? p.comm->clique->Send(p.peer, p.buf, p.bytes)
                     : p.comm->clique->Recv(p.peer, p.buf, p.bytes));
}
}  // namespace

extern "C" {

cnclResult_t cnclGroupStart(void) {
  iccl_standin_cambricon_record("cnclGroupStart");
  ++t_group_depth;
  return CNCL_RET_SUCCESS;
}

cnclResult_t cnclGroupEnd(void) {
  iccl_standin_cambricon_record("cnclGroupEnd");
  if (t_group_depth == 0) return CNCL_RET_ERR_ARGUMENTS;
  if (--t_group_depth > 0) return CNCL_RET_SUCCESS;
  std::vector<PendingP2p> ops;
  ops.swap(t_pending);
  if (ops.empty()) return CNCL_RET_SUCCESS;
  // The group runs in the first operation's queue's order.
  return OnQueue(ops[0].comm, ops[0].queue, [ops] {
    cnclResult_t first = CNCL_RET_SUCCESS;
    for (int pass = 0; pass < 2; ++pass) {
      for (const PendingP2p &p : ops) {
        if (p.send != (pass == 0)) continue;
        const cnclResult_t r = RunP2p(p);
        if (first == CNCL_RET_SUCCESS) first = r;
      }
    }
    return first;
  });
}

cnclResult_t cnclAllReduce(const void *s, void *r, size_t n, cnclDataType_t t,
                           cnclReduceOp_t op, cnclComm_t comm, cnrtQueue_t queue) {
  standin::Elem e;
  standin::Op o;
  const size_t b = Bytes(n, t);
  if (cnclResult_t q = Check("cnclAllReduce", comm, t, &e, s, b, r, b)) return q;
  if (!ToOp(op, &o)) return CNCL_RET_ERR_UNSUPPORTED;
  return OnQueue(comm, queue, [=] {
    return Done(standin::CclAllReduce(*comm->clique, s, r, n, e, o));
  });
}

cnclResult_t cnclBroadcast(const void *s, void *r, size_t n, cnclDataType_t t, int root,
                           cnclComm_t comm, cnrtQueue_t queue) {
  standin::Elem e;
  const size_t b = Bytes(n, t);
  const bool me = comm != nullptr && comm->clique->rank() == root;
  if (cnclResult_t q = Check("cnclBroadcast", comm, t, &e, me ? s : nullptr, me ? b : 0, r, b))
    return q;
  if (root < 0 || root >= comm->clique->size()) return CNCL_RET_ERR_ARGUMENTS;
  return OnQueue(comm, queue, [=] {
    return Done(standin::CclBroadcast(*comm->clique, s, r, n, e, root));
  });
}

cnclResult_t cnclReduce(const void *s, void *r, size_t n, cnclDataType_t t, cnclReduceOp_t op,
                        int root, cnclComm_t comm, cnrtQueue_t queue) {
  standin::Elem e;
  standin::Op o;
  const size_t b = Bytes(n, t);
  const bool me = comm != nullptr && comm->clique->rank() == root;
  if (cnclResult_t q = Check("cnclReduce", comm, t, &e, s, b, me ? r : nullptr, me ? b : 0))
    return q;
  if (!ToOp(op, &o) || root < 0 || root >= comm->clique->size()) return CNCL_RET_ERR_ARGUMENTS;
  return OnQueue(comm, queue, [=] {
    return Done(standin::CclReduce(*comm->clique, s, r, n, e, o, root));
  });
}

cnclResult_t cnclAllGather(const void *s, void *r, size_t n, cnclDataType_t t, cnclComm_t comm,
                           cnrtQueue_t queue) {
  standin::Elem e;
  const size_t b = Bytes(n, t);
  if (cnclResult_t q = Check("cnclAllGather", comm, t, &e, s, b, r,
                             comm ? b * comm->clique->size() : 0))
    return q;
  return OnQueue(comm, queue, [=] {
    return Done(standin::CclAllGather(*comm->clique, s, r, n, e));
  });
}

cnclResult_t cnclReduceScatter(const void *s, void *r, size_t n, cnclDataType_t t,
                               cnclReduceOp_t op, cnclComm_t comm, cnrtQueue_t queue) {
  standin::Elem e;
  standin::Op o;
  const size_t b = Bytes(n, t);
  if (cnclResult_t q = Check("cnclReduceScatter", comm, t, &e, s,
                             comm ? b * comm->clique->size() : 0, r, b))
    return q;
  if (!ToOp(op, &o)) return CNCL_RET_ERR_UNSUPPORTED;
  return OnQueue(comm, queue, [=] {
    return Done(standin::CclReduceScatter(*comm->clique, s, r, n, e, o));
  });
}

cnclResult_t cnclSend(void *s, size_t n, cnclDataType_t t, int peer, cnclComm_t comm,
                      cnrtQueue_t queue) {
  standin::Elem e;
  const size_t b = Bytes(n, t);
  if (cnclResult_t q = Check("cnclSend", comm, t, &e, s, b, nullptr, 0)) return q;
  if (peer < 0 || peer >= comm->clique->size()) return CNCL_RET_ERR_ARGUMENTS;
  const PendingP2p p{true, comm, s, b, peer, queue};
  if (t_group_depth > 0) {
    t_pending.push_back(p);
    return CNCL_RET_SUCCESS;
  }
  return OnQueue(comm, queue, [p] { return RunP2p(p); });
}

cnclResult_t cnclRecv(void *r, size_t n, cnclDataType_t t, int peer, cnclComm_t comm,
                      cnrtQueue_t queue) {
  standin::Elem e;
  const size_t b = Bytes(n, t);
  if (cnclResult_t q = Check("cnclRecv", comm, t, &e, r, b, nullptr, 0)) return q;
  if (peer < 0 || peer >= comm->clique->size()) return CNCL_RET_ERR_ARGUMENTS;
  const PendingP2p p{false, comm, r, b, peer, queue};
  if (t_group_depth > 0) {
    t_pending.push_back(p);
    return CNCL_RET_SUCCESS;
  }
  return OnQueue(comm, queue, [p] { return RunP2p(p); });
}

}  // extern "C"
