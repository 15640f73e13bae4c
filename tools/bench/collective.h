// The collectives the benchmark knows, their nccl-tests size conventions and
// bus-bandwidth factors, and each rank's buffer layout for one size.
#ifndef INFINICCL_BENCH_COLLECTIVE_H_
#define INFINICCL_BENCH_COLLECTIVE_H_

#include <cstddef>

namespace bench {

enum class Collective {
  kAllReduce,
  kAllGather,
  kAllToAll,
  kBroadcast,
  kReduce,
  kReduceScatter,
  kGather,
  kScatter,
  kSendRecv,
  kCopy,  // local host<->device copies, no communication
};

struct CollectiveInfo {
  Collective id;
  const char *name;   // as in mode names: "allreduce"
  const char *label;  // "AllReduce"
  bool has_op;
  bool has_root;
  // nccl-tests: the requested element count is the total over ranks and
  // each rank's share is count / nranks (rounded down).
  bool per_rank;
};

const CollectiveInfo &Info(Collective c);
// Bus bandwidth factor (nccl-tests): AllReduce 2(n-1)/n; ReduceScatter,
// AllGather, AllToAll, Gather, Scatter (n-1)/n; the others 1.
double BusFactor(Collective c, int nranks);

// One rank's view of one (collective, size). Counts are in elements.
struct Layout {
  size_t count = 0;        // the count argument of the call
  size_t send_count = 0;   // elements the send buffer holds
  size_t recv_count = 0;   // elements the receive buffer holds
  size_t total_count = 0;  // the "count" column
  size_t bytes = 0;        // the "size" column: total_count * type size
  bool inplace = false;    // in-place applies on this rank
  // In place, send and receive live in one buffer of buffer_count elements:
  // send = base + send_offset, recv = base + recv_offset (NCCL's layout).
  size_t buffer_count = 0;
  size_t send_offset = 0;
  size_t recv_offset = 0;
  bool send_used = true;  // this rank's send data matters (root-only ones)
  bool recv_used = true;  // this rank's receive data matters (root-only ones)
};

// `elements` is the requested count (the nccl-tests count column before
// rounding to a multiple of nranks). In place is honoured where NCCL
// defines it; for Gather/Scatter only at the root (as MPI_IN_PLACE), and
// never for SendRecv and copies.
Layout MakeLayout(Collective c, size_t elements, size_t type_size, int nranks, int rank,
                  int root, bool inplace);

}  // namespace bench

#endif  // INFINICCL_BENCH_COLLECTIVE_H_
