// AllToAll: each rank copies the chunk's range of every block of its
// sendbuff into its stage (block j at j * cap, as ReduceScatter's), its
// own block excepted; every rank copies block `rank` of every peer's stage
// into block `peer` of its recvbuff, and its own block from sendbuff. In
// place (sendbuff == recvbuff) a chunk's range of every block is in the
// stage before the rank writes it, and the peers read the stage only.
#include "backend/shm/coll/collectives.h"

namespace infiniccl {
namespace shm {

namespace {

struct AllToAllPolicy {
  explicit AllToAllPolicy(const Call &c)
      : cap(c.ch.ChunkBytes(c.a.count * c.elem * static_cast<size_t>(c.ch.size()), c.Staged()) /
            c.elem / static_cast<size_t>(c.ch.size())) {}
  size_t cap;  // elements of each block per chunk: the blocks share a stage
  Status In(Call &c, const Chunk &k) {
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
  bool Posts() const { return true; }
  Await Waits() const { return Await::kAll; }
  Status Out(Call &c, const Chunk &k) {
    const int me = c.ch.rank();
    const size_t bytes = k.n * c.elem;
    const auto block = [&](int j) {
      return (static_cast<size_t>(j) * c.a.count + k.at) * c.elem;
    };
    // After the descriptors are compared: a refused call writes nothing.
    // In place the own copy is none (Copies::Copy skips a copy onto itself).
    INFINICCL_RETURN_IF_ERROR(
        c.copies.Copy(c.out + block(me), c.in + block(me), bytes, c.recv_dev, c.send_dev));
    const size_t from = static_cast<size_t>(me) * cap * c.elem;
    for (int j = 0; j < c.ch.size(); ++j) {
      if (j == me) continue;
      INFINICCL_RETURN_IF_ERROR(
          c.copies.Copy(c.out + block(j), c.ch.Stage(j, k.g) + from, bytes, c.recv_dev, false));
    }
    return Status::Ok();
  }
};

}  // namespace

Status AllToAll(Call &c) { return RunChunks<AllToAllPolicy>(c); }

}  // namespace shm
}  // namespace infiniccl
