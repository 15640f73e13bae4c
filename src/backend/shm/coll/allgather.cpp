// AllGather: each rank copies its block in; every rank copies the others'
// out, and its own from sendbuff.
#include "backend/shm/coll/collectives.h"

namespace infiniccl {
namespace shm {

namespace {

struct AllGatherPolicy : WholeStagePolicy {
  using WholeStagePolicy::WholeStagePolicy;
  Status In(Call &c, const Chunk &k) {
    return CopyInput(c, k);
  }
  bool Posts() const { return true; }
  Await Waits() const { return Await::kAll; }
  Status Out(Call &c, const Chunk &k) {
    const size_t bytes = k.n * c.elem;
    const auto block = [&](int j) {
      return c.out + (static_cast<size_t>(j) * c.a.count + k.at) * c.elem;
    };
    // The own block after the others' descriptors are compared: a refused
    // call writes nothing.
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

Status AllGather(Call &c) { return RunChunks<AllGatherPolicy>(c); }

}  // namespace shm
}  // namespace infiniccl
