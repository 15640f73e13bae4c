// The collective entry points of the public C API: build a CollArgs,
// validate it, route it. Nothing here allocates on success.
#include <infiniccl/infiniccl.h>

#include "api/api_call.h"
#include "api/cross_check.h"
#include "api/validate.h"
#include "core/config.h"
#include "core/group.h"
#include "core/runtime.h"
#include "route/route.h"

using namespace infiniccl;

namespace {

infinicclResult_t RunCollective(const char *function, infinicclComm_t comm,
                                CollArgs args) {
  Group &group = Group::Current();
  const infinicclResult_t result = ApiCall(function, [&](CallContext &ctx) -> Status {
    INFINICCL_RETURN_IF_ERROR(Runtime::CheckActive());
    INFINICCL_RETURN_IF_ERROR(Runtime::Lookup(comm, &ctx.comm));
    Communicator &c = *ctx.comm;
    Communicator::CallGuard guard;
    INFINICCL_RETURN_IF_ERROR(c.Enter(function, &guard));
    const bool p2p = args.kind == CollKind::kSend || args.kind == CollKind::kRecv;
    const uint64_t seq = p2p ? c.seq() : c.NextSeq();
    Status valid = ValidateCollective(c.rank(), c.size(), group.active(), &args);
    // Before the count-0 return: a rank passing 0 where the others pass 1024
    // is exactly what the check is for.
    if (!p2p && GlobalConfig().check) {
      Status agreed = CrossCheck(c, args, seq, valid.ok());
      INFINICCL_RETURN_IF_ERROR(valid);  // this rank's own reason comes first
      INFINICCL_RETURN_IF_ERROR(agreed);
    }
    INFINICCL_RETURN_IF_ERROR(valid);
    if (args.count == 0) return Status::Ok();
    if (group.active()) group.AddPendingComm(ctx.comm);
    return RouteCollective(c, args);
  });
  // As NCCL: a call that fails inside a group also fails the group's End
  // (with the message the call recorded for this thread).
  if (result != infinicclSuccess && group.active()) {
    group.NoteCallError(Status(result, ThreadLastError()));
  }
  return result;
}

}  // namespace

extern "C" {

infinicclResult_t infinicclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
                                     infinicclDataType_t datatype, infinicclRedOp_t op,
                                     infinicclComm_t comm, void *stream) {
  return RunCollective("infinicclAllReduce", comm,
                       {CollKind::kAllReduce, sendbuff, recvbuff, count, datatype, op, 0,
                        stream, false});
}

infinicclResult_t infinicclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
                                     infinicclDataType_t datatype, int root,
                                     infinicclComm_t comm, void *stream) {
  return RunCollective("infinicclBroadcast", comm,
                       {CollKind::kBroadcast, sendbuff, recvbuff, count, datatype,
                        infinicclSum, root, stream, false});
}

infinicclResult_t infinicclBcast(void *buff, size_t count, infinicclDataType_t datatype,
                                 int root, infinicclComm_t comm, void *stream) {
  return RunCollective("infinicclBcast", comm,
                       {CollKind::kBroadcast, buff, buff, count, datatype, infinicclSum,
                        root, stream, false});
}

infinicclResult_t infinicclReduce(const void *sendbuff, void *recvbuff, size_t count,
                                  infinicclDataType_t datatype, infinicclRedOp_t op,
                                  int root, infinicclComm_t comm, void *stream) {
  return RunCollective("infinicclReduce", comm,
                       {CollKind::kReduce, sendbuff, recvbuff, count, datatype, op, root,
                        stream, false});
}

infinicclResult_t infinicclAllGather(const void *sendbuff, void *recvbuff, size_t count,
                                     infinicclDataType_t datatype, infinicclComm_t comm,
                                     void *stream) {
  return RunCollective("infinicclAllGather", comm,
                       {CollKind::kAllGather, sendbuff, recvbuff, count, datatype,
                        infinicclSum, 0, stream, false});
}

infinicclResult_t infinicclGather(const void *sendbuff, void *recvbuff, size_t count,
                                  infinicclDataType_t datatype, int root,
                                  infinicclComm_t comm, void *stream) {
  return RunCollective("infinicclGather", comm,
                       {CollKind::kGather, sendbuff, recvbuff, count, datatype,
                        infinicclSum, root, stream, false});
}

infinicclResult_t infinicclScatter(const void *sendbuff, void *recvbuff, size_t count,
                                   infinicclDataType_t datatype, int root,
                                   infinicclComm_t comm, void *stream) {
  return RunCollective("infinicclScatter", comm,
                       {CollKind::kScatter, sendbuff, recvbuff, count, datatype,
                        infinicclSum, root, stream, false});
}

infinicclResult_t infinicclReduceScatter(const void *sendbuff, void *recvbuff,
                                         size_t recvcount, infinicclDataType_t datatype,
                                         infinicclRedOp_t op, infinicclComm_t comm,
                                         void *stream) {
  return RunCollective("infinicclReduceScatter", comm,
                       {CollKind::kReduceScatter, sendbuff, recvbuff, recvcount, datatype,
                        op, 0, stream, false});
}

infinicclResult_t infinicclAllToAll(const void *sendbuff, void *recvbuff, size_t count,
                                    infinicclDataType_t datatype, infinicclComm_t comm,
                                    void *stream) {
  return RunCollective("infinicclAllToAll", comm,
                       {CollKind::kAllToAll, sendbuff, recvbuff, count, datatype,
                        infinicclSum, 0, stream, false});
}

infinicclResult_t infinicclSend(const void *sendbuff, size_t count,
                                infinicclDataType_t datatype, int peer,
                                infinicclComm_t comm, void *stream) {
  return RunCollective("infinicclSend", comm,
                       {CollKind::kSend, sendbuff, nullptr, count, datatype, infinicclSum,
                        peer, stream, false});
}

infinicclResult_t infinicclRecv(void *recvbuff, size_t count, infinicclDataType_t datatype,
                                int peer, infinicclComm_t comm, void *stream) {
  return RunCollective("infinicclRecv", comm,
                       {CollKind::kRecv, nullptr, recvbuff, count, datatype, infinicclSum,
                        peer, stream, false});
}

}  // extern "C"
