// ReduceScatter: each chunk holds the same range of every block; rank j
// reduces block j over every rank's copy, straight into its recvbuff when
// that is host memory.
#include "backend/shm/coll/collectives.h"
#include "core/reduce.h"

namespace infiniccl {
namespace shm {

namespace {

struct ReduceScatterPolicy {
  explicit ReduceScatterPolicy(const Call &c)
      : cap(c.ch.ChunkBytes(c.a.count * c.elem * static_cast<size_t>(c.ch.size()), c.Staged()) /
            c.elem / static_cast<size_t>(c.ch.size())) {}
  size_t cap;  // elements of each block per chunk: the blocks share a stage
  Status In(Call &c, const Chunk &k) {
    char *mine = c.ch.Stage(c.ch.rank(), k.g);
    for (int j = 0; j < c.ch.size(); ++j) {
      if (j == c.ch.rank() && !c.send_dev) continue;  // reduced from sendbuff
      INFINICCL_RETURN_IF_ERROR(c.copies.Copy(mine + static_cast<size_t>(j) * cap * c.elem,
                                              c.in + (static_cast<size_t>(j) * c.a.count + k.at) * c.elem,
                                              k.n * c.elem, false, c.send_dev));
    }
    return Status::Ok();
  }
  bool Posts() const { return true; }
  Await Waits() const { return Await::kAll; }
  Status Out(Call &c, const Chunk &k) {
    const int me = c.ch.rank();
    const size_t block = static_cast<size_t>(me) * cap * c.elem;
    for (int j = 0; j < c.ch.size(); ++j) {
      c.scratch.sources[static_cast<size_t>(j)] =
          j == me && !c.send_dev ? c.in + (static_cast<size_t>(me) * c.a.count + k.at) * c.elem
                                 : c.ch.Stage(j, k.g) + block;
    }
    char *dst = c.recv_dev ? c.ch.Stage(me, k.g) + block : c.out + k.at * c.elem;
    ReduceInto(dst, c.scratch.sources.data(), c.ch.size(), k.n, c.a.dtype, c.a.op, c.divisor);
    return c.copies.Copy(c.out + k.at * c.elem, dst, k.n * c.elem, c.recv_dev, false);
  }
};

}  // namespace

Status ReduceScatter(Call &c) { return RunChunks<ReduceScatterPolicy>(c); }

}  // namespace shm
}  // namespace infiniccl
