#include "backend/shm/shm_backend.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <ctime>
#include <new>
#include <string>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "core/call_record.h"
#include "core/config.h"
#include "core/cpu_budget.h"
#include "core/dtype.h"
#include "core/log.h"
#include "core/process_identity.h"
#include "core/reduce.h"
#include "device/spin_wait.h"
#include "mpi/mpi_error.h"
#include "mpi/mpi_thread.h"

namespace infiniccl {

namespace {

constexpr size_t kLine = 64;
constexpr size_t kPage = 4096;
// How a rank waits for another, in three steps:
// - it spins, never leaving its core, for kSpin: a rank that shares its core
//   with another busy process keeps its time slice, so a hand-over from a
//   rank running on another core costs no scheduling. Skipped when the
//   node's ranks outnumber its cores: the rank waited for may need this core.
// - it polls, yielding the core between polls, up to kPollBeforeSleep: it
//   stays runnable, so it is back within a time slice, while the rank it
//   waits for gets the core whenever it needs it (four ranks on two cores).
// - it sleeps on the counter's futex, woken by the post (a long wait: a
//   rank still computing, or one that skipped the call).
constexpr std::chrono::microseconds kSpin{50};
constexpr std::chrono::microseconds kPollBeforeSleep{1000};

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// True once done() held within `limit`, without leaving the core.
template <class Done>
bool SpinOnCore(Done done, std::chrono::microseconds limit) {
  if (limit.count() <= 0) return done();
  const auto until = std::chrono::steady_clock::now() + limit;
  for (unsigned polls = 1;; ++polls) {
    if (done()) return true;
    CpuRelax();
    if ((polls & 63) == 0 && std::chrono::steady_clock::now() >= until) return done();
  }
}
// A sleeping waiter wakes at least this often to look for CommAbort and for
// peers that left (their flag in the segment); a peer's process is looked
// up in /proc every kPeerCheckEvery. A departure is seen within
// kPeerCheckEvery + kSleepSliceNs (60 ms), a flag at once (the leaving rank
// wakes the sleepers).
constexpr long kSleepSliceNs = 10 * 1000 * 1000;
constexpr std::chrono::milliseconds kPeerCheckEvery{50};

bool Reached(uint32_t value, uint32_t target) {
  return static_cast<int32_t>(value - target) >= 0;
}

void FutexWait(std::atomic<uint32_t> *word, uint32_t seen) {
  timespec slice{0, kSleepSliceNs};
  // Not FUTEX_PRIVATE: the word is in memory shared between processes.
  syscall(SYS_futex, reinterpret_cast<uint32_t *>(word), FUTEX_WAIT, seen, &slice, nullptr, 0);
}

void FutexWakeAll(std::atomic<uint32_t> *word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t *>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr,
          0);
}

// The copies of one phase: memcpy between host buffers, the device runtime's
// copies on the call's stream otherwise, all finished by Finish().
class Copies {
 public:
  Copies(DeviceRuntime *device, void *stream, ShmBackend::CopyCounts *counts)
      : device_(device), stream_(stream), counts_(counts) {}
  Status Copy(void *dst, const void *src, size_t bytes, bool dst_dev, bool src_dev) {
    if (bytes == 0 || dst == src) return Status::Ok();
    if (!dst_dev && !src_dev) {
      std::memcpy(dst, src, bytes);
      return Status::Ok();
    }
    const CopyKind kind = dst_dev ? (src_dev ? CopyKind::kDeviceToDevice : CopyKind::kHostToDevice)
                                  : CopyKind::kDeviceToHost;
    if (counts_ != nullptr && kind == CopyKind::kDeviceToHost) {
      ++counts_->d2h;
      counts_->d2h_bytes += bytes;
    } else if (counts_ != nullptr && kind == CopyKind::kHostToDevice) {
      ++counts_->h2d;
      counts_->h2d_bytes += bytes;
    }
    pending_ = true;
    return device_->MemcpyAsync(dst, src, bytes, kind, stream_);
  }
  Status Finish() {
    if (!pending_) return Status::Ok();
    pending_ = false;
    return device_->StreamSynchronize(stream_);
  }

 private:
  DeviceRuntime *device_;
  void *stream_;
  ShmBackend::CopyCounts *counts_;
  bool pending_ = false;
};

}  // namespace

