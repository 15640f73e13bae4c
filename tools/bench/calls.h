// One call of a collective: the raw MPI way on host memory, the InfiniCCL
// way on any memory, and the ReduceScatter decompositions compared by the
// rs_* modes. Buffers follow the Layout (NCCL semantics and layout).
#ifndef INFINICCL_BENCH_CALLS_H_
#define INFINICCL_BENCH_CALLS_H_

#include <infiniccl/infiniccl.h>

#include <string>
#include <vector>

#include "collective.h"
#include "device.h"
#include "dtype.h"
#include "mpi_include.h"

namespace bench {

struct CallArgs {
  Collective coll;
  const Layout *layout;
  const DType *dtype;
  infinicclRedOp_t op;
  int root;
  int rank;
  int nranks;
};

// Empty when raw MPI can run this call (in place when `inplace`); otherwise
// why not (the same on every rank): no MPI type for float16/bfloat16
// reductions, counts above INT_MAX, a known crash of the MPI library.
std::string MpiUnsupported(const CallArgs &a, bool inplace);

// Runs the call with MPI (MPI_IN_PLACE when `inplace`). Returns where this
// rank's result lies: `recv`, except Broadcast at the root (its own source
// buffer, which MPI_Bcast sends from) and in-place ReduceScatter (MPI puts
// the block at the start of the buffer). Avg is MPI_SUM and then a local
// division of the result.
const void *MpiCall(const CallArgs &a, MPI_Comm comm, const void *send, void *recv,
                    bool inplace);

std::string IcclUnsupported(const CallArgs &a);  // SendRecv needs 2 ranks
// SendRecv is a ring of blocking infinicclSend/Recv, even ranks sending first.
void IcclCall(const CallArgs &a, infinicclComm_t comm, const void *send, void *recv,
              void *stream);

// ReduceScatter decompositions on host memory (out of place).
enum class RsVariant {
  kNone,
  kBlock,              // MPI_Reduce_scatter_block
  kCounts,             // MPI_Reduce_scatter, equal counts
  kAllReduce,          // MPI_Allreduce of everything, keep own block
  kReduceThenScatter,  // MPI_Reduce to rank 0, then MPI_Scatter
  kRing,               // ring of MPI_Sendrecv + local reduction
};

// Scratch that rs_* modes allocate once per (mode, size), outside timing.
struct RsScratch {
  Buffer whole;     // total elements (AllReduce, Reduce+Scatter)
  Buffer partial;   // one block (ring)
  Buffer incoming;  // one block (ring)
  std::vector<int> counts;
};

std::string RsUnsupported(RsVariant v, const CallArgs &a);
void RsPrepare(RsVariant v, const CallArgs &a, RsScratch *s);
void RsCall(RsVariant v, const CallArgs &a, MPI_Comm comm, const void *send, void *recv,
            RsScratch *s);

}  // namespace bench

#endif  // INFINICCL_BENCH_CALLS_H_
