// The collective entry points of the public C API: build a CollArgs,
// validate it, route it. Nothing here allocates on success.
#include <infiniccl/infiniccl.h>

#include "api/api_call.h"
#include "api/validate.h"
#include "core/group.h"
#include "core/runtime.h"
#include "route/route.h"

using namespace infiniccl;

namespace {

infinicclResult_t RunCollective(const char *function, infinicclComm_t comm,
                                CollArgs args) {
  Group &group = Group::Current();
  const infinicclResult_t result = ApiCall(function, [&](CallContext &ctx) -> Status {
    INFINICCL_RETURN_IF_ERROR(Runtime::LookupUsable(comm, &ctx.comm));
    Communicator &c = *ctx.comm;
    INFINICCL_RETURN_IF_ERROR(
        ValidateCollective(c.rank(), c.size(), group.active(), &args));
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
