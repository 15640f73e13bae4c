// Reduce: every rank copies in; the root reduces every copy into its
// recvbuff (its own input read from sendbuff when that is host memory).
#include "backend/shm/coll/collectives.h"
#include "core/reduce.h"

namespace infiniccl {
namespace shm {

namespace {

struct ReducePolicy : WholeStagePolicy {
  using WholeStagePolicy::WholeStagePolicy;
  Status In(Call &c, const Chunk &k) {
    if (root && !c.send_dev) return Status::Ok();
    return CopyInput(c, k);
  }
  bool Posts() const { return true; }
  Await Waits() const { return root ? Await::kAll : Await::kNone; }
  Status Out(Call &c, const Chunk &k) {
    if (!root) return Status::Ok();
    const size_t off = k.at * c.elem;
    for (int j = 0; j < c.ch.size(); ++j) {
      c.scratch.sources[static_cast<size_t>(j)] =
          j == c.ch.rank() && !c.send_dev ? c.in + off : c.ch.Stage(j, k.g);
    }
    char *dst = c.recv_dev ? c.ch.Stage(c.ch.rank(), k.g) : c.out + off;
    ReduceInto(dst, c.scratch.sources.data(), c.ch.size(), k.n, c.a.dtype, c.a.op, c.divisor);
    return c.copies.Copy(c.out + off, dst, k.n * c.elem, c.recv_dev, false);
  }
};

}  // namespace

Status Reduce(Call &c) { return RunChunks<ReducePolicy>(c); }

}  // namespace shm
}  // namespace infiniccl
