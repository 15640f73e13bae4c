#include "backend/shm/shm_channel.h"

#include <algorithm>
#include <new>
#include <utility>

#include "backend/shm/shm_wait.h"
#include "core/call_record.h"
#include "core/cpu_budget.h"
#include "core/log.h"
#include "core/process_identity.h"
#include "device/spin_wait.h"
#include "mpi/mpi_error.h"
#include "mpi/mpi_exchange.h"
#include "mpi/mpi_thread.h"

namespace infiniccl {
namespace shm {

namespace {
constexpr size_t kLine = 64;
}  // namespace

// At the start of each rank's region: one counter per phase, each on its own
// cache line with the number of ranks sleeping on it; then the rank's
// identity and departure.
struct Channel::Control {
  // What the rank is about to do (the call record's numbers, core/
  // call_record.h), written before it posts its arrival at the call's first
  // chunk. In the arrival counter's line, so a peer that waited for the
  // arrival has it in its cache. Two, by the parity of the first chunk: a
  // rank writes one again only at a call whose first chunk every peer has
  // passed (two chunks on), so each peer compared it before.
  struct CallDesc {
    std::atomic<uint32_t> seq;
    std::atomic<int32_t> kind_op;  // kind << 16 | (op & 0xffff), op -1 if none
    std::atomic<uint64_t> count;
    std::atomic<int32_t> dtype;
    std::atomic<int32_t> root;  // -1 if none
  };
  struct alignas(kLine) Counter {
    std::atomic<uint32_t> value;
    std::atomic<uint32_t> sleepers;
    CallDesc call[2];  // the arrival counter's only
  };
  Counter phase[kNumPhases];
  alignas(kLine) std::atomic<int32_t> pid;
  // One-chunk AllReduce g: g + 1 when this rank's input is in its landing
  // area (and its result goes there), g when in its stage (MarkInput);
  // written before the rank posts its arrival.
  std::atomic<uint32_t> input_landed;
  std::atomic<uint64_t> start_time;  // with pid and pid_ns: its ProcessIdentity
  std::atomic<uint64_t> pid_ns;
  std::atomic<uint32_t> left;  // 0, or why the rank left (Leave)
};

namespace {
// A region: the control lines, stage 0, stage 1 (stage_bytes_ each), the
// landing area (kStageBytes), and with rings the point-to-point area: the
// bell's line, then one ring per destination (its head's line, its tail's
// line, its slots).
constexpr size_t kControlBytes = 4 * kLine;
struct alignas(kLine) Bell {
  std::atomic<uint32_t> value;
  std::atomic<uint32_t> sleepers;
};
struct alignas(kLine) RingCounter {
  std::atomic<uint32_t> value;
};
constexpr size_t kRingBytes =
    2 * kLine + size_t{Channel::kRingSlots} * Channel::kSlotBytes;
}  // namespace

Status Channel::Create(MPI_Comm comm, int /*rank*/, int /*size*/, std::vector<int> names,
                       bool devices, std::unique_ptr<Channel> *out, std::string *why) {
  MpiExchange ex(comm);
  return CreateWith(
      ex,
      [comm](size_t region, std::unique_ptr<NodeSegment> *seg, std::string *w) {
        return NodeSegment::Create(comm, region, 0, "shm", seg, w);
      },
      std::move(names), devices, /*rings=*/false, out, why);
}

Status Channel::Create(Exchange &ex, std::vector<int> names, bool devices,
                       std::unique_ptr<Channel> *out, std::string *why) {
  return CreateWith(
      ex,
      [&ex](size_t region, std::unique_ptr<NodeSegment> *seg, std::string *w) {
        return NodeSegment::CreateOn(ex, region, 0, "shm", seg, w);
      },
      std::move(names), devices, /*rings=*/true, out, why);
}

Status Channel::CreateWith(Exchange &ex, const MakeSegment &make, std::vector<int> names,
                           bool devices, bool rings, std::unique_ptr<Channel> *out,
                           std::string *why) {
  const int rank = ex.rank(), size = ex.size();
  static_assert(sizeof(Control) <= kControlBytes, "the control lines fit before the stages");
  static_assert(sizeof(Control::Counter) == kLine, "a counter and its descriptors: one line");
  out->reset();
  // Every rank's region has the same layout: the stages are large where
  // any rank drives a device.
  int64_t any = 0;
  INFINICCL_RETURN_IF_ERROR(ex.Max(devices ? 1 : 0, &any));
  const size_t stage = any != 0 ? kDeviceStageBytes : kStageBytes;
  std::unique_ptr<NodeSegment> segment;
  const size_t p2p = rings ? kLine + static_cast<size_t>(size) * kRingBytes : 0;
  INFINICCL_RETURN_IF_ERROR(
      make(kControlBytes + 2 * stage + kStageBytes + p2p, &segment, why));
  if (segment == nullptr) return Status::Ok();
  if (segment->node_size() != size) {
    *why = "the communicator's ranks are on more than one node";
    return Status::Ok();
  }
  std::unique_ptr<Channel> ch(new Channel());
  ch->rank_ = rank;
  ch->size_ = size;
  ch->stage_bytes_ = stage;
  ch->rings_ = rings;
  ch->names_ = std::move(names);
  ch->segment_ = std::move(segment);
  // Oversubscribed: more ranks on this node (this communicator's, or the
  // job's as its launcher counts them) than cores this process may use.
  // Waits then yield at once instead of spinning.
  std::string limit;
  const unsigned cores = UsableCores(&limit);
  const int on_node = std::max(size, mpi::LaunchersRanksOnNode());
  if (static_cast<unsigned>(on_node) > cores) {
    ch->spin_ = std::chrono::microseconds(0);
    INFINICCL_INFO("shared memory: %d ranks on this node and %u usable cores (%s): its "
                   "waits yield instead of spinning", on_node, cores, limit.c_str());
  } else {
    ch->spin_ = kSpin;
  }
  Control *mine = new (ch->segment_->region(ch->segment_->node_rank())) Control();
  const ProcessIdentity me = ThisProcess();
  ch->pid_ = me.pid;
  mine->start_time.store(me.start_time, std::memory_order_relaxed);
  mine->pid_ns.store(me.pid_ns, std::memory_order_relaxed);
  mine->pid.store(static_cast<int32_t>(me.pid), std::memory_order_release);
  if (rings) {
    // This rank's bell and the counters of its rings, all at zero.
    char *area = ch->P2pArea(rank);
    new (area) Bell{};
    for (int d = 0; d < size; ++d) {
      char *ring = area + kLine + static_cast<size_t>(d) * kRingBytes;
      new (ring) RingCounter{};
      new (ring + kLine) RingCounter{};
    }
  }
  // Every rank's control is constructed before any rank posts to one.
  INFINICCL_RETURN_IF_ERROR(ex.Barrier());
  *out = std::move(ch);
  return Status::Ok();
}

char *Channel::Region(int rank) const {
  return segment_->region(segment_->node_rank_of()[static_cast<size_t>(rank)]);
}

Channel::Control *Channel::ControlOf(int rank) const {
  return reinterpret_cast<Control *>(Region(rank));
}

char *Channel::Stage(int rank, uint32_t chunk, size_t at) const {
  return Region(rank) + kControlBytes + (chunk & 1u) * stage_bytes_ + at;
}

char *Channel::Landing(int rank) const {
  return Region(rank) + kControlBytes + 2 * stage_bytes_;
}

char *Channel::P2pArea(int rank) const { return Landing(rank) + kStageBytes; }

Channel::RingView Channel::Ring(int src, int dst) const {
  char *ring = P2pArea(src) + kLine + static_cast<size_t>(dst) * kRingBytes;
  return RingView{&reinterpret_cast<RingCounter *>(ring)->value,
                  &reinterpret_cast<RingCounter *>(ring + kLine)->value, ring + 2 * kLine};
}

uint32_t Channel::BellValue() const {
  return reinterpret_cast<Bell *>(P2pArea(rank_))->value.load(std::memory_order_seq_cst);
}

void Channel::RingBell(int rank) {
  Bell *b = reinterpret_cast<Bell *>(P2pArea(rank));
  b->value.fetch_add(1, std::memory_order_seq_cst);
  if (b->sleepers.load(std::memory_order_seq_cst) != 0) FutexWakeAll(&b->value);
}

Status Channel::WaitBell(uint32_t seen, const std::vector<int> &peers, bool any_source,
                         const CollArgs &a) {
  Bell *b = reinterpret_cast<Bell *>(P2pArea(rank_));
  const auto rung = [&] { return b->value.load(std::memory_order_acquire) != seen; };
  if (aborted_.load(std::memory_order_relaxed)) return CancelledStatus();
  if (SpinOnCore(rung, spin_) || SpinFor(rung, poll_)) return Status::Ok();
  auto checked = std::chrono::steady_clock::now();
  // A departed peer: a failure once the bell is still unrung after it (its
  // last writes came before it left, and rang the bell).
  const auto departed = [&]() -> Status {
    for (int r : peers) {
      if (r == rank_) continue;
      Status gone = Departed(r, a);
      if (!gone.ok()) return gone;
    }
    if (any_source && size_ > 1) {
      Status last;
      for (int r = 0; r < size_; ++r) {
        if (r == rank_) continue;
        last = Departed(r, a);
        if (last.ok()) return Status::Ok();
      }
      return last;
    }
    return Status::Ok();
  };
  const auto any_left = [&] {
    for (int r = 0; r < size_; ++r) {
      if (r != rank_ && ControlOf(r)->left.load(std::memory_order_acquire) != 0) return true;
    }
    return false;
  };
  for (;;) {
    b->sleepers.fetch_add(1, std::memory_order_seq_cst);
    if (b->value.load(std::memory_order_seq_cst) == seen) FutexWait(&b->value, seen);
    b->sleepers.fetch_sub(1, std::memory_order_seq_cst);
    if (rung()) return Status::Ok();
    if (aborted_.load(std::memory_order_relaxed)) return CancelledStatus();
    const auto now = std::chrono::steady_clock::now();
    if (any_left() || now - checked >= kPeerCheckEvery) {
      checked = now;
      Status gone = departed();
      if (!gone.ok() && !rung()) {
        MarkFailed(gone);
        return gone;
      }
    }
  }
}

void Channel::MarkInput(uint32_t chunk, bool landed) {
  ControlOf(rank_)->input_landed.store(landed ? chunk + 1 : chunk, std::memory_order_relaxed);
}

bool Channel::InputLanded(int rank, uint32_t chunk) const {
  return ControlOf(rank)->input_landed.load(std::memory_order_relaxed) == chunk + 1;
}

void Channel::Post(Phase phase, uint32_t value) {
  Control::Counter &c = ControlOf(rank_)->phase[phase];
  c.value.store(value, std::memory_order_seq_cst);
  if (c.sleepers.load(std::memory_order_seq_cst) != 0) FutexWakeAll(&c.value);
}

void Channel::PostAll(uint32_t value) {
  for (int p = 0; p < kNumPhases; ++p) {
    Control::Counter &c = ControlOf(rank_)->phase[p];
    if (!Reached(c.value.load(std::memory_order_relaxed), value)) {
      Post(static_cast<Phase>(p), value);
    }
  }
}

void Channel::Leave(uint32_t why) {
  // A child of fork() destroying its copy of the communicator has not left.
  if (segment_ == nullptr || static_cast<int>(getpid()) != pid_) return;
  Control *mine = ControlOf(rank_);
  uint32_t staying = 0;
  // After every post of this rank (same thread, or CommAbort's): a waiter
  // that sees the mark and then its target reached was served.
  mine->left.compare_exchange_strong(staying, why, std::memory_order_seq_cst);
  for (int p = 0; p < kNumPhases; ++p) FutexWakeAll(&mine->phase[p].value);
  // Peers waiting at their bells for this rank look at once.
  if (rings_) {
    for (int r = 0; r < size_; ++r) {
      if (r != rank_) FutexWakeAll(&reinterpret_cast<Bell *>(P2pArea(r))->value);
    }
  }
}

Status Channel::Departed(int rank, const CollArgs &a) const {
  const Control *peer = ControlOf(rank);
  const uint32_t left = peer->left.load(std::memory_order_acquire);
  if (left != 0) {
    return MakeStatus(infinicclRemoteError,
                      "rank %d left the communicator (%s) while rank %d waited for it in %s "
                      "over shared memory",
                      Name(rank),
                      left == kLeftAborted   ? "infinicclCommAbort"
                      : left == kLeftRevoked ? "infinicclCommRevoke"
                      : left == kLeftFailed  ? "it found another rank gone"
                                             : "infinicclCommDestroy",
                      Name(rank_), CollKindName(a.kind));
  }
  ProcessIdentity who;
  who.pid = peer->pid.load(std::memory_order_acquire);
  who.start_time = peer->start_time.load(std::memory_order_relaxed);
  who.pid_ns = peer->pid_ns.load(std::memory_order_relaxed);
  const char *how = GoneWords(Look(who));
  if (how == nullptr) return Status::Ok();
  return MakeStatus(infinicclRemoteError,
                    "rank %d (pid %d) %s while rank %d waited for it in %s over shared memory",
                    Name(rank), who.pid, how, Name(rank_), CollKindName(a.kind));
}

void Channel::GoneRanks(std::vector<int> *out) const {
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    const Control *peer = ControlOf(r);
    ProcessIdentity who;
    who.pid = peer->pid.load(std::memory_order_acquire);
    who.start_time = peer->start_time.load(std::memory_order_relaxed);
    who.pid_ns = peer->pid_ns.load(std::memory_order_relaxed);
    if (GoneWords(Look(who)) != nullptr) out->push_back(Name(r));
  }
}

void Channel::MarkFailed(const Status &why) {
  {
    std::lock_guard<std::mutex> lock(failed_mutex_);
    if (failed_why_.empty()) failed_why_ = why.message();
  }
  failed_.store(true, std::memory_order_release);
  Leave(kLeftFailed);
}

Status Channel::FailedError() const {
  std::lock_guard<std::mutex> lock(failed_mutex_);
  return MakeStatus(infinicclRemoteError,
                    "an earlier call over shared memory found a rank gone (%s): the "
                    "communicator's ranks no longer agree on where their calls stand; shrink "
                    "it (infinicclCommShrink) or destroy it",
                    failed_why_.c_str());
}

Status Channel::CancelledStatus() const {
  (void)aborted_.load(std::memory_order_acquire);  // the why stored before it
  if (cancelled_why_.load(std::memory_order_relaxed) == kLeftRevoked) {
    return Status(infinicclRemoteError,
                  "the communicator was revoked (infinicclCommRevoke) while this rank waited "
                  "in shared memory; shrink it or destroy it");
  }
  return Status(infinicclInvalidUsage, "the communicator was aborted (infinicclCommAbort)");
}

Status Channel::WaitOne(int rank, Phase phase, uint32_t target, const CollArgs &a) {
  Control *peer = ControlOf(rank);
  Control::Counter &c = peer->phase[phase];
  const auto reached = [&] { return Reached(c.value.load(std::memory_order_acquire), target); };
  // Checked before each wait, not only once one sleeps: a call whose peers
  // are always ahead would otherwise run to its end after an abort.
  if (aborted_.load(std::memory_order_relaxed)) return CancelledStatus();
  if (SpinOnCore(reached, spin_) || SpinFor(reached, poll_)) return Status::Ok();
  auto checked = std::chrono::steady_clock::now();
  for (;;) {
    c.sleepers.fetch_add(1, std::memory_order_seq_cst);
    const uint32_t seen = c.value.load(std::memory_order_seq_cst);
    if (!Reached(seen, target) && peer->left.load(std::memory_order_seq_cst) == 0) {
      FutexWait(&c.value, seen);
    }
    c.sleepers.fetch_sub(1, std::memory_order_seq_cst);
    if (reached()) return Status::Ok();
    if (aborted_.load(std::memory_order_relaxed)) return CancelledStatus();
    const auto now = std::chrono::steady_clock::now();
    const bool look = peer->left.load(std::memory_order_acquire) != 0 ||
                      now - checked >= kPeerCheckEvery;
    if (look) {
      checked = now;
      Status gone = Departed(rank, a);
      // Its last posts came before it left: the target may be among them.
      if (!gone.ok() && !reached()) {
        MarkFailed(gone);
        return gone;
      }
    }
  }
}

Status Channel::WaitAll(Phase phase, uint32_t target, const CollArgs &a) {
  for (int r = 0; r < size_; ++r) {
    if (r != rank_) INFINICCL_RETURN_IF_ERROR(WaitOne(r, phase, target, a));
  }
  return Status::Ok();
}

void Channel::Describe(const CollArgs &a, uint32_t first) {
  int64_t rec[kNumCallFields];
  MakeCallRecord(a, ++call_seq_, true, rec);
  Described &d = described_;
  d.seq = call_seq_;
  d.kind_op = static_cast<int32_t>((rec[kOperation] << 16) | (rec[kOp] & 0xffff));
  d.dtype = static_cast<int32_t>(rec[kDtype]);
  d.root = static_cast<int32_t>(rec[kRoot]);
  d.count = static_cast<uint64_t>(rec[kCount]);
  Control::CallDesc &mine = ControlOf(rank_)->phase[kArrived].call[first & 1u];
  mine.seq.store(d.seq, std::memory_order_relaxed);
  mine.kind_op.store(d.kind_op, std::memory_order_relaxed);
  mine.count.store(d.count, std::memory_order_relaxed);
  mine.dtype.store(d.dtype, std::memory_order_relaxed);
  mine.root.store(d.root, std::memory_order_relaxed);
}

Status Channel::Meet(const CollArgs &a, uint32_t first) {
  INFINICCL_RETURN_IF_ERROR(WaitAll(kArrived, first + 1, a));
  const Described &d = described_;
  bool same = true;
  for (int j = 0; same && j < size_; ++j) {
    if (j == rank_) continue;
    const Control::CallDesc &x = ControlOf(j)->phase[kArrived].call[first & 1u];
    same = x.seq.load(std::memory_order_relaxed) == d.seq &&
           x.kind_op.load(std::memory_order_relaxed) == d.kind_op &&
           x.count.load(std::memory_order_relaxed) == d.count &&
           x.dtype.load(std::memory_order_relaxed) == d.dtype &&
           x.root.load(std::memory_order_relaxed) == d.root;
  }
  if (same) return Status::Ok();
  // Every rank reads the same descriptors, so every rank refuses the call,
  // in INFINICCL_CHECK's words. Nothing was read from another rank, and the
  // counters go on from the first chunk alike on every rank.
  std::vector<int64_t> all(static_cast<size_t>(size_) * kNumCallFields);
  for (int j = 0; j < size_; ++j) {
    const Control::CallDesc &x = ControlOf(j)->phase[kArrived].call[first & 1u];
    int64_t *rec = &all[static_cast<size_t>(j) * kNumCallFields];
    const int32_t kind_op = x.kind_op.load(std::memory_order_relaxed);
    rec[kOperation] = kind_op >> 16;
    rec[kSequence] = x.seq.load(std::memory_order_relaxed);
    rec[kArguments] = 1;
    rec[kCount] = static_cast<int64_t>(x.count.load(std::memory_order_relaxed));
    rec[kDtype] = x.dtype.load(std::memory_order_relaxed);
    rec[kOp] = static_cast<int16_t>(kind_op & 0xffff);
    // A root in the message is named as the ranks are (Name).
    const int32_t root = x.root.load(std::memory_order_relaxed);
    rec[kRoot] = root >= 0 && root < size_ ? Name(root) : root;
  }
  next_chunk_ = first + 1;
  PostAll(first + 1);
  return MakeStatus(infinicclInvalidUsage,
                    "shared memory: %s (this is rank %d; the call was not run on any rank)",
                    FirstDifference(all.data(), size_, names_.empty() ? nullptr : &names_).c_str(),
                    Name(rank_));
}

}  // namespace shm
}  // namespace infiniccl
