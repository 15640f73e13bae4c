#include "staging/pipeline.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <mutex>
#include <utility>

#include "core/config.h"
#include "core/dtype.h"
#include "core/log.h"
#include "core/pieces.h"
#include "staging/staging_pool.h"

namespace infiniccl {

namespace {

constexpr int kSlots = 2;  // buffers in flight: enough for copy/MPI overlap on one stream

// RAII event of the device runtime.
class Event {
 public:
  explicit Event(DeviceRuntime &d) : device_(d) {}
  ~Event() {
    if (event_ != nullptr) device_.EventDestroy(event_);
  }
  Event(const Event &) = delete;
  Event &operator=(const Event &) = delete;
  Status Create() { return device_.EventCreate(&event_); }
  void *get() const { return event_; }

 private:
  DeviceRuntime &device_;
  void *event_ = nullptr;
};

// Synchronizes both streams when the call leaves early, so no queued copy
// still touches a leased buffer once it is back in the pool.
class SyncOnExit {
 public:
  SyncOnExit(DeviceRuntime &d, void *in, void *out) : device_(d), in_(in), out_(out) {}
  ~SyncOnExit() {
    if (armed_) {
      device_.StreamSynchronize(in_);
      if (out_ != in_) device_.StreamSynchronize(out_);
    }
  }
  SyncOnExit(const SyncOnExit &) = delete;
  SyncOnExit &operator=(const SyncOnExit &) = delete;
  void Disarm() { armed_ = false; }

 private:
  DeviceRuntime &device_;
  void *in_, *out_;
  bool armed_ = true;
};

struct Plan {
  size_t elem, count, send_blocks, recv_blocks, cols;  // cols: the widest chunk
  size_t slot_bytes() const { return (send_blocks + recv_blocks) * cols * elem; }
};

// Moves the send slices of columns [col, col+n) into the slot (device memory
// by an async copy on the stream, host memory by memcpy).
Status StageIn(DeviceRuntime &device, const CollArgs &a, const Plan &p,
               bool on_device, char *slot, size_t col, size_t n) {
  const char *src = static_cast<const char *>(a.sendbuff);
  for (size_t b = 0; b < p.send_blocks; ++b) {
    const char *from = src + (b * p.count + col) * p.elem;
    char *to = slot + b * n * p.elem;
    if (on_device) {
      INFINICCL_RETURN_IF_ERROR(
          StageCopy(device, to, from, n * p.elem, CopyKind::kDeviceToHost, a.stream));
    } else {
      std::memcpy(to, from, n * p.elem);
    }
  }
  return Status::Ok();
}

Status StageOut(DeviceRuntime &device, const CollArgs &a, const Plan &p,
                bool on_device, const char *slot, size_t col, size_t n) {
  char *dst = static_cast<char *>(a.recvbuff);
  for (size_t b = 0; b < p.recv_blocks; ++b) {
    char *to = dst + (b * p.count + col) * p.elem;
    const char *from = slot + b * n * p.elem;
    if (on_device) {
      INFINICCL_RETURN_IF_ERROR(
          StageCopy(device, to, from, n * p.elem, CopyKind::kHostToDevice, a.stream));
    } else {
      std::memcpy(to, from, n * p.elem);
    }
  }
  return Status::Ok();
}

// Blocks per column of the widest buffer and of both buffers together, the
// same on every rank (a root's shape), so that every rank cuts the operation
// into the same chunks and makes the same MPI calls.
struct Shape {
  size_t widest, blocks;
};
Shape ShapeOf(CollKind kind, size_t n) {
  switch (kind) {
    case CollKind::kAllGather:
    case CollKind::kGather:
    case CollKind::kScatter:
    case CollKind::kReduceScatter: return {n, n + 1};
    case CollKind::kAllToAll: return {n, 2 * n};
    default: return {1, 2};  // AllReduce, Broadcast, Reduce, Send, Recv
  }
}

// The columns of `a` and how they are cut (p.cols: the widest chunk).
ChunkSchedule MakePlan(DeviceRuntime &device, const CollArgs &a, int nranks,
                       size_t chunk_override, Plan *p) {
  const Config &config = GlobalConfig();
  p->elem = DataTypeSize(a.dtype);
  p->count = a.count;
  p->send_blocks = a.send_bytes / (a.count * p->elem);
  p->recv_blocks = a.recv_bytes / (a.count * p->elem);
  const Shape shape = ShapeOf(a.kind, static_cast<size_t>(nranks));
  const size_t chunk_bytes = chunk_override != 0                ? chunk_override
                             : config.pipeline_chunk_bytes != 0 ? config.pipeline_chunk_bytes
                                                                : device.DefaultChunkBytes();
  const ChunkSchedule plan = PlanChunks(p->count, shape.widest, shape.blocks, p->elem,
                                        chunk_bytes, StagingPool::Global().cap_bytes());
  p->cols = plan.max_cols();
  return plan;
}

// Where a staged call's time goes, for INFINICCL_DEBUG=TRACE (one line per
// call): copy in (issue and wait for the first chunk's device-to-host copy),
// MPI (all chunks), waits (for later chunks' copies, MPI idle), copy out
// (the last host-to-device copies after the last MPI call).
class Breakdown {
 public:
  using Clock = std::chrono::steady_clock;
  Breakdown() : on_(LogEnabled(LogLevel::kTrace)) { Mark(); }
  // Adds the time since the last mark to `bucket`.
  void Add(double *bucket) {
    if (!on_) return;
    const Clock::time_point now = Clock::now();
    *bucket += std::chrono::duration<double, std::micro>(now - last_).count();
    last_ = now;
  }
  void Mark() {
    if (on_) last_ = Clock::now();
  }
  void Log(const CollArgs &a, size_t chunks) const {
    if (!on_) return;
    INFINICCL_TRACE("staged %s %zu x %s: chunks=%zu copy_in_us=%.1f mpi_us=%.1f "
                    "waits_us=%.1f copy_out_us=%.1f",
                    CollKindName(a.kind), a.count, DataTypeName(a.dtype), chunks, copy_in,
                    mpi, waits, copy_out);
  }
  double copy_in = 0, mpi = 0, waits = 0, copy_out = 0;

