// Raw MPI equivalents of each collective, on host buffers.
#include <climits>
#include <cstring>

#include "calls.h"
#include "errors.h"

namespace bench {
namespace {

int Int(size_t n) {
  return static_cast<int>(n);
}

}  // namespace

std::string MpiUnsupported(const CallArgs &a, bool inplace) {
  if (Info(a.coll).has_op && MpiReduceType(*a.dtype) == MPI_DATATYPE_NULL)
    return std::string("MPI has no ") + a.dtype->name + " reduction";
  if (a.layout->total_count > static_cast<size_t>(INT_MAX))
    return "count above INT_MAX for raw MPI";
#if defined(MPICH_NUMVERSION) && MPICH_NUMVERSION < 40102000
  // MPICH before 4.1.2 crashes in MPI_Reduce(MPI_IN_PLACE) at a root other
  // than 0 above 2 KiB (pmodels/mpich#6540, fixed by pmodels/mpich#6543).
  if (a.coll == Collective::kReduce && inplace && a.root != 0)
    return "MPICH < 4.1.2 crashes in MPI_Reduce(MPI_IN_PLACE) at root != 0 "
           "(pmodels/mpich#6540)";
#else
  (void)inplace;
#endif
  return "";
}

const void *MpiCall(const CallArgs &a, MPI_Comm comm, const void *send, void *recv,
                    bool inplace) {
  const Layout &l = *a.layout;
  const int c = Int(l.count);
  const MPI_Datatype move = MpiMoveType(*a.dtype);
  const MPI_Datatype red = MpiReduceType(*a.dtype);
  const MPI_Op op = MpiOp(a.op);
  const bool is_root = a.rank == a.root;
  const void *in = inplace ? MPI_IN_PLACE : send;
  const void *result = recv;
  switch (a.coll) {
    case Collective::kAllReduce:
      CheckMpi(MPI_Allreduce(in, recv, c, red, op, comm), "MPI_Allreduce");
      break;
    case Collective::kBroadcast: {
      void *buf = is_root && !inplace ? const_cast<void *>(send) : recv;
      CheckMpi(MPI_Bcast(buf, c, move, a.root, comm), "MPI_Bcast");
      result = buf;
      break;
    }
    case Collective::kReduce:
      // recvbuf is not significant off the root; in place it aliases sendbuf.
      CheckMpi(MPI_Reduce(is_root ? in : send, is_root ? recv : nullptr, c, red, op,
                          a.root, comm),
               "MPI_Reduce");
      break;
    case Collective::kAllGather:
      CheckMpi(MPI_Allgather(in, c, move, recv, c, move, comm), "MPI_Allgather");
      break;
    case Collective::kGather:
      CheckMpi(MPI_Gather(in, c, move, recv, c, move, a.root, comm), "MPI_Gather");
      break;
    case Collective::kScatter:
      CheckMpi(MPI_Scatter(send, c, move, inplace ? MPI_IN_PLACE : recv, c, move, a.root,
                           comm),
               "MPI_Scatter");
      break;
    case Collective::kReduceScatter:
      if (inplace) {  // MPI_IN_PLACE: the block lands at the buffer's start
        CheckMpi(MPI_Reduce_scatter_block(MPI_IN_PLACE, const_cast<void *>(send), c, red,
                                          op, comm),
                 "MPI_Reduce_scatter_block");
        result = send;
      } else {
        CheckMpi(MPI_Reduce_scatter_block(send, recv, c, red, op, comm),
                 "MPI_Reduce_scatter_block");
      }
      break;
    case Collective::kAllToAll:
      CheckMpi(MPI_Alltoall(in, c, move, recv, c, move, comm), "MPI_Alltoall");
      break;
    case Collective::kSendRecv: {
      const int next = (a.rank + 1) % a.nranks;
      const int prev = (a.rank + a.nranks - 1) % a.nranks;
      CheckMpi(MPI_Sendrecv(send, c, move, next, 0, recv, c, move, prev, 0, comm,
                            MPI_STATUS_IGNORE),
               "MPI_Sendrecv");
      break;
    }
    case Collective::kCopy: break;
  }
  if (a.op == infinicclAvg && Info(a.coll).has_op && l.recv_used)
    infiniccl::DivideInPlace(const_cast<void *>(result), l.recv_count, a.dtype->id,
                             a.nranks);
  return result;
}

}  // namespace bench
