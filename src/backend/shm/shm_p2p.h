// Send/Recv through the node's shared memory, on a communicator made
// without MPI (its channel has the point-to-point area: shm_channel.h).
//
// Each ordered pair of ranks (src, dst) has a ring of fixed-size slots in
// src's region: src alone writes it (head), dst alone reads it (tail). A
// message is a header slot (its bytes, its tag, and the first payload
// bytes) followed by as many payload slots as it needs, so a message of any
// size goes through a bounded ring. A writer or reader that moved a ring
// rings the peer's bell; a rank with nothing to do waits on its own bell
// (Channel::WaitBell: the collectives' spin, poll and futex, with CommAbort,
// CommRevoke and departed peers ending the wait).
//
// The receiver never leaves a message in its ring: the message at a ring's
// front goes into the first posted receive that matches it (its source or
// INFINICCL_ANY_SOURCE, its tag), else into the unexpected queue (a host
// copy), which later receives look in first, in arrival order. So
// messages of one tag between two ranks match in the order sent, and a
// receive for another tag or source never blocks a ring.
//
// A P2p serves one communicator, on one thread at a time. Operations come
// in batches: one blocking Send or Recv, or a group's every Send and Recv
// (ShmP2pBatch), which Complete progresses round-robin (each send as far as
// its ring has room, each ring drained) until every one is done, sleeping
// on the bell only when a round moved nothing. A receive shorter than its
// message gets what fits and fails (RemoteError, as MPI_ERR_TRUNCATE
// through MPI); the rest of the message is dropped.
// docs/architecture/shared-memory.md.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "backend/backend.h"
#include "backend/shm/shm_channel.h"
#include "core/coll_args.h"
#include "core/status.h"

namespace infiniccl {
namespace shm {

class P2p {
 public:
  explicit P2p(Channel &channel);
  P2p(const P2p &) = delete;
  P2p &operator=(const P2p &) = delete;

  // One operation of a batch: `a` a validated Send or Recv of host buffer
  // `buf` (a.count elements).
  struct Op {
    CollArgs args;
    char *buf = nullptr;
    size_t bytes = 0;
    bool send = false;
    // A send: its header is in the ring; `moved` payload bytes written. A
    // receive: matched to a message (`moved` payload bytes read of it).
    bool started = false;
    size_t moved = 0;
    bool done = false;
    Status status;
  };
  // Runs `ops` (posted in this order) until every one is done; `ok[k]`
  // says whether ops[k] succeeded; `waiting(k)` before the first wait for
  // ops[k]. Returns the first failure.
  Status Complete(std::vector<std::unique_ptr<Op>> &ops,
                  const std::function<void(size_t)> &waiting, std::vector<bool> *ok);

 private:
  // A message that arrived before a receive for it.
  struct Unexpected {
    int source, tag;
    std::vector<char> data;
    bool complete = false;  // every byte arrived
    Op *claimed = nullptr;  // the receive it goes to once complete
  };
  // The message at the front of the ring from one source, read so far.
  struct Incoming {
    bool active = false;
    size_t bytes = 0, got = 0;  // of its payload
    Op *into = nullptr;         // a receive, or
    Unexpected *queued = nullptr;  // the unexpected queue's entry, or neither: dropped
  };
  // Receives whose message is in the queue: bound at once.
  void Claim(Op &op);
  // Copies a complete claimed entry into its receive and drops it.
  void Deliver(Unexpected *u);
  bool Send(Op &op);
  bool Drain(int src, std::vector<std::unique_ptr<Op>> &ops);
  static void Finish(Op &op, int source, size_t message_bytes);

  Channel &ch_;
  std::mutex mutex_;
  std::vector<Incoming> incoming_;  // by source
  std::deque<std::unique_ptr<Unexpected>> unexpected_;  // in arrival order
};

}  // namespace shm

// A group's Send/Recv on one communicator through its P2p (GroupP2p).
class ShmP2pBatch final : public P2pBatch {
 public:
  explicit ShmP2pBatch(shm::P2p &p2p) : p2p_(p2p) {}
  Status Post(const CollArgs &a, const void *buf) override;
  size_t ops() const override { return ops_.size(); }
  Status Complete(const std::function<void(size_t)> &waiting,
                  std::vector<bool> *ok) override {
    return p2p_.Complete(ops_, waiting, ok);
  }

 private:
  shm::P2p &p2p_;
  std::vector<std::unique_ptr<shm::P2p::Op>> ops_;
};

}  // namespace infiniccl
