#include "comm/inflight.h"

namespace infiniccl {

bool InFlight::Read(Snapshot *out) const {
  const uint64_t t1 = token.load(std::memory_order_acquire);
  if (t1 == 0) return false;
  Snapshot s;
  s.token = t1;
  s.seq = seq.load(std::memory_order_relaxed);
  s.count = count.load(std::memory_order_relaxed);
  s.kind = static_cast<CollKind>(kind.load(std::memory_order_relaxed));
  s.dtype = static_cast<infinicclDataType_t>(dtype.load(std::memory_order_relaxed));
  s.op = static_cast<infinicclRedOp_t>(op.load(std::memory_order_relaxed));
  s.root = root.load(std::memory_order_relaxed);
  s.path = static_cast<Path>(path.load(std::memory_order_relaxed));
  std::atomic_thread_fence(std::memory_order_acquire);
  if (token.load(std::memory_order_relaxed) != t1) return false;
  *out = s;
  return true;
}

}  // namespace infiniccl
