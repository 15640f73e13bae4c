// Gather: every rank but the root copies its block in; the root copies
// every block out, its own from sendbuff. As Reduce: at the first chunk
// every rank arrives and meets every other (the descriptors); later chunks
// the root waits for every rank and the others for none.
#include "backend/shm/coll/collectives.h"

namespace infiniccl {
namespace shm {

namespace {

struct GatherPolicy : WholeStagePolicy {
  using WholeStagePolicy::WholeStagePolicy;
  Status In(Call &c, const Chunk &k) {
    if (root) return Status::Ok();
    return CopyInput(c, k);
  }
  bool Posts() const { return true; }
  Await Waits() const { return root ? Await::kAll : Await::kNone; }
  Status Out(Call &c, const Chunk &k) {
    if (!root) return Status::Ok();
    const size_t bytes = k.n * c.elem;
    const auto block = [&](int j) {
      return c.out + (static_cast<size_t>(j) * c.a.count + k.at) * c.elem;
    };
    // In place (sendbuff is the root's block of recvbuff) the own copy is
    // none: Copies::Copy skips a copy onto itself.
    INFINICCL_RETURN_IF_ERROR(
        c.copies.Copy(block(c.ch.rank()), c.in + k.at * c.elem, bytes, c.recv_dev, c.send_dev));
    for (int j = 0; j < c.ch.size(); ++j) {
      if (j == c.ch.rank()) continue;
      INFINICCL_RETURN_IF_ERROR(
          c.copies.Copy(block(j), c.ch.Stage(j, k.g), bytes, c.recv_dev, false));
    }
    return Status::Ok();
  }
};

}  // namespace

Status Gather(Call &c) { return RunChunks<GatherPolicy>(c); }

}  // namespace shm
}  // namespace infiniccl
