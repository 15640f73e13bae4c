#include "backend/shm/shm_p2p.h"

#include <algorithm>
#include <cstring>

#include "core/dtype.h"

namespace infiniccl {
namespace shm {

namespace {
// A header slot: this, then payload up to the slot's end.
struct Header {
  uint64_t bytes;  // the message's payload
  int32_t tag;
  uint32_t seq;  // messages written on this ring before it (for debugging)
};
constexpr size_t kHeaderBytes = 64;
static_assert(sizeof(Header) <= kHeaderBytes, "the header fits its line");
constexpr size_t kFirstPayload = Channel::kSlotBytes - kHeaderBytes;

char *SlotOf(const Channel::RingView &r, uint32_t n) {
  return r.slots + static_cast<size_t>(n % Channel::kRingSlots) * Channel::kSlotBytes;
}
int PeerOf(const P2p::Op &op) { return op.args.root; }
}  // namespace

P2p::P2p(Channel &channel) : ch_(channel), incoming_(static_cast<size_t>(channel.size())) {}

void P2p::Finish(Op &op, int source, size_t message_bytes) {
  if (message_bytes > op.bytes) {
    op.status = MakeStatus(infinicclRemoteError,
                           "Recv over shared memory: the message from rank %d (tag %d) has "
                           "%zu bytes and the receive %zu; it was truncated",
                           source, op.args.tag, message_bytes, op.bytes);
  }
  if (op.args.source != nullptr) *op.args.source = source;
  op.done = true;
}

void P2p::Claim(Op &op) {
  const int peer = PeerOf(op);
  for (const auto &u : unexpected_) {
    if (u->claimed != nullptr || u->tag != op.args.tag) continue;
    if (peer != kAnySource && peer != u->source) continue;
    u->claimed = &op;
    op.started = true;
    if (u->complete) Deliver(u.get());
    return;
  }
}

void P2p::Deliver(Unexpected *u) {
  Op &op = *u->claimed;
  std::memcpy(op.buf, u->data.data(), std::min(op.bytes, u->data.size()));
  Finish(op, ch_.Name(u->source), u->data.size());
  for (auto it = unexpected_.begin(); it != unexpected_.end(); ++it) {
    if (it->get() == u) {
      unexpected_.erase(it);
      break;
    }
  }
}

bool P2p::Send(Op &op) {
  const int dst = PeerOf(op);
  const Channel::RingView r = ch_.Ring(ch_.rank(), dst);
  bool moved = false;
  while (!op.done) {
    const uint32_t head = r.head->load(std::memory_order_relaxed);
    const uint32_t tail = r.tail->load(std::memory_order_acquire);
    if (head - tail >= Channel::kRingSlots) break;
    char *slot = SlotOf(r, head);
    size_t n;
    if (!op.started) {
      Header h{op.bytes, op.args.tag, head};
      std::memcpy(slot, &h, sizeof h);
      n = std::min(op.bytes, kFirstPayload);
      std::memcpy(slot + kHeaderBytes, op.buf, n);
      op.started = true;
    } else {
      n = std::min(op.bytes - op.moved, Channel::kSlotBytes);
      std::memcpy(slot, op.buf + op.moved, n);
    }
    op.moved += n;
    r.head->store(head + 1, std::memory_order_release);
    moved = true;
    if (op.moved == op.bytes) op.done = true;
  }
  if (moved) ch_.RingBell(dst);
  return moved;
}

bool P2p::Drain(int src, std::vector<std::unique_ptr<Op>> &ops) {
  const Channel::RingView r = ch_.Ring(src, ch_.rank());
  Incoming &in = incoming_[static_cast<size_t>(src)];
  bool moved = false;
  for (;;) {
    const uint32_t tail = r.tail->load(std::memory_order_relaxed);
    const uint32_t head = r.head->load(std::memory_order_acquire);
    if (tail == head) break;
    const char *slot = SlotOf(r, tail);
    const char *payload = slot;
    size_t n;
    if (!in.active) {
      Header h;
      std::memcpy(&h, slot, sizeof h);
      in = Incoming{};
      in.active = true;
      in.bytes = static_cast<size_t>(h.bytes);
      // The first receive posted that matches, else the unexpected queue.
      for (const auto &op : ops) {
        if (op->send || op->started || op->done || op->args.tag != h.tag) continue;
        if (PeerOf(*op) != kAnySource && PeerOf(*op) != src) continue;
        in.into = op.get();
        op->started = true;
        break;
      }
      if (in.into == nullptr) {
        unexpected_.push_back(std::make_unique<Unexpected>());
        in.queued = unexpected_.back().get();
        in.queued->source = src;
        in.queued->tag = h.tag;
        in.queued->data.resize(in.bytes);
      }
      payload = slot + kHeaderBytes;
      n = std::min(in.bytes, kFirstPayload);
    } else {
      n = std::min(in.bytes - in.got, Channel::kSlotBytes);
    }
    if (in.into != nullptr) {
      Op &o = *in.into;
      if (in.got < o.bytes) std::memcpy(o.buf + in.got, payload, std::min(n, o.bytes - in.got));
    } else if (in.queued != nullptr) {
      std::memcpy(in.queued->data.data() + in.got, payload, n);
    }
    in.got += n;
    r.tail->store(tail + 1, std::memory_order_release);
    moved = true;
    if (in.got == in.bytes) {
      if (in.into != nullptr) {
        Finish(*in.into, ch_.Name(src), in.bytes);
      } else if (in.queued != nullptr) {
        in.queued->complete = true;
        if (in.queued->claimed != nullptr) Deliver(in.queued);
      }
      in = Incoming{};
    }
  }
  if (moved) ch_.RingBell(src);
  return moved;
}

Status P2p::Complete(std::vector<std::unique_ptr<Op>> &ops,
                     const std::function<void(size_t)> &waiting, std::vector<bool> *ok) {
  std::lock_guard<std::mutex> lock(mutex_);
  ok->assign(ops.size(), false);
  Status failure = ch_.failed() ? ch_.FailedError() : Status::Ok();
  if (failure.ok()) {
    for (auto &op : ops) {
      if (!op->send && !op->done && !op->started) Claim(*op);
    }
  }
  const int size = ch_.size();
  size_t waited_for = ops.size();
  std::vector<int> peers;
  while (failure.ok()) {
    const uint32_t seen = ch_.BellValue();
    bool moved = false;
    // Each destination's sends in the order posted (its ring is FIFO).
    for (int dst = 0; dst < size; ++dst) {
      for (auto &op : ops) {
        if (!op->send || op->done || PeerOf(*op) != dst) continue;
        moved |= Send(*op);
        break;
      }
    }
    for (int src = 0; src < size; ++src) moved |= Drain(src, ops);
    size_t first = ops.size();
    for (size_t k = 0; k < ops.size() && first == ops.size(); ++k) {
      if (!ops[k]->done) first = k;
    }
    if (first == ops.size()) break;
    if (moved) continue;
    if (first != waited_for) {
      waiting(first);
      waited_for = first;
    }
    peers.clear();
    bool any_source = false;
    for (const auto &op : ops) {
      if (op->done) continue;
      if (PeerOf(*op) == kAnySource) {
        any_source = true;
      } else {
        peers.push_back(PeerOf(*op));
      }
    }
    failure = ch_.WaitBell(seen, peers, any_source, ops[first]->args);
  }
  if (!failure.ok()) {
    // What is left fails; nothing refers to these operations any more (a
    // message half read into one is dropped).
    for (auto &in : incoming_) {
      for (const auto &op : ops) {
        if (in.into == op.get()) in.into = nullptr;
      }
    }
    for (const auto &u : unexpected_) {
      for (const auto &op : ops) {
        if (u->claimed == op.get()) u->claimed = nullptr;
      }
    }
    for (auto &op : ops) {
      if (!op->done) {
        op->done = true;
        op->status = failure;
      }
    }
  }
  Status first;
  for (size_t k = 0; k < ops.size(); ++k) {
    (*ok)[k] = ops[k]->status.ok();
    if (!ops[k]->status.ok() && first.ok()) first = ops[k]->status;
  }
  return first;
}

}  // namespace shm

Status ShmP2pBatch::Post(const CollArgs &a, const void *buf) {
  auto op = std::make_unique<shm::P2p::Op>();
  op->args = a;
  op->send = a.kind == CollKind::kSend;
  op->buf = static_cast<char *>(const_cast<void *>(buf));
  op->bytes = a.count * DataTypeSize(a.dtype);
  ops_.push_back(std::move(op));
  return Status::Ok();
}

}  // namespace infiniccl
