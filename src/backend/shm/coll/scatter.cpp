// Scatter: the root copies the blocks in; every other rank copies its block
// out of the root's stage, and the root its own from sendbuff. A chunk
// holds the same range of every block, block j at j * cap of the root's
// stage (as ReduceScatter's): each chunk serves every rank at once, and a
// small call is one chunk whatever the rank count. Chunking by block
// instead would take one chunk, and one round of waits, per rank. As
// Broadcast: at the first chunk every rank arrives (the others with
// nothing in their stage) and meets every other; later chunks wait for the
// root only.
#include "backend/shm/coll/collectives.h"

namespace infiniccl {
namespace shm {

namespace {

struct ScatterPolicy {
  explicit ScatterPolicy(const Call &c)
      : cap(c.ch.ChunkBytes(c.a.count * c.elem * static_cast<size_t>(c.ch.size()), c.Staged()) /
            c.elem / static_cast<size_t>(c.ch.size())),
        root(c.ch.rank() == c.a.root) {}
  size_t cap;  // elements of each block per chunk: the blocks share a stage
  bool root;
  Status In(Call &c, const Chunk &k) {
    if (!root) return Status::Ok();
    char *mine = c.ch.Stage(c.ch.rank(), k.g);
    for (int j = 0; j < c.ch.size(); ++j) {
      if (j == c.ch.rank()) continue;  // copied out from sendbuff
      INFINICCL_RETURN_IF_ERROR(
          c.copies.Copy(mine + static_cast<size_t>(j) * cap * c.elem,
                        c.in + (static_cast<size_t>(j) * c.a.count + k.at) * c.elem,
                        k.n * c.elem, false, c.send_dev));
    }
    return Status::Ok();
  }
  bool Posts() const { return root; }
  Await Waits() const { return root ? Await::kNone : Await::kRoot; }
  Status Out(Call &c, const Chunk &k) {
    const int me = c.ch.rank();
    char *dst = c.out + k.at * c.elem;
    // In place (recvbuff is the root's block of sendbuff) the root's copy
    // is none: Copies::Copy skips a copy onto itself.
    if (root) {
      return c.copies.Copy(dst, c.in + (static_cast<size_t>(me) * c.a.count + k.at) * c.elem,
                           k.n * c.elem, c.recv_dev, c.send_dev);
    }
    return c.copies.Copy(dst, c.ch.Stage(c.a.root, k.g) + static_cast<size_t>(me) * cap * c.elem,
                         k.n * c.elem, c.recv_dev, false);
  }
};

}  // namespace

Status Scatter(Call &c) { return RunChunks<ScatterPolicy>(c); }

}  // namespace shm
}  // namespace infiniccl
