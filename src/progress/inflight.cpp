#include "progress/inflight.h"

#include <cstring>

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
  s.tag = tag.load(std::memory_order_relaxed);
  s.path = static_cast<Path>(path.load(std::memory_order_relaxed));
  std::atomic_thread_fence(std::memory_order_acquire);
  if (token.load(std::memory_order_relaxed) != t1) return false;
  *out = s;
  return true;
}

void InFlight::Publish(const CollArgs &a, uint64_t call_seq, uint64_t new_token) {
  int dtype_bits, op_bits;
  std::memcpy(&dtype_bits, &a.dtype, sizeof dtype_bits);
  std::memcpy(&op_bits, &a.op, sizeof op_bits);
  token.store(0, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  seq.store(call_seq, std::memory_order_relaxed);
  count.store(a.count, std::memory_order_relaxed);
  kind.store(static_cast<int>(a.kind), std::memory_order_relaxed);
  dtype.store(dtype_bits, std::memory_order_relaxed);
  op.store(op_bits, std::memory_order_relaxed);
  root.store(a.root, std::memory_order_relaxed);
  tag.store(a.tag, std::memory_order_relaxed);
  path.store(static_cast<int>(Path::kNone), std::memory_order_relaxed);
  token.store(new_token, std::memory_order_release);
}

}  // namespace infiniccl
