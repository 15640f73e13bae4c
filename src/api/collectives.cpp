// The collective entry points of the public C API: build a CollArgs,
// validate it, route it. Nothing here allocates on success.
#include <infiniccl/infiniccl.h>

#include <cstring>

#include "api/api_call.h"
#include "api/cross_check.h"
#include "api/validate.h"
#include "core/config.h"
#include "comm/group.h"
#include "comm/runtime.h"
#include "route/route.h"

using namespace infiniccl;

namespace {

// Publishes the call to the watchdog for as long as it runs (any return or
// exception ends it).
class CallInFlight {
 public:
  CallInFlight(Communicator &c, const CollArgs &a, uint64_t seq) : c_(c) {
    c.BeginCall(a, seq);
  }
  ~CallInFlight() { c_.EndCall(); }
  CallInFlight(const CallInFlight &) = delete;
  CallInFlight &operator=(const CallInFlight &) = delete;

 private:
  Communicator &c_;
};

// A C caller may pass any int as dtype or op; in C++ reading an enum
// parameter that holds a value outside the enumeration is undefined (the
// fuzzer trips clang's -fsanitize=enum on it). So they are bound by
// reference and copied bit for bit; validation then checks the raw bits.
CollArgs Args(CollKind kind, const void *sendbuff, void *recvbuff, size_t count,
              const infinicclDataType_t &dtype, const infinicclRedOp_t &op, int root,
              void *stream) {
  CollArgs a{kind,         sendbuff, recvbuff, count, infinicclInt8,
             infinicclSum, root,     stream,   false};
  std::memcpy(&a.dtype, &dtype, sizeof a.dtype);
  std::memcpy(&a.op, &op, sizeof a.op);
  return a;
}

infinicclResult_t RunCollective(const char *function, infinicclComm_t comm,
                                CollArgs args) {
  Group &group = Group::Current();
  const infinicclResult_t result = ApiCall(function, [&](CallContext &ctx) -> Status {
    INFINICCL_RETURN_IF_ERROR(Runtime::LookupUsable(comm, &ctx.comm));
    Communicator &c = *ctx.comm;
    Communicator::CallGuard guard;
    INFINICCL_RETURN_IF_ERROR(c.Enter(function, &guard));
    // Numbered before validation: a rank whose arguments are rejected still
    // uses up the number, as do its peers, so numbering never depends on
    // something one rank got wrong (INFINICCL_CHECK compares it).
    const bool p2p = IsP2p(args.kind);
    if (c.diverged()) {
      return Status(infinicclInvalidUsage,
                    "the ranks of this communicator no longer agree on its calls "
                    "(INFINICCL_CHECK found: " +
                        c.diverged_why() + "); destroy it and create a new one");
    }
    // Queued work that failed: every later call returns its error (the
    // ranks no longer agree on what MPI calls come next).
    INFINICCL_RETURN_IF_ERROR(c.QueuedError());
    const uint64_t seq = p2p ? 0 : c.NextSeq();
    Status valid = ValidateCollective(c.rank(), c.size(), group.active(), &args);
    // Published to the watchdog from here on, the check's own exchange
    // included; counted even for count 0.
    CallInFlight in_flight(c, args, seq);
    bool queued = false;
    const Status result = [&]() -> Status {
      // Before the count-0 return: a rank passing 0 where the others pass
      // 1024 is exactly what the check is for.
      if (!p2p && c.check() && c.has_mpi()) {
        // The exchange runs on this thread: after the queued work.
        INFINICCL_RETURN_IF_ERROR(c.DrainQueued());
        Status agreed = CrossCheck(c, args, seq, valid.ok());
        INFINICCL_RETURN_IF_ERROR(valid);  // this rank's own reason comes first
        INFINICCL_RETURN_IF_ERROR(agreed);
      }
      INFINICCL_RETURN_IF_ERROR(valid);
      if (args.count == 0) return Status::Ok();
      if (group.active()) group.AddPendingComm(ctx.comm);
      return RouteCollective(c, args, &queued);
    }();
    // On the node's board: a rank that returned (say, its arguments were
    // refused) is not one stuck inside the call its peers wait in. A queued
    // call is noted by the engine when it completes.
    if (!queued) c.NoteReturned(seq, static_cast<int>(result.code()));
    return result;
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
  return RunCollective(
      "infinicclAllReduce", comm,
      Args(CollKind::kAllReduce, sendbuff, recvbuff, count, datatype, op, 0, stream));
}

infinicclResult_t infinicclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
                                     infinicclDataType_t datatype, int root,
                                     infinicclComm_t comm, void *stream) {
  return RunCollective("infinicclBroadcast", comm,
                       Args(CollKind::kBroadcast, sendbuff, recvbuff, count, datatype,
                            infinicclSum, root, stream));
}

infinicclResult_t infinicclBcast(void *buff, size_t count, infinicclDataType_t datatype,
                                 int root, infinicclComm_t comm, void *stream) {
  return RunCollective("infinicclBcast", comm,
                       Args(CollKind::kBroadcast, buff, buff, count, datatype,
                            infinicclSum, root, stream));
}

infinicclResult_t infinicclReduce(const void *sendbuff, void *recvbuff, size_t count,
                                  infinicclDataType_t datatype, infinicclRedOp_t op,
                                  int root, infinicclComm_t comm, void *stream) {
  return RunCollective(
      "infinicclReduce", comm,
      Args(CollKind::kReduce, sendbuff, recvbuff, count, datatype, op, root, stream));
}

infinicclResult_t infinicclAllGather(const void *sendbuff, void *recvbuff, size_t count,
                                     infinicclDataType_t datatype, infinicclComm_t comm,
                                     void *stream) {
  return RunCollective("infinicclAllGather", comm,
                       Args(CollKind::kAllGather, sendbuff, recvbuff, count, datatype,
                            infinicclSum, 0, stream));
}

infinicclResult_t infinicclGather(const void *sendbuff, void *recvbuff, size_t count,
                                  infinicclDataType_t datatype, int root,
                                  infinicclComm_t comm, void *stream) {
  return RunCollective("infinicclGather", comm,
                       Args(CollKind::kGather, sendbuff, recvbuff, count, datatype,
                            infinicclSum, root, stream));
}

infinicclResult_t infinicclScatter(const void *sendbuff, void *recvbuff, size_t count,
                                   infinicclDataType_t datatype, int root,
                                   infinicclComm_t comm, void *stream) {
  return RunCollective("infinicclScatter", comm,
                       Args(CollKind::kScatter, sendbuff, recvbuff, count, datatype,
                            infinicclSum, root, stream));
}

infinicclResult_t infinicclReduceScatter(const void *sendbuff, void *recvbuff,
                                         size_t recvcount, infinicclDataType_t datatype,
                                         infinicclRedOp_t op, infinicclComm_t comm,
                                         void *stream) {
  return RunCollective("infinicclReduceScatter", comm,
                       Args(CollKind::kReduceScatter, sendbuff, recvbuff, recvcount,
                            datatype, op, 0, stream));
}

infinicclResult_t infinicclAllToAll(const void *sendbuff, void *recvbuff, size_t count,
                                    infinicclDataType_t datatype, infinicclComm_t comm,
                                    void *stream) {
  return RunCollective("infinicclAllToAll", comm,
                       Args(CollKind::kAllToAll, sendbuff, recvbuff, count, datatype,
                            infinicclSum, 0, stream));
}

infinicclResult_t infinicclSend(const void *sendbuff, size_t count,
                                infinicclDataType_t datatype, int peer,
                                infinicclComm_t comm, void *stream) {
  return RunCollective("infinicclSend", comm,
                       Args(CollKind::kSend, sendbuff, nullptr, count, datatype,
                            infinicclSum, peer, stream));
}

infinicclResult_t infinicclRecv(void *recvbuff, size_t count,
                                infinicclDataType_t datatype, int peer,
                                infinicclComm_t comm, void *stream) {
  return RunCollective("infinicclRecv", comm,
                       Args(CollKind::kRecv, nullptr, recvbuff, count, datatype,
                            infinicclSum, peer, stream));
}

infinicclResult_t infinicclSendTagged(const void *sendbuff, size_t count,
                                      infinicclDataType_t datatype, int peer, int tag,
                                      infinicclComm_t comm, void *stream) {
  CollArgs a = Args(CollKind::kSend, sendbuff, nullptr, count, datatype, infinicclSum,
                    peer, stream);
  a.tag = tag;
  a.tagged = true;
  return RunCollective("infinicclSendTagged", comm, a);
}

infinicclResult_t infinicclRecvTagged(void *recvbuff, size_t count,
                                      infinicclDataType_t datatype, int peer, int tag,
                                      int *source, infinicclComm_t comm, void *stream) {
  CollArgs a = Args(CollKind::kRecv, nullptr, recvbuff, count, datatype, infinicclSum,
                    peer, stream);
  a.tag = tag;
  a.source = source;
  a.tagged = true;
  return RunCollective("infinicclRecvTagged", comm, a);
}

}  // extern "C"