// At the start of each rank's region: one counter per phase, each on its own
// cache line with the number of ranks sleeping on it; then the rank's
// identity and departure.
struct ShmBackend::Control {
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
  // area (and its result goes there), g when in its stage; written before
  // the rank posts its arrival.
  std::atomic<uint32_t> landed;
  std::atomic<uint64_t> start_time;  // with pid and pid_ns: its ProcessIdentity
  std::atomic<uint64_t> pid_ns;
  std::atomic<uint32_t> left;        // 0, or why the rank left (Leave)
};

namespace {
constexpr size_t kControlBytes = 4 * kLine;
}  // namespace

Status ShmBackend::Create(MPI_Comm comm, int rank, int size, std::unique_ptr<ShmBackend> *out,
                          std::string *why) {
  static_assert(sizeof(Control) <= kControlBytes, "the control lines fit before the stages");
  static_assert(sizeof(Control::Counter) == kLine, "a counter and its descriptors: one line");
  out->reset();
  std::unique_ptr<NodeSegment> segment;
  INFINICCL_RETURN_IF_ERROR(NodeSegment::Create(comm, kControlBytes + 3 * kStageBytes, 0, "shm",
                                                &segment, why));
  if (segment == nullptr) return Status::Ok();
  if (segment->node_size() != size) {
    *why = "the communicator's ranks are on more than one node";
    return Status::Ok();
  }
  std::unique_ptr<ShmBackend> b(new ShmBackend());
  b->rank_ = rank;
  b->size_ = size;
  b->segment_ = std::move(segment);
  b->sources_.resize(static_cast<size_t>(size));
  b->landed_.resize(static_cast<size_t>(size));
  // Oversubscribed: more ranks on this node (this communicator's, or the
  // job's as its launcher counts them) than cores this process may use.
  // Waits then yield at once instead of spinning.
  std::string limit;
  const unsigned cores = UsableCores(&limit);
  const int on_node = std::max(size, mpi::LaunchersRanksOnNode());
  if (static_cast<unsigned>(on_node) > cores) {
    b->spin_ = std::chrono::microseconds(0);
    INFINICCL_INFO("shared memory: %d ranks on this node and %u usable cores (%s): its "
                   "waits yield instead of spinning", on_node, cores, limit.c_str());
  } else {
    b->spin_ = kSpin;
  }
  Control *mine = new (b->segment_->region(b->segment_->node_rank())) Control();
  const ProcessIdentity me = ThisProcess();
  b->pid_ = me.pid;
  mine->start_time.store(me.start_time, std::memory_order_relaxed);
  mine->pid_ns.store(me.pid_ns, std::memory_order_relaxed);
  mine->pid.store(static_cast<int32_t>(me.pid), std::memory_order_release);
  // Every rank's control is constructed before any rank posts to one.
  INFINICCL_RETURN_IF_ERROR(MpiCheck(MPI_Barrier(comm), "MPI_Barrier"));
  *out = std::move(b);
  return Status::Ok();
}

ShmBackend::Control *ShmBackend::ControlOf(int rank) const {
  return reinterpret_cast<Control *>(
      segment_->region(segment_->node_rank_of()[static_cast<size_t>(rank)]));
}

char *ShmBackend::Stage(int rank, uint32_t chunk, size_t at) const {
  return segment_->region(segment_->node_rank_of()[static_cast<size_t>(rank)]) +
         kControlBytes + (chunk & 1u) * kStageBytes + at;
}

char *ShmBackend::Landing(int rank) const {
  return segment_->region(segment_->node_rank_of()[static_cast<size_t>(rank)]) +
         kControlBytes + 2 * kStageBytes;
}

char *ShmBackend::InputOf(int rank, uint32_t chunk, size_t window, bool landed) const {
  return landed ? Landing(rank) : Stage(rank, chunk, window);
}

size_t ShmBackend::Window(size_t bytes, uint32_t chunk) {
  if (bytes < kRotateFromBytes || bytes > kRotateToBytes) return 0;
  const size_t width = (bytes + kPage - 1) / kPage * kPage;
  return (chunk >> 1) % (kStageBytes / width) * width;
}

void ShmBackend::Post(Phase phase, uint32_t value) {
  Control::Counter &c = ControlOf(rank_)->phase[phase];
  c.value.store(value, std::memory_order_seq_cst);
  if (c.sleepers.load(std::memory_order_seq_cst) != 0) FutexWakeAll(&c.value);
}

