// InFlight: what one communicator (or its progress engine) is doing right
// now, readable by the watchdog thread without locks or MPI calls.
//
// The calling thread writes the description first and then publishes a
// non-zero `token` (release); the end of the call stores 0. The watchdog
// reads token, description, token again, and trusts the description only
// when both tokens agree (a seqlock). That keeps the per-call cost to a few
// relaxed stores: no clock read, no allocation (the watchdog timestamps a
// call when it first sees its token).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "core/coll_args.h"

namespace infiniccl {

struct InFlight {
  std::atomic<uint64_t> token{0};  // 0: idle; otherwise unique per call
  std::atomic<uint64_t> seq{0};    // the collective's sequence number (0 for Send/Recv)
  std::atomic<uint64_t> count{0};
  std::atomic<int> kind{0};
  std::atomic<int> dtype{0};
  std::atomic<int> op{0};
  std::atomic<int> root{0};  // root, or the peer of Send/Recv (kAnySource)
  std::atomic<int> tag{0};   // Send/Recv's tag
  std::atomic<int> path{0};

  // A consistent copy, or false when idle or the call changed under us.
  struct Snapshot {
    uint64_t token, seq, count;
    CollKind kind;
    infinicclDataType_t dtype;
    infinicclRedOp_t op;
    int root;
    int tag;
    Path path;
  };
  bool Read(Snapshot *out) const;

  // Publishes call `call_seq` described by `a` under `new_token` (the
  // seqlock writer: idle while the description changes). Raw bits of dtype
  // and op: a call is published before validation, so a C caller's
  // out-of-range value may be here, which the enum type cannot hold.
  void Publish(const CollArgs &a, uint64_t call_seq, uint64_t new_token);
  void End() { token.store(0, std::memory_order_release); }

  void SetPath(Path p) { path.store(static_cast<int>(p), std::memory_order_relaxed); }
};

}  // namespace infiniccl