 private:
  bool on_;
  Clock::time_point last_;
};

// One chunk, all on the caller's stream: copy in, wait, MPI, copy out,
// wait. No events and no second stream: at 256 KiB on an H200 with four
// ranks every fixed cost shows (docs/PERFORMANCE.md, "Real GPU (one NVIDIA H200)").
Status RunOneChunk(Backend &host_backend, DeviceRuntime &device, StagingPool &pool,
                   const CollArgs &a, const Plan &p, BufferPlacement placement,
                   const void *owner) {
  StagingLease lease;
  INFINICCL_RETURN_IF_ERROR(pool.Lease(p.slot_bytes(), device, owner, &lease));
  SyncOnExit sync(device, a.stream, a.stream);  // destroyed before the lease
  Breakdown t;
  char *slot = lease.data();
  INFINICCL_RETURN_IF_ERROR(
      StageIn(device, a, p, placement.send_on_device, slot, 0, p.count));
  INFINICCL_RETURN_IF_ERROR(device.StreamSynchronize(a.stream));
  t.Add(&t.copy_in);
  CollArgs host = a;
  host.in_place = false;  // the staging buffer is always separate
  host.staged = true;     // a chunk already: not cut again into host pieces
  host.sendbuff = p.send_blocks > 0 ? slot : nullptr;
  host.recvbuff = p.recv_blocks > 0 ? slot + p.send_blocks * p.count * p.elem : nullptr;
  INFINICCL_RETURN_IF_ERROR(host_backend.Run(host));
  t.Add(&t.mpi);
  INFINICCL_RETURN_IF_ERROR(StageOut(device, a, p, placement.recv_on_device,
                                     static_cast<char *>(host.recvbuff), 0, p.count));
  sync.Disarm();
  INFINICCL_RETURN_IF_ERROR(device.StreamSynchronize(a.stream));
  t.Add(&t.copy_out);
  t.Log(a, 1);
  return Status::Ok();
}

}  // namespace

Status StageCopy(DeviceRuntime &device, void *dst, const void *src, size_t bytes,
                 CopyKind kind, void *stream) {
  INFINICCL_RETURN_IF_ERROR(device.MemcpyAsync(dst, src, bytes, kind, stream));
  StagingPool::Global().CountCopy(kind, bytes);
  return Status::Ok();
}

Status RunLocalCopy(DeviceRuntime &device, const CollArgs &a, BufferPlacement placement,
                    bool stream_ordered) {
  if (a.sendbuff == a.recvbuff) return Status::Ok();
  const CopyKind kind = placement.send_on_device && placement.recv_on_device
                            ? CopyKind::kDeviceToDevice
                        : placement.send_on_device ? CopyKind::kDeviceToHost
                                                   : CopyKind::kHostToDevice;
  INFINICCL_RETURN_IF_ERROR(
      device.MemcpyAsync(a.recvbuff, a.sendbuff, a.recv_bytes, kind, a.stream));
  return stream_ordered ? Status::Ok() : device.StreamSynchronize(a.stream);
}

Status RunDirect(Backend &backend, DeviceRuntime &device, const CollArgs &a) {
  // After the work already queued on the stream (the producer of sendbuff).
  INFINICCL_RETURN_IF_ERROR(device.StreamSynchronize(a.stream));
  StagingPool::Global().CountDirect();
  CollArgs direct = a;
  direct.device = &device;
  return backend.Run(direct);
}

ChunkSchedule PlanChunks(size_t count, size_t widest, size_t blocks, size_t elem,
                         size_t chunk_bytes, size_t cap_bytes) {
  ChunkSchedule s;
  s.count = count;
  // Small enough for one host buffer of one chunk: no pipelining.
  if (count <= chunk_bytes / (widest * elem) && blocks * count * elem <= cap_bytes) return s;
  // Both slots together stay within the pool's cap.
  const size_t cols = std::min(Pieces::WidthFor(chunk_bytes, widest * elem),
                               Pieces::WidthFor(cap_bytes, kSlots * blocks * elem));
  s.chunks = Pieces(count, cols).size();
  return s;
}

StagedOnStream::~StagedOnStream() {
  // The slot goes back only once no copy can touch it: left before the gate
  // (a failed Begin, on the caller's thread), once the stream is done with
  // it; with `done` recorded, once that event is reached (it follows the
  // gate, which always opens, and nothing else); with the gate queued and
  // `done` not recorded, nothing says when: the slot is never reused.
  if (lease_.data() != nullptr) {
    switch (state_) {
      case State::kIn: device_->StreamSynchronize(args_.stream); break;
      case State::kGated: lease_.Leak(); break;
      case State::kRecorded: device_->EventSynchronize(done_); break;
      case State::kNone: break;
    }
  }
  lease_.Reset();
  if (done_ != nullptr) device_->EventDestroy(done_);
}

size_t StagedOnStream::LargestSlotBytes(DeviceRuntime &device) {
  const size_t configured = GlobalConfig().pipeline_chunk_bytes;
  // A chunk of every block (a chunk is at most chunk_bytes of the widest):
  // two chunks' worth at most (AllReduce's send and receive blocks).
  return 2 * (configured != 0 ? configured : device.DefaultChunkBytes());
}

std::shared_ptr<StagedOnStream> StagedOnStream::IfOneChunk(DeviceRuntime &device,
                                                           const CollArgs &a,
                                                           BufferPlacement placement,
                                                           int nranks) {
  Plan p;
  const ChunkSchedule plan = MakePlan(device, a, nranks, 0, &p);
  if (plan.chunks != 1 || (p.send_blocks > 0 && !placement.send_on_device) ||
      (p.recv_blocks > 0 && !placement.recv_on_device)) {
    return nullptr;
  }
  auto staged = std::make_shared<StagedOnStream>();
  staged->elem_ = p.elem;
  staged->send_blocks_ = p.send_blocks;
  staged->recv_blocks_ = p.recv_blocks;
  return staged;
}

Status StagedOnStream::Begin(DeviceRuntime &device, const CollArgs &a, const void *owner,
                             bool *began) {
  *began = false;
  device_ = &device;
  args_ = a;
  // One chunk of every column (IfOneChunk).
  const Plan p{elem_, a.count, send_blocks_, recv_blocks_, a.count};
  StagingPool &pool = StagingPool::Global();
  // Within the cap beside the slots of the calls queued before, or not here.
  INFINICCL_RETURN_IF_ERROR(pool.Lease(p.slot_bytes(), device, owner, &lease_,
                                       StagingPool::OverCap::kDecline));
  // Pinned only: a copy into pageable memory returns once done (this thread
  // would wait for the work queued before it, gates included), and one from
  // pageable memory reads the slot at the call, before MPI has written it.
  if (!lease_.pinned()) lease_.Reset();
  if (lease_.data() == nullptr) return Status::Ok();
  INFINICCL_RETURN_IF_ERROR(device.EventCreate(&done_));
  *began = true;
  pool.CountCall(false);
  char *slot = lease_.data();
  host_ = a;
  host_.in_place = false;  // the staging buffer is always separate
  host_.staged = true;     // a chunk already: not cut again into host pieces
  host_.stream = nullptr;
  host_.sendbuff = p.send_blocks > 0 ? slot : nullptr;
  host_.recvbuff = p.recv_blocks > 0 ? slot + p.send_blocks * p.count * p.elem : nullptr;
  state_ = State::kIn;
  return StageIn(device, a, p, /*on_device=*/true, slot, 0, p.count);
}

Status StagedOnStream::RunHost(Backend &host_backend) const { return host_backend.Run(host_); }

Status StagedOnStream::End() {
  state_ = State::kGated;
  Plan p{elem_, args_.count, send_blocks_, recv_blocks_, args_.count};
  INFINICCL_RETURN_IF_ERROR(StageOut(*device_, args_, p, /*on_device=*/true,
                                     static_cast<const char *>(host_.recvbuff), 0, p.count));
  INFINICCL_RETURN_IF_ERROR(device_->EventRecord(done_, args_.stream));
  state_ = State::kRecorded;
  return Status::Ok();
}

void StagedOnStream::Retire() {
  if (state_ != State::kRecorded || lease_.data() == nullptr) return;  // the destructor's
  device_->EventSynchronize(done_);
  lease_.Reset();
}

Status RunStaged(Backend &host_backend, DeviceRuntime &device, const CollArgs &a,
                 BufferPlacement placement, int nranks, const void *owner,
                 size_t chunk_override) {
  StagingPool &pool = StagingPool::Global();
  Plan p;
  const ChunkSchedule plan = MakePlan(device, a, nranks, chunk_override, &p);
  const size_t chunks = plan.chunks;
  pool.CountCall(chunks > 1);
  if (chunks == 1) return RunOneChunk(host_backend, device, pool, a, p, placement, owner);
  const int slots = kSlots;

  // Device-to-host copies on the user's stream (after the work that made
  // the input); host-to-device copies of a pipelined call on a second stream.
  void *in = a.stream, *out = a.stream;
  INFINICCL_RETURN_IF_ERROR(CopyOutStream(device, &out));

  StagingLease lease[kSlots];
  Event ready[kSlots] = {Event(device), Event(device)};  // slot's input on host
  Event done[kSlots] = {Event(device), Event(device)};   // slot's output copied out
  for (int s = 0; s < slots; ++s) {
    INFINICCL_RETURN_IF_ERROR(pool.Lease(p.slot_bytes(), device, owner, &lease[s]));
    INFINICCL_RETURN_IF_ERROR(ready[s].Create());
    INFINICCL_RETURN_IF_ERROR(done[s].Create());
  }
  SyncOnExit sync(device, in, out);  // destroyed before the leases
  auto stage_in = [&](size_t k) -> Status {
    char *slot = lease[k % slots].data();
    const ChunkSchedule::Piece piece = plan.at(k);
    INFINICCL_RETURN_IF_ERROR(StageIn(device, a, p, placement.send_on_device, slot,
                                      piece.offset, piece.cols));
    return device.EventRecord(ready[k % slots].get(), in);
  };
  CollArgs out_args = a;
  out_args.stream = out;
  // A Recv's sender, reported by the first chunk: a receive from any source
  // takes the later chunks from it (they are the rest of its message).
  int sender = a.root;

  Breakdown t;
  INFINICCL_RETURN_IF_ERROR(stage_in(0));
  for (size_t k = 0; k < chunks; ++k) {
    if (k + 1 < chunks) INFINICCL_RETURN_IF_ERROR(stage_in(k + 1));
    INFINICCL_RETURN_IF_ERROR(device.EventSynchronize(ready[k % slots].get()));
    // The slot's output half is free once the chunk before last was copied out.
    if (k >= static_cast<size_t>(slots)) {
      INFINICCL_RETURN_IF_ERROR(device.EventSynchronize(done[k % slots].get()));
    }
    t.Add(k == 0 ? &t.copy_in : &t.waits);
    const ChunkSchedule::Piece piece = plan.at(k);
    const size_t n = piece.cols;
    char *slot = lease[k % slots].data();
    CollArgs host = a;
    host.count = n;
    host.in_place = false;  // staging buffers are always separate
    host.staged = true;     // a chunk already: not cut again into host pieces
    host.sendbuff = p.send_blocks > 0 ? slot : nullptr;
    // The output half starts after the widest chunk's input half, so no
    // chunk's input copy reaches an output still being copied out.
    host.recvbuff = p.recv_blocks > 0 ? slot + p.send_blocks * p.cols * p.elem : nullptr;
    host.send_bytes = p.send_blocks * n * p.elem;
    host.recv_bytes = p.recv_blocks * n * p.elem;
    if (a.kind == CollKind::kRecv) {
      host.root = sender;
      host.source = &sender;
    }
    INFINICCL_RETURN_IF_ERROR(host_backend.Run(host));
    t.Add(&t.mpi);
    INFINICCL_RETURN_IF_ERROR(StageOut(device, out_args, p, placement.recv_on_device,
                                       static_cast<char *>(host.recvbuff), piece.offset, n));
    INFINICCL_RETURN_IF_ERROR(device.EventRecord(done[k % slots].get(), out));
    t.Add(&t.waits);
  }
  // The leases are returned on exit, so the last copies must be done; the
  // input stream's work (D2H copies) is complete already.
  sync.Disarm();
  for (int s = 0; s < slots; ++s) {
    INFINICCL_RETURN_IF_ERROR(device.EventSynchronize(done[s].get()));
  }
  INFINICCL_RETURN_IF_ERROR(device.StreamSynchronize(in));
  if (a.source != nullptr) *a.source = sender;
  t.Add(&t.copy_out);
  t.Log(a, chunks);
  return Status::Ok();
}

}  // namespace infiniccl