void ShmBackend::PostAll(uint32_t value) {
  for (int p = 0; p < kNumPhases; ++p) {
    Control::Counter &c = ControlOf(rank_)->phase[p];
    if (!Reached(c.value.load(std::memory_order_relaxed), value)) {
      Post(static_cast<Phase>(p), value);
    }
  }
}

void ShmBackend::Leave(uint32_t why) {
  // A child of fork() destroying its copy of the communicator has not left.
  if (segment_ == nullptr || static_cast<int>(getpid()) != pid_) return;
  Control *mine = ControlOf(rank_);
  uint32_t staying = 0;
  // After every post of this rank (same thread, or CommAbort's): a waiter
  // that sees the flag and then its target reached was served.
  mine->left.compare_exchange_strong(staying, why, std::memory_order_seq_cst);
  for (int p = 0; p < kNumPhases; ++p) FutexWakeAll(&mine->phase[p].value);
}

Status ShmBackend::Departed(int rank, const CollArgs &a) const {
  const Control *peer = ControlOf(rank);
  const uint32_t left = peer->left.load(std::memory_order_acquire);
  if (left != 0) {
    return MakeStatus(infinicclRemoteError,
                      "rank %d left the communicator (%s) while rank %d waited for it in %s "
                      "over shared memory",
                      rank,
                      left == kLeftAborted   ? "infinicclCommAbort"
                      : left == kLeftRevoked ? "infinicclCommRevoke"
                      : left == kLeftFailed  ? "it found another rank gone"
                                             : "infinicclCommDestroy",
                      rank_, CollKindName(a.kind));
  }
  ProcessIdentity who;
  who.pid = peer->pid.load(std::memory_order_acquire);
  who.start_time = peer->start_time.load(std::memory_order_relaxed);
  who.pid_ns = peer->pid_ns.load(std::memory_order_relaxed);
  const char *how = GoneWords(Look(who));
  if (how == nullptr) return Status::Ok();
  return MakeStatus(infinicclRemoteError,
                    "rank %d (pid %d) %s while rank %d waited for it in %s over shared memory",
                    rank, who.pid, how, rank_, CollKindName(a.kind));
}

void ShmBackend::MarkFailed(const Status &why) {
  {
    std::lock_guard<std::mutex> lock(failed_mutex_);
    if (failed_why_.empty()) failed_why_ = why.message();
  }
  failed_.store(true, std::memory_order_release);
  Leave(kLeftFailed);
}

Status ShmBackend::FailedError() const {
  std::lock_guard<std::mutex> lock(failed_mutex_);
  return MakeStatus(infinicclRemoteError,
                    "an earlier call over shared memory found a rank gone (%s): the "
                    "communicator's ranks no longer agree on where their calls stand; shrink "
                    "it (infinicclCommShrink) or destroy it",
                    failed_why_.c_str());
}

