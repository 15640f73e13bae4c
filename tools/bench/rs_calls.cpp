// ReduceScatter decompositions (rs_* modes): how much each way of building
// ReduceScatter from MPI costs next to MPI_Reduce_scatter_block.
#include <climits>
#include <cstring>

#include "calls.h"
#include "errors.h"

namespace bench {

std::string RsUnsupported(RsVariant v, const CallArgs &a) {
  if (a.layout->total_count > static_cast<size_t>(INT_MAX))
    return "count above INT_MAX for raw MPI";
  // The ring reduces locally, so it handles every type; the others need an
  // MPI reduction type.
  if (v != RsVariant::kRing && MpiReduceType(*a.dtype) == MPI_DATATYPE_NULL)
    return std::string("MPI has no ") + a.dtype->name + " reduction";
  return "";
}

void RsPrepare(RsVariant v, const CallArgs &a, RsScratch *s) {
  const size_t block = a.layout->count * a.dtype->size;
  switch (v) {
    case RsVariant::kCounts:
      s->counts.assign(static_cast<size_t>(a.nranks), static_cast<int>(a.layout->count));
      break;
    case RsVariant::kAllReduce:
    case RsVariant::kReduceThenScatter:
      s->whole = Buffer(nullptr, a.layout->total_count * a.dtype->size);
      break;
    case RsVariant::kRing:
      s->partial = Buffer(nullptr, block);
      s->incoming = Buffer(nullptr, block);
      break;
    default: break;
  }
}

namespace {

// Ring reduce-scatter: in step s (0 .. n-2) rank r sends block r-s-1 (its
// own input at step 0, then the partial sum it just formed) to r+1, receives
// block r-s-2 from r-1 and adds its own input of that block. After n-1 steps
// the partial sum of block r holds all n contributions.
void Ring(const CallArgs &a, MPI_Comm comm, const void *send, void *recv, RsScratch *s) {
  const int n = a.nranks, r = a.rank;
  const size_t c = a.layout->count, block = c * a.dtype->size;
  if (n == 1) {
    if (block) std::memcpy(recv, send, block);
    return;
  }
  const MPI_Datatype move = MpiMoveType(*a.dtype);
  const char *in = static_cast<const char *>(send);
  auto input = [&](int b) { return in + static_cast<size_t>(((b % n) + n) % n) * block; };
  void *partial = s->partial.data();
  void *incoming = s->incoming.data();
  const int next = (r + 1) % n, prev = (r + n - 1) % n;
  for (int step = 0; step < n - 1; ++step) {
    const void *out = step == 0 ? input(r - 1) : partial;
    CheckMpi(MPI_Sendrecv(out, static_cast<int>(c), move, next, 0, incoming,
                          static_cast<int>(c), move, prev, 0, comm, MPI_STATUS_IGNORE),
             "MPI_Sendrecv (ring)");
    void *dst = step == n - 2 ? recv : partial;
    Combine(*a.dtype, a.op, dst, input(r - step - 2), incoming, c);
  }
}

}  // namespace

void RsCall(RsVariant v, const CallArgs &a, MPI_Comm comm, const void *send, void *recv,
            RsScratch *s) {
  const int c = static_cast<int>(a.layout->count);
  const int total = static_cast<int>(a.layout->total_count);
  const size_t block = a.layout->count * a.dtype->size;
  const MPI_Datatype red = MpiReduceType(*a.dtype);
  const MPI_Datatype move = MpiMoveType(*a.dtype);
  const MPI_Op op = MpiOp(a.op);
  switch (v) {
    case RsVariant::kBlock:
      CheckMpi(MPI_Reduce_scatter_block(send, recv, c, red, op, comm),
               "MPI_Reduce_scatter_block");
      break;
    case RsVariant::kCounts:
      CheckMpi(MPI_Reduce_scatter(send, recv, s->counts.data(), red, op, comm),
               "MPI_Reduce_scatter");
      break;
    case RsVariant::kAllReduce:
      CheckMpi(MPI_Allreduce(send, s->whole.data(), total, red, op, comm),
               "MPI_Allreduce");
      if (block)
        std::memcpy(
            recv,
            static_cast<char *>(s->whole.data()) + static_cast<size_t>(a.rank) * block,
            block);
      break;
    case RsVariant::kReduceThenScatter:
      CheckMpi(MPI_Reduce(send, a.rank == 0 ? s->whole.data() : nullptr, total, red, op,
                          0, comm),
               "MPI_Reduce");
      CheckMpi(MPI_Scatter(s->whole.data(), c, move, recv, c, move, 0, comm),
               "MPI_Scatter");
      break;
    case RsVariant::kRing: Ring(a, comm, send, recv, s); break;
    case RsVariant::kNone: break;
  }
  if (a.op == infinicclAvg)
    infiniccl::DivideInPlace(recv, a.layout->count, a.dtype->id, a.nranks);
}

}  // namespace bench
