// Broadcast: the root copies in; every other rank copies out. At the first
// chunk every rank arrives (the others with nothing in their stage) and
// meets every other (the descriptors); later chunks wait for the root only.
#include "backend/shm/coll/collectives.h"

namespace infiniccl {
namespace shm {

namespace {

struct BroadcastPolicy : WholeStagePolicy {
  using WholeStagePolicy::WholeStagePolicy;
  Status In(Call &c, const Chunk &k) {
    if (!root) return Status::Ok();
    return CopyInput(c, k);
  }
  bool Posts() const { return root; }
  Await Waits() const { return root ? Await::kNone : Await::kRoot; }
  Status Out(Call &c, const Chunk &k) {
    const size_t off = k.at * c.elem;
    if (root) return c.copies.Copy(c.out + off, c.in + off, k.n * c.elem, c.recv_dev, c.send_dev);
    return c.copies.Copy(c.out + off, c.ch.Stage(c.a.root, k.g), k.n * c.elem, c.recv_dev, false);
  }
};

}  // namespace

Status Broadcast(Call &c) { return RunChunks<BroadcastPolicy>(c); }

}  // namespace shm
}  // namespace infiniccl