Status ShmBackend::WaitOne(int rank, Phase phase, uint32_t target, const CollArgs &a) {
  Control *peer = ControlOf(rank);
  Control::Counter &c = peer->phase[phase];
  const auto reached = [&] { return Reached(c.value.load(std::memory_order_acquire), target); };
  if (SpinOnCore(reached, spin_) || SpinFor(reached, kPollBeforeSleep)) return Status::Ok();
  auto checked = std::chrono::steady_clock::now();
  for (;;) {
    c.sleepers.fetch_add(1, std::memory_order_seq_cst);
    const uint32_t seen = c.value.load(std::memory_order_seq_cst);
    if (!Reached(seen, target) && peer->left.load(std::memory_order_seq_cst) == 0) {
      FutexWait(&c.value, seen);
    }
    c.sleepers.fetch_sub(1, std::memory_order_seq_cst);
    if (reached()) return Status::Ok();
    if (aborted_.load(std::memory_order_relaxed)) {
      return Status(infinicclInvalidUsage, "the communicator was aborted (infinicclCommAbort)");
    }
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

Status ShmBackend::WaitAll(Phase phase, uint32_t target, const CollArgs &a) {
  for (int r = 0; r < size_; ++r) {
    if (r != rank_) INFINICCL_RETURN_IF_ERROR(WaitOne(r, phase, target, a));
  }
  return Status::Ok();
}

void ShmBackend::Describe(const CollArgs &a, uint32_t first) {
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

Status ShmBackend::Meet(const CollArgs &a, uint32_t first) {
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
    rec[kRoot] = x.root.load(std::memory_order_relaxed);
  }
  next_chunk_ = first + 1;
  PostAll(first + 1);
  return MakeStatus(infinicclInvalidUsage,
                    "shared memory: %s (this is rank %d; the call was not run on any rank)",
                    FirstDifference(all.data(), size_).c_str(), rank_);
}

const char *ShmBackend::Unsupported(const CollArgs &a) const {
  switch (a.kind) {
    case CollKind::kAllReduce:
    case CollKind::kReduceScatter:
    case CollKind::kReduce:
    case CollKind::kAllGather:
    case CollKind::kBroadcast:
      return nullptr;
    default:
      return "shared memory runs AllReduce, ReduceScatter, Reduce, AllGather and Broadcast";
  }
}

size_t ShmBackend::MaxBytes(CollKind kind, bool devices) {
  const size_t set = GlobalConfig().shm_max_bytes;
  if (set != SIZE_MAX) return set;
  if (devices) return SIZE_MAX;
  // Where shared memory beat MPI at 2 and 4 ranks on one node (host
  // float32, Open MPI 4.1 and MPICH 4.0; docs/PERFORMANCE.md, "Shared
  // memory on a node"): AllReduce at every size (above 4 MiB also ahead of
  // MPI cut into pieces), Reduce to 16 MiB, ReduceScatter at every size
  // measured (MPI's moves every block twice), AllGather and Broadcast only
  // to 16 KiB (past it MPI's single-copy transfer beats a copy in and a
  // copy out).
  switch (kind) {
    case CollKind::kAllReduce: return SIZE_MAX;
    case CollKind::kReduce: return size_t{16} << 20;
    case CollKind::kReduceScatter: return size_t{64} << 20;
    default: return size_t{16} << 10;
  }
}

bool ShmBackend::Takes(const CollArgs &a, bool devices) const {
  if (Unsupported(a) != nullptr) return false;
  if (GlobalConfig().shm == Tristate::kOn) return true;
  return a.count * DataTypeSize(a.dtype) <= MaxBytes(a.kind, devices);
}

ShmBackend::~ShmBackend() {
  Leave(kLeftDestroyed);
  if (landing_free_ != nullptr) {
    // After the copy out of the last landed call: the caller's stream no
    // longer reads or writes the segment. For an aborted communicator this
    // runs on the thread that destroys its engine (Communicator), after the
    // engine's thread is done: the stream may still be held by a long
    // kernel, and the copies behind it use the mapping until it ends.
    (void)registered_with_->EventSynchronize(landing_free_);
    (void)registered_with_->EventDestroy(landing_free_);
  }
  // Errors ignored: at process exit the runtime may already be torn down.
  if (registered_with_ != nullptr) (void)registered_with_->HostUnregister(segment_->base());
}

bool ShmBackend::RegisterWith(DeviceRuntime *device) {
  std::lock_guard<std::mutex> lock(register_mutex_);
  if (register_tried_) return registered_with_ == device;
  register_tried_ = true;
  const Status st = device->HostRegister(segment_->base(), segment_->bytes());
  if (st.ok()) {
    registered_with_ = device;
    INFINICCL_INFO("shared memory: the segment (%zu bytes) is page-locked with %s: device "
                   "copies into and out of it are DMA",
                   segment_->bytes(), device->description());
  } else {
    INFINICCL_INFO("shared memory: the segment stays pageable for %s (%s): device copies "
                   "through it are synchronous",
                   device->description(), st.message().c_str());
  }
  return registered_with_ == device;
}

bool ShmBackend::Lands(const CollArgs &a, DeviceRuntime *device, bool send_dev,
                       bool recv_dev) {
  return a.kind == CollKind::kAllReduce && send_dev && recv_dev && device != nullptr &&
         a.count > 0 && a.count * DataTypeSize(a.dtype) <= kStageBytes && RegisterWith(device);
}

Status ShmBackend::LandIn(const CollArgs &a, DeviceRuntime *device) {
  if (landing_free_ == nullptr) {
    INFINICCL_RETURN_IF_ERROR(device->EventCreate(&landing_free_));
  } else if (landing_stream_ != a.stream) {
    INFINICCL_RETURN_IF_ERROR(device->StreamWaitEvent(a.stream, landing_free_));
  }
  landing_stream_ = a.stream;
  return device->MemcpyAsync(Landing(rank_), a.sendbuff, a.count * DataTypeSize(a.dtype),
                             CopyKind::kDeviceToHost, a.stream);
}

Status ShmBackend::LandOut(const CollArgs &a, DeviceRuntime *device, bool copy) {
  if (copy) {
    INFINICCL_RETURN_IF_ERROR(device->MemcpyAsync(a.recvbuff, Landing(rank_),
                                                  a.count * DataTypeSize(a.dtype),
                                                  CopyKind::kHostToDevice, a.stream));
  }
  return device->EventRecord(landing_free_, a.stream);
}

Status ShmBackend::RunOn(const CollArgs &a, DeviceRuntime *device, bool send_dev,
                         bool recv_dev, CopyCounts *counts) {
  if (failed()) return FailedError();
  if (device != nullptr && (send_dev || recv_dev)) RegisterWith(device);
  switch (a.kind) {
    case CollKind::kAllReduce: return AllReduce(a, device, send_dev, recv_dev, counts);
    case CollKind::kReduceScatter: return ReduceScatter(a, device, send_dev, recv_dev, counts);
    case CollKind::kReduce: return Reduce(a, device, send_dev, recv_dev, counts);
    case CollKind::kAllGather: return AllGather(a, device, send_dev, recv_dev, counts);
    case CollKind::kBroadcast: return Broadcast(a, device, send_dev, recv_dev, counts);
    default: break;
  }
  return Status(infinicclInternalError, Unsupported(a));
}

namespace {

// memcpy with streaming (non-temporal) stores: the lines go to memory
// without first being read into this core's cache, so a line another core
// still holds is not taken from it line by line (the wait a normal store
// has for each such line). Plain memcpy where the target has no such
// stores.
void StreamCopy(char *dst, const char *src, size_t bytes) {
#if defined(__SSE2__)
  const size_t head = std::min(bytes, (16 - (reinterpret_cast<uintptr_t>(dst) & 15)) & 15);
  std::memcpy(dst, src, head);
  size_t i = head;
  for (; i + 64 <= bytes; i += 64) {
    const __m128i *from = reinterpret_cast<const __m128i *>(src + i);
    __m128i *to = reinterpret_cast<__m128i *>(dst + i);
    const __m128i a = _mm_loadu_si128(from), b = _mm_loadu_si128(from + 1);
    const __m128i c = _mm_loadu_si128(from + 2), d = _mm_loadu_si128(from + 3);
    _mm_stream_si128(to, a);
    _mm_stream_si128(to + 1, b);
    _mm_stream_si128(to + 2, c);
    _mm_stream_si128(to + 3, d);
  }
  std::memcpy(dst + i, src + i, bytes - i);
  _mm_sfence();  // before the post that tells the other ranks the chunk is in
#else
  std::memcpy(dst, src, bytes);
#endif
}

void CacheCopy(char *dst, const char *src, size_t bytes) { std::memcpy(dst, src, bytes); }

// Slices of a chunk of n elements among `size` ranks: whole cache lines,
// the last ones possibly short or empty.
struct Slices {
  size_t n, q;
  Slices(size_t elems, int size, size_t elem) : n(elems) {
    const size_t align = std::max<size_t>(1, kLine / elem);
    q = (elems + static_cast<size_t>(size) - 1) / static_cast<size_t>(size);
    q = (q + align - 1) / align * align;
  }
  size_t lo(int j) const { return std::min(n, q * static_cast<size_t>(j)); }
  size_t len(int j) const { return lo(j + 1) - lo(j); }
};

}  // namespace

// Each chunk: copy in (all but the own slice, which the rank reads from its
// own buffer, unless that is device memory), each rank reduces its slice
// over every rank's copy into its own stage, then every rank copies all the
// reduced slices out. Pipelined one chunk deep: the copy in of chunk k+1 is
// issued before chunk k is reduced, and chunk k's copies out finish while
// chunk k+1 is reduced, so device copies overlap the reduction.
Status ShmBackend::AllReduce(const CollArgs &a, DeviceRuntime *dev, bool send_dev,
                             bool recv_dev, CopyCounts *counts, bool landed) {
  const size_t elem = DataTypeSize(a.dtype), cap = kStageBytes / elem;
  const char *in = static_cast<const char *>(a.sendbuff);
  char *out = static_cast<char *>(a.recvbuff);
  const int divisor = a.avg_divisor > 0 ? a.avg_divisor : size_;
  const size_t chunks = (a.count + cap - 1) / cap;
  const uint32_t first = next_chunk_;
  next_chunk_ += static_cast<uint32_t>(chunks);
  // A call of one chunk takes its window of the stage (Window), and says
  // whether it landed: each rank reads the others' inputs where they are
  // and writes its slice of the result into the landing area of each rank
  // that landed.
  const size_t window = chunks == 1 ? Window(a.count * elem, first) : 0;
  if (chunks == 1) ControlOf(rank_)->landed.store(landed ? first + 1 : first, std::memory_order_relaxed);
  Copies copies(dev, a.stream, counts);
  const auto copy_in = [&](size_t k) -> Status {
    if (landed) return Status::Ok();  // LandIn's copy, on the caller's stream
    const size_t at = k * cap, n = std::min(cap, a.count - at), off = at * elem;
    char *stage = Stage(rank_, first + static_cast<uint32_t>(k), window);
    if (send_dev) return copies.Copy(stage, in + off, n * elem, false, true);
    const Slices s(n, size_, elem);
    const size_t lo = s.lo(rank_) * elem, hi = s.lo(rank_ + 1) * elem;
    const auto copy = chunks > kStreamFromChunks ? StreamCopy : CacheCopy;
    copy(stage, in + off, lo);
    copy(stage + hi, in + off + hi, n * elem - hi);
    return Status::Ok();
  };
  INFINICCL_RETURN_IF_ERROR(WaitAll(kDone, first - 1, a));
  INFINICCL_RETURN_IF_ERROR(copy_in(0));
  bool any_landed = landed, all_landed = landed;
  for (size_t k = 0; k < chunks; ++k) {
    const size_t at = k * cap, n = std::min(cap, a.count - at), off = at * elem;
    const uint32_t g = first + static_cast<uint32_t>(k);
    const Slices s(n, size_, elem);
    // Chunk k is in; chunk k-1's copies out are done.
    INFINICCL_RETURN_IF_ERROR(copies.Finish());
    if (k > 0) Post(kDone, g);
    // Just before the arrival, into its line: one transfer of the line to
    // this core for both (a peer may be polling it).
    if (k == 0) Describe(a, first);
    Post(kArrived, g + 1);
    if (k + 1 < chunks) {
      // The next chunk's stage is free once every rank is done with k-1.
      INFINICCL_RETURN_IF_ERROR(WaitAll(kDone, g, a));
      INFINICCL_RETURN_IF_ERROR(copy_in(k + 1));
    }
    if (k == 0) {
      Status met = Meet(a, first);
      if (!met.ok()) {
        (void)copies.Finish();  // the next chunk's copy in, into the own stage
        return met;
      }
    } else {
      INFINICCL_RETURN_IF_ERROR(WaitAll(kArrived, g + 1, a));
    }
    const size_t slice = s.lo(rank_) * elem;
    for (int j = 0; j < size_; ++j) {
      const bool lands =
          j == rank_ ? landed
                     : chunks == 1 && ControlOf(j)->landed.load(std::memory_order_relaxed) == g + 1;
      landed_[static_cast<size_t>(j)] = lands;
      any_landed = any_landed || lands;
      all_landed = all_landed && lands;
      sources_[static_cast<size_t>(j)] =
          j == rank_ && !send_dev ? in + off + slice : InputOf(j, g, window, lands) + slice;
    }
    // Into the own stage or landing area for the others; a host recvbuff
    // gets it at once, else the first other rank that landed.
    char *mine = InputOf(rank_, g, window, landed) + slice;
    int pushed = -1;
    char *also = recv_dev ? nullptr : out + off + slice;
    for (int j = 0; also == nullptr && j < size_; ++j) {
      if (j != rank_ && landed_[static_cast<size_t>(j)]) {
        pushed = j;
        also = Landing(j) + slice;
      }
    }
    ReduceInto(mine, sources_.data(), size_, s.len(rank_), a.dtype, a.op, divisor, also);
    for (int j = 0; any_landed && j < size_; ++j) {
      if (j != rank_ && j != pushed && landed_[static_cast<size_t>(j)]) {
        std::memcpy(Landing(j) + slice, mine, s.len(rank_) * elem);
      }
    }
    Post(kReduced, g + 1);
    INFINICCL_RETURN_IF_ERROR(WaitAll(kReduced, g + 1, a));
    if (landed) continue;  // every slice is in the landing area: LandOut copies it out
    for (int j = 0; j < size_; ++j) {
      if (j == rank_ && !recv_dev) continue;
      const size_t lo = s.lo(j) * elem;
      INFINICCL_RETURN_IF_ERROR(copies.Copy(out + off + lo,
                                            InputOf(j, g, window, landed_[static_cast<size_t>(j)]) + lo,
                                            s.len(j) * elem, recv_dev, false));
    }
  }
  INFINICCL_RETURN_IF_ERROR(copies.Finish());
  PostAll(first + static_cast<uint32_t>(chunks));
  // A rank that did not land read this landing area's slice of the result:
  // the next call's copy in (on the stream, not waiting for the ranks)
  // must come after that.
  if (landed && !all_landed) INFINICCL_RETURN_IF_ERROR(WaitAll(kDone, first + 1, a));
  return Status::Ok();
}

// Each chunk holds the same range of every block: rank j reduces block j over
// every rank's copy, straight into its recvbuff when that is host memory.
Status ShmBackend::ReduceScatter(const CollArgs &a, DeviceRuntime *dev, bool send_dev,
                                 bool recv_dev, CopyCounts *counts) {
  const size_t elem = DataTypeSize(a.dtype);
  const size_t cap = kStageBytes / elem / static_cast<size_t>(size_);
  const char *in = static_cast<const char *>(a.sendbuff);
  char *out = static_cast<char *>(a.recvbuff);
  const int divisor = a.avg_divisor > 0 ? a.avg_divisor : size_;
  Copies copies(dev, a.stream, counts);
  for (size_t at = 0; at < a.count; at += cap) {
    const size_t n = std::min(cap, a.count - at);
    const uint32_t g = next_chunk_++;
    char *mine = Stage(rank_, g);
    INFINICCL_RETURN_IF_ERROR(WaitAll(kDone, g - 1, a));
    for (int j = 0; j < size_; ++j) {
      if (j == rank_ && !send_dev) continue;
      INFINICCL_RETURN_IF_ERROR(copies.Copy(mine + static_cast<size_t>(j) * cap * elem,
                                            in + (static_cast<size_t>(j) * a.count + at) * elem,
                                            n * elem, false, send_dev));
    }
    INFINICCL_RETURN_IF_ERROR(copies.Finish());
    if (at == 0) Describe(a, g);
    Post(kArrived, g + 1);
    INFINICCL_RETURN_IF_ERROR(at == 0 ? Meet(a, g) : WaitAll(kArrived, g + 1, a));
    const size_t block = static_cast<size_t>(rank_) * cap * elem;
    for (int j = 0; j < size_; ++j) {
      sources_[static_cast<size_t>(j)] =
          j == rank_ && !send_dev
              ? in + (static_cast<size_t>(rank_) * a.count + at) * elem
              : Stage(j, g) + block;
    }
    char *dst = recv_dev ? mine + block : out + at * elem;
    ReduceInto(dst, sources_.data(), size_, n, a.dtype, a.op, divisor);
    INFINICCL_RETURN_IF_ERROR(copies.Copy(out + at * elem, dst, n * elem, recv_dev, false));
    INFINICCL_RETURN_IF_ERROR(copies.Finish());
    PostAll(g + 1);
  }
  return Status::Ok();
}

// Every rank copies in; the root reduces all copies into its recvbuff.
Status ShmBackend::Reduce(const CollArgs &a, DeviceRuntime *dev, bool send_dev, bool recv_dev, CopyCounts *counts) {
  const size_t elem = DataTypeSize(a.dtype), cap = kStageBytes / elem;
  const bool root = rank_ == a.root;
  const char *in = static_cast<const char *>(a.sendbuff);
  char *out = static_cast<char *>(a.recvbuff);
  const int divisor = a.avg_divisor > 0 ? a.avg_divisor : size_;
  Copies copies(dev, a.stream, counts);
  for (size_t at = 0; at < a.count; at += cap) {
    const size_t n = std::min(cap, a.count - at), off = at * elem;
    const uint32_t g = next_chunk_++;
    char *mine = Stage(rank_, g);
    INFINICCL_RETURN_IF_ERROR(WaitAll(kDone, g - 1, a));
    if (!root || send_dev) {
      INFINICCL_RETURN_IF_ERROR(copies.Copy(mine, in + off, n * elem, false, send_dev));
      INFINICCL_RETURN_IF_ERROR(copies.Finish());
    }
    if (at == 0) Describe(a, g);
    Post(kArrived, g + 1);
    // The first chunk: every rank meets every other (the descriptors).
    if (at == 0) INFINICCL_RETURN_IF_ERROR(Meet(a, g));
    if (root) {
      if (at > 0) INFINICCL_RETURN_IF_ERROR(WaitAll(kArrived, g + 1, a));
      for (int j = 0; j < size_; ++j) {
        sources_[static_cast<size_t>(j)] = j == rank_ && !send_dev ? in + off : Stage(j, g);
      }
      char *dst = recv_dev ? mine : out + off;
      ReduceInto(dst, sources_.data(), size_, n, a.dtype, a.op, divisor);
      INFINICCL_RETURN_IF_ERROR(copies.Copy(out + off, dst, n * elem, recv_dev, false));
      INFINICCL_RETURN_IF_ERROR(copies.Finish());
    }
    PostAll(g + 1);
  }
  return Status::Ok();
}

// Each rank copies its block in; every rank copies the others' out.
Status ShmBackend::AllGather(const CollArgs &a, DeviceRuntime *dev, bool send_dev,
                             bool recv_dev, CopyCounts *counts) {
  const size_t elem = DataTypeSize(a.dtype), cap = kStageBytes / elem;
  const char *in = static_cast<const char *>(a.sendbuff);
  char *out = static_cast<char *>(a.recvbuff);
  Copies copies(dev, a.stream, counts);
  for (size_t at = 0; at < a.count; at += cap) {
    const size_t n = std::min(cap, a.count - at), off = at * elem;
    const uint32_t g = next_chunk_++;
    INFINICCL_RETURN_IF_ERROR(WaitAll(kDone, g - 1, a));
    INFINICCL_RETURN_IF_ERROR(copies.Copy(Stage(rank_, g), in + off, n * elem, false, send_dev));
    INFINICCL_RETURN_IF_ERROR(copies.Finish());
    if (at == 0) Describe(a, g);
    Post(kArrived, g + 1);
    INFINICCL_RETURN_IF_ERROR(at == 0 ? Meet(a, g) : WaitAll(kArrived, g + 1, a));
    // The own block after the others' descriptors are compared: a refused
    // call writes nothing.
    INFINICCL_RETURN_IF_ERROR(
        copies.Copy(out + (static_cast<size_t>(rank_) * a.count + at) * elem, in + off,
                    n * elem, recv_dev, send_dev));
    for (int j = 0; j < size_; ++j) {
      if (j == rank_) continue;
      INFINICCL_RETURN_IF_ERROR(
          copies.Copy(out + (static_cast<size_t>(j) * a.count + at) * elem, Stage(j, g),
                      n * elem, recv_dev, false));
    }
    INFINICCL_RETURN_IF_ERROR(copies.Finish());
    PostAll(g + 1);
  }
  return Status::Ok();
}

// The root copies in; every other rank copies out.
Status ShmBackend::Broadcast(const CollArgs &a, DeviceRuntime *dev, bool send_dev,
                             bool recv_dev, CopyCounts *counts) {
  const size_t elem = DataTypeSize(a.dtype), cap = kStageBytes / elem;
  const bool root = rank_ == a.root;
  const char *in = static_cast<const char *>(a.sendbuff);
  char *out = static_cast<char *>(a.recvbuff);
  Copies copies(dev, a.stream, counts);
  for (size_t at = 0; at < a.count; at += cap) {
    const size_t n = std::min(cap, a.count - at), off = at * elem;
    const uint32_t g = next_chunk_++;
    INFINICCL_RETURN_IF_ERROR(WaitAll(kDone, g - 1, a));
    if (root) {
      INFINICCL_RETURN_IF_ERROR(copies.Copy(Stage(rank_, g), in + off, n * elem, false, send_dev));
      INFINICCL_RETURN_IF_ERROR(copies.Finish());
    }
    // The first chunk: every rank arrives (the others with nothing in their
    // stage) and meets every other (the descriptors); later ones wait for
    // the root only.
    if (at == 0) {
      Describe(a, g);
      Post(kArrived, g + 1);
      INFINICCL_RETURN_IF_ERROR(Meet(a, g));
    } else if (root) {
      Post(kArrived, g + 1);
    } else {
      INFINICCL_RETURN_IF_ERROR(WaitOne(a.root, kArrived, g + 1, a));
    }
    if (root) {
      INFINICCL_RETURN_IF_ERROR(copies.Copy(out + off, in + off, n * elem, recv_dev, send_dev));
    } else {
      INFINICCL_RETURN_IF_ERROR(copies.Copy(out + off, Stage(a.root, g), n * elem, recv_dev, false));
    }
    INFINICCL_RETURN_IF_ERROR(copies.Finish());
    PostAll(g + 1);
  }
  return Status::Ok();
}

}  // namespace infiniccl
