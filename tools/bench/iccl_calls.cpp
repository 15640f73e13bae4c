// The same calls through the InfiniCCL public API.
#include "calls.h"
#include "errors.h"

namespace bench {

std::string IcclUnsupported(const CallArgs &a) {
  if (a.coll == Collective::kSendRecv && a.nranks < 2)
    return "SendRecv needs 2 or more ranks (the peer must differ)";
  return "";
}

void IcclCall(const CallArgs &a, infinicclComm_t comm, const void *send, void *recv,
              void *stream) {
  const size_t c = a.layout->count;
  const infinicclDataType_t t = a.dtype->id;
  switch (a.coll) {
    case Collective::kAllReduce:
      CheckIccl(infinicclAllReduce(send, recv, c, t, a.op, comm, stream),
                "infinicclAllReduce", comm);
      break;
    case Collective::kBroadcast:
      CheckIccl(infinicclBroadcast(send, recv, c, t, a.root, comm, stream),
                "infinicclBroadcast", comm);
      break;
    case Collective::kReduce:
      CheckIccl(infinicclReduce(send, recv, c, t, a.op, a.root, comm, stream),
                "infinicclReduce", comm);
      break;
    case Collective::kAllGather:
      CheckIccl(infinicclAllGather(send, recv, c, t, comm, stream), "infinicclAllGather",
                comm);
      break;
    case Collective::kGather:
      CheckIccl(infinicclGather(send, recv, c, t, a.root, comm, stream),
                "infinicclGather", comm);
      break;
    case Collective::kScatter:
      CheckIccl(infinicclScatter(send, recv, c, t, a.root, comm, stream),
                "infinicclScatter", comm);
      break;
    case Collective::kReduceScatter:
      CheckIccl(infinicclReduceScatter(send, recv, c, t, a.op, comm, stream),
                "infinicclReduceScatter", comm);
      break;
    case Collective::kAllToAll:
      CheckIccl(infinicclAllToAll(send, recv, c, t, comm, stream), "infinicclAllToAll",
                comm);
      break;
    case Collective::kSendRecv: {
      // As nccl-tests: the send to the next rank and the receive from the
      // previous one in one group, so both are in flight together (what
      // MPI_Sendrecv does in host_sendrecv).
      const int next = (a.rank + 1) % a.nranks;
      const int prev = (a.rank + a.nranks - 1) % a.nranks;
      CheckIccl(infinicclGroupStart(), "infinicclGroupStart", comm);
      CheckIccl(infinicclSend(send, c, t, next, comm, stream), "infinicclSend", comm);
      CheckIccl(infinicclRecv(recv, c, t, prev, comm, stream), "infinicclRecv", comm);
      CheckIccl(infinicclGroupEnd(), "infinicclGroupEnd", comm);
      break;
    }
    case Collective::kCopy: break;
  }
}

}  // namespace bench
