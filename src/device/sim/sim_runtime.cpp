#include "device/sim/sim_runtime.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <thread>
#include <vector>

#include "device/host_gate.h"
#include "device/sim/sim_stream.h"

namespace infiniccl {

namespace {

thread_local int t_device = 0;

// Device allocations are 256-byte aligned, as cudaMalloc's are.
constexpr size_t kAlign = 256;

size_t RoundUp(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// On a loaded machine a sleep ends 100-150 us after it was due (thread
// wake-up and timer slack), which made every short emulated copy cost about
// 100 us. A copy thread therefore sleeps only for the part of a wait beyond
// this margin and spins for the rest (docs/PERFORMANCE.md, "Device buffers on the emulated device").
constexpr auto kSpinMargin = std::chrono::microseconds(150);

void WaitUntil(std::chrono::steady_clock::time_point due) {
  if (due - std::chrono::steady_clock::now() > kSpinMargin) {
    std::this_thread::sleep_until(due - kSpinMargin);
  }
  while (std::chrono::steady_clock::now() < due) {
  }
}

}  // namespace

SimRuntime::SimRuntime(int device_count, double copy_gbps, bool pinned_available,
                       double copy_latency_us, SimStrict strict)
    : device_count_(device_count),
      copy_gbps_(copy_gbps),
      copy_latency_us_(copy_latency_us),
      pinned_available_(pinned_available),
      strict_(strict),
      default_stream_(std::make_unique<SimStream>()) {}

SimRuntime::~SimRuntime() {
  default_stream_.reset();
  std::map<SimStream *, StreamEntry> streams;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    streams.swap(streams_);
  }
  streams.clear();  // each drains its queue, whose host functions need theirs
  hostfn_threads_.clear();
  for (auto &[base, a] : device_mem_) std::free(reinterpret_cast<void *>(base));
  for (auto &[p, bytes] : pinned_mem_) std::free(reinterpret_cast<void *>(p));
}

Status SimRuntime::GetDevice(int *device) {
  *device = t_device;
  return Status::Ok();
}

Status SimRuntime::SetDevice(int device) {
  if (device < 0 || device >= device_count_) {
    return MakeStatus(infinicclInvalidArgument,
                      "emulated device %d does not exist (%d devices)", device,
                      device_count_);
  }
  t_device = device;
  return Status::Ok();
}

bool SimRuntime::FindDevice(const void *p, size_t bytes, int *device) const {
  const uintptr_t x = reinterpret_cast<uintptr_t>(p);
  auto it = device_mem_.upper_bound(x);
  if (it == device_mem_.begin()) return false;
  --it;
  if (x - it->first + bytes > it->second.bytes) return false;
  if (device) *device = it->second.device;
  return true;
}

bool SimRuntime::Owns(const void *ptr) const {
  if (!HasAllocations()) return false;
  std::lock_guard<std::mutex> lock(mutex_);
  return FindDevice(ptr, 1, nullptr);
}

Status SimRuntime::Classify(const void *ptr, PointerInfo *info) {
  *info = PointerInfo{MemorySpace::kHost, DeviceKind::kCpu, -1};
  if (!HasAllocations()) return Status::Ok();
  std::lock_guard<std::mutex> lock(mutex_);
  int device = -1;
  if (FindDevice(ptr, 1, &device)) {
    *info = PointerInfo{MemorySpace::kDevice, DeviceKind::kSim, device};
  }
  return Status::Ok();
}

Status SimRuntime::Malloc(void **ptr, size_t bytes) {
  *ptr = nullptr;
  if (bytes == 0) return Status::Ok();
  // As cudaMalloc may (the CUDA guide's implicit synchronisation).
  if (strict_.implicit_sync) SynchronizeAll();
  void *p = std::aligned_alloc(kAlign, RoundUp(bytes));
  if (p == nullptr) {
    return MakeStatus(infinicclSystemError, "emulated device out of memory (%zu bytes)",
                      bytes);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  device_mem_[reinterpret_cast<uintptr_t>(p)] = Allocation{bytes, t_device};
  live_allocs_.fetch_add(1);
  ++stats_.device_allocs;
  stats_.live_device_bytes += bytes;
  *ptr = p;
  return Status::Ok();
}

Status SimRuntime::Free(void *ptr) {
  if (ptr == nullptr) return Status::Ok();
  // As cudaFree, an implicit synchronisation: work queued before the free
  // (a queued collective reading the buffer, say) finishes first.
  if (strict_.implicit_sync) SynchronizeAll();
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = device_mem_.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == device_mem_.end()) {
    return MakeStatus(infinicclInvalidArgument,
                      "%p is not an emulated-device allocation", ptr);
  }
  stats_.live_device_bytes -= it->second.bytes;
  device_mem_.erase(it);
  live_allocs_.fetch_sub(1);
  ++stats_.device_frees;
  std::free(ptr);
  return Status::Ok();
}

Status SimRuntime::MallocHost(void **ptr, size_t bytes) {
  *ptr = nullptr;
  if (!pinned_available_.load()) {
    return Status(infinicclNotSupported,
                  "pinned host memory disabled on the emulated device "
                  "(INFINICCL_SIM_PINNED=0)");
  }
  // As cudaMallocHost may (the CUDA guide's implicit synchronisation).
  if (strict_.implicit_sync) SynchronizeAll();
  const size_t rounded = RoundUp(bytes == 0 ? 1 : bytes);
  void *p = std::aligned_alloc(kAlign, rounded);
  if (p == nullptr) {
    return MakeStatus(infinicclSystemError, "out of pinned host memory (%zu bytes)", bytes);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  pinned_mem_[reinterpret_cast<uintptr_t>(p)] = rounded;
  ++stats_.host_allocs;
  *ptr = p;
  return Status::Ok();
}

Status SimRuntime::FreeHost(void *ptr) {
  if (ptr == nullptr) return Status::Ok();
  // As cudaFreeHost: it waits for the device (a progress engine that freed
  // pinned memory while a caller's stream waits for its gate would hang).
  if (strict_.implicit_sync) SynchronizeAll();
  std::lock_guard<std::mutex> lock(mutex_);
  if (pinned_mem_.erase(reinterpret_cast<uintptr_t>(ptr)) == 0) {
    return MakeStatus(infinicclInvalidArgument, "%p is not an emulated pinned allocation",
                      ptr);
  }
  ++stats_.host_frees;
  std::free(ptr);
  return Status::Ok();
}

namespace {
// Whether [x, x + bytes) lies within one range of `ranges` (base -> bytes).
bool Within(const std::map<uintptr_t, size_t> &ranges, uintptr_t x, size_t bytes) {
  auto it = ranges.upper_bound(x);
  if (it == ranges.begin()) return false;
  --it;
  return x - it->first + bytes <= it->second;
}
}  // namespace

Status SimRuntime::HostRegister(void *ptr, size_t bytes) {
  if (!pinned_available_.load()) {
    return Status(infinicclNotSupported,
                  "pinned host memory disabled on the emulated device "
                  "(INFINICCL_SIM_PINNED=0)");
  }
  if (ptr == nullptr || bytes == 0) {
    return Status(infinicclInvalidArgument, "HostRegister of an empty range");
  }
  const uintptr_t x = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard<std::mutex> lock(mutex_);
  // As cudaErrorHostMemoryAlreadyRegistered: no range may overlap another.
  auto next = registered_mem_.lower_bound(x);
  const bool overlaps =
      (next != registered_mem_.end() && next->first < x + bytes) ||
      (next != registered_mem_.begin() && std::prev(next)->first + std::prev(next)->second > x);
  if (overlaps || Within(pinned_mem_, x, 1)) {
    return MakeStatus(infinicclInvalidArgument, "%p is already pinned or registered", ptr);
  }
  registered_mem_[x] = bytes;
  return Status::Ok();
}

Status SimRuntime::HostUnregister(void *ptr) {
  if (ptr == nullptr) return Status::Ok();
  std::lock_guard<std::mutex> lock(mutex_);
  if (registered_mem_.erase(reinterpret_cast<uintptr_t>(ptr)) == 0) {
    return MakeStatus(infinicclInvalidArgument, "%p is not a registered host range", ptr);
  }
  return Status::Ok();
}

void SimRuntime::SynchronizeAll() {
  std::vector<std::shared_ptr<SimStream>> all;  // kept alive while waited for
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto &[p, entry] : streams_) all.push_back(entry.stream);
  }
  default_stream_->Synchronize();
  for (const auto &s : all) s->Synchronize();
}

bool SimRuntime::IsPinnedLocked(const void *p, size_t bytes) const {
  const uintptr_t x = reinterpret_cast<uintptr_t>(p);
  return Within(pinned_mem_, x, bytes) || Within(registered_mem_, x, bytes);
}

SimStream *SimRuntime::StreamFor(void *stream) {
  if (stream == nullptr) return default_stream_.get();
  std::lock_guard<std::mutex> lock(mutex_);
  auto *s = static_cast<SimStream *>(stream);
  return streams_.count(s) ? s : nullptr;
}

SimStream *SimRuntime::HostFnThread(void *stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = streams_.find(static_cast<SimStream *>(stream));
  const int device = it == streams_.end() ? 0 : it->second.device;
  std::unique_ptr<SimStream> &t = hostfn_threads_[device];
  if (t == nullptr) t = std::make_unique<SimStream>("iccl-simhostfn");
  return t.get();
}

Status SimRuntime::MemcpyAsync(void *dst, const void *src, size_t bytes, CopyKind kind,
                               void *stream) {
  if (bytes == 0) return Status::Ok();
  SimStream *s = StreamFor(stream);
  if (s == nullptr) {
    return MakeStatus(infinicclInvalidArgument, "%p is not an emulated-device stream",
                      stream);
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // Every device side of the copy must lie inside an emulated allocation.
    for (const void *dev : {kind == CopyKind::kHostToDevice ? nullptr : src,
                            kind == CopyKind::kDeviceToHost ? nullptr : static_cast<const void *>(dst)}) {
      if (dev != nullptr && !FindDevice(dev, bytes, nullptr)) {
        return MakeStatus(infinicclInvalidArgument,
                          "emulated copy of %zu bytes: %p is not inside an emulated-device "
                          "allocation",
                          bytes, dev);
      }
    }
  }
  int pending = fail_copies_.load();
  while (pending > 0 && !fail_copies_.compare_exchange_weak(pending, pending - 1)) {
  }
  if (pending > 0) {
    return Status(infinicclSystemError, "emulated copy failure (injected by a test)");
  }
  // Pageable host memory (SimStrict::pageable_sync): CUDA copies a source
  // into its own staging at the call, and makes a copy into pageable memory
  // synchronous. A captured copy reads and writes its memory at each launch.
  const bool capturing = Capturing(s);
  bool sync_after = false;
  std::shared_ptr<std::vector<char>> snapshot;
  if (!capturing) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (strict_.pageable_sync && kind == CopyKind::kHostToDevice &&
        !IsPinnedLocked(src, bytes)) {
      snapshot = std::make_shared<std::vector<char>>(static_cast<const char *>(src),
                                                     static_cast<const char *>(src) + bytes);
      src = snapshot->data();
    }
    sync_after = strict_.pageable_sync && kind == CopyKind::kDeviceToHost &&
                 !IsPinnedLocked(dst, bytes);
  }
  // The throttle emulates the host link; a copy within the device is not
  // throttled (device memory is an order of magnitude faster).
  const bool link = kind != CopyKind::kDeviceToDevice;
  const double gbps = link ? copy_gbps_.load() : 0;
  const double latency_s = link ? copy_latency_us_.load() * 1e-6 : 0;
  std::function<void()> work = [this, link, dst, src, bytes, gbps, latency_s, snapshot] {
    const auto start = std::chrono::steady_clock::now();
    if (link) {
      const uint64_t now = link_copies_.fetch_add(1) + 1;
      uint64_t peak = peak_link_copies_.load();
      while (now > peak && !peak_link_copies_.compare_exchange_weak(peak, now)) {
      }
    }
    std::memcpy(dst, src, bytes);
    double want = latency_s;
    if (gbps > 0) want += static_cast<double>(bytes) / (gbps * 1e9);
    if (want > 0) {
      // A copy engine's time: it ends at its due time, not earlier.
      WaitUntil(start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(want)));
    }
    if (link) {
      link_copies_.fetch_sub(1);
      link_copies_done_.fetch_add(1);
    }
  };
  // Counted when queued: at each launch for a captured copy.
  SubmitEach(s, [this, s, kind, bytes, work = std::move(work)] {
    CountCopy(s, kind, bytes);
    return work;
  });
  if (sync_after) s->Synchronize();
  return Status::Ok();
}

void SimRuntime::CountCopy(const SimStream *s, CopyKind kind, size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (kind != CopyKind::kDeviceToDevice) {
    link_ways_[s] |= kind == CopyKind::kDeviceToHost ? 1 : 2;
  }
  switch (kind) {
    case CopyKind::kHostToDevice:
      ++stats_.h2d_copies;
      stats_.h2d_bytes += bytes;
      break;
    case CopyKind::kDeviceToHost:
      ++stats_.d2h_copies;
      stats_.d2h_bytes += bytes;
      break;
    case CopyKind::kDeviceToDevice:
      ++stats_.d2d_copies;
      stats_.d2d_bytes += bytes;
      break;
  }
}

bool SimRuntime::Capturing(SimStream *s) {
  std::lock_guard<std::mutex> lock(mutex_);
  return captures_.count(s) > 0;
}

void SimRuntime::SubmitEach(SimStream *s, std::function<std::function<void()>()> make) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = captures_.find(s);
    if (it != captures_.end()) {
      it->second.graph->nodes.push_back(std::move(make));
      return;
    }
  }
  s->Enqueue(make());
}

void SimRuntime::Submit(SimStream *s, std::function<void()> work) {
  SubmitEach(s, [work = std::move(work)] { return work; });
}

Status SimRuntime::StreamIsCapturing(void *stream, bool *capturing) {
  *capturing = stream != nullptr && Capturing(static_cast<SimStream *>(stream));
  return Status::Ok();
}

Status SimRuntime::BeginCapture(void *stream) {
  if (stream == nullptr) {
    return Status(infinicclInvalidArgument,
                  "the default stream cannot be captured (as CUDA's legacy stream); "
                  "capture a stream from infinicclSimStreamCreate");
  }
  if (StreamFor(stream) == nullptr) {
    return MakeStatus(infinicclInvalidArgument, "%p is not an emulated-device stream",
                      stream);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (!captures_.emplace(static_cast<SimStream *>(stream), Capture{}).second) {
    return MakeStatus(infinicclInvalidUsage, "stream %p is capturing already", stream);
  }
  return Status::Ok();
}

Status SimRuntime::EndCapture(void *stream, std::shared_ptr<SimGraph> *graph) {
  graph->reset();
  Capture capture;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = captures_.find(static_cast<SimStream *>(stream));
    if (it == captures_.end()) {
      return MakeStatus(infinicclInvalidUsage, "stream %p is not capturing", stream);
    }
    capture = std::move(it->second);
    captures_.erase(it);
  }
  if (capture.invalidated != nullptr) {
    return MakeStatus(infinicclInvalidUsage,
                      "the capture of stream %p was invalidated by %s on it; no graph made",
                      stream, capture.invalidated);
  }
  *graph = std::move(capture.graph);
  return Status::Ok();
}

Status SimRuntime::LaunchGraph(const SimGraph &graph, void *stream) {
  SimStream *s = StreamFor(stream);
  if (s == nullptr) {
    return MakeStatus(infinicclInvalidArgument, "%p is not an emulated-device stream",
                      stream);
  }
  for (const auto &make : graph.nodes) SubmitEach(s, [work = make()] { return work; });
  return Status::Ok();
}

Status SimRuntime::StreamSynchronize(void *stream) {
  SimStream *s = StreamFor(stream);
  if (s == nullptr) {
    return MakeStatus(infinicclInvalidArgument, "%p is not an emulated-device stream",
                      stream);
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = captures_.find(s);
    if (it != captures_.end()) {
      if (it->second.invalidated == nullptr) it->second.invalidated = "a synchronisation";
      return MakeStatus(infinicclInvalidUsage,
                        "stream %p is capturing: it cannot be synchronised (as "
                        "cudaStreamSynchronize); the capture is invalidated",
                        stream);
    }
  }
  s->Synchronize();
  return Status::Ok();
}

Status SimRuntime::StreamCreate(void **stream) {
  auto s = std::make_shared<SimStream>();
  std::lock_guard<std::mutex> lock(mutex_);
  SimStream *key = s.get();
  *stream = key;
  streams_.emplace(key, StreamEntry{std::move(s), t_device});
  return Status::Ok();
}

Status SimRuntime::StreamDestroy(void *stream) {
  std::shared_ptr<SimStream> s;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = streams_.find(static_cast<SimStream *>(stream));
    if (it == streams_.end()) {
      return MakeStatus(infinicclInvalidArgument, "%p is not an emulated-device stream",
                        stream);
    }
    s = std::move(it->second.stream);
    streams_.erase(it);
    captures_.erase(s.get());  // a capture still open ends with its stream
  }
  s.reset();  // drains queued work first (or the last SynchronizeAll using it does)
  return Status::Ok();
}

Status SimRuntime::EventCreate(void **event) {
  auto e = std::make_shared<SimEvent>();
  std::lock_guard<std::mutex> lock(mutex_);
  *event = e.get();
  events_.emplace(e.get(), std::move(e));
  return Status::Ok();
}

// As cudaEventDestroy: an event still recorded on a stream that has not
// reached it is freed once the stream has (the queued marker holds it).
Status SimRuntime::EventDestroy(void *event) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (events_.erase(static_cast<SimEvent *>(event)) == 0) {
    return MakeStatus(infinicclInvalidArgument, "%p is not an emulated-device event", event);
  }
  return Status::Ok();
}

std::shared_ptr<SimEvent> SimRuntime::EventFor(void *event) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = events_.find(static_cast<SimEvent *>(event));
  return it == events_.end() ? nullptr : it->second;
}

Status SimRuntime::EventRecord(void *event, void *stream) {
  return QueueEvent("EventRecord", event, stream, /*record=*/true);
}

Status SimRuntime::EventSynchronize(void *event) {
  std::shared_ptr<SimEvent> e = EventFor(event);
  if (e == nullptr) {
    return MakeStatus(infinicclInvalidArgument, "%p is not an emulated-device event", event);
  }
  e->Wait(e->Last(), kHostSyncSpin);
  return Status::Ok();
}

Status SimRuntime::EventQuery(void *event, bool *done) {
  std::shared_ptr<SimEvent> e = EventFor(event);
  if (e == nullptr) {
    return MakeStatus(infinicclInvalidArgument, "%p is not an emulated-device event", event);
  }
  *done = e->Done();
  return Status::Ok();
}

Status SimRuntime::StreamWaitEvent(void *stream, void *event) {
  return QueueEvent("StreamWaitEvent", event, stream, /*record=*/false);
}

Status SimRuntime::QueueEvent(const char *call, void *event, void *stream, bool record) {
  SimStream *s = StreamFor(stream);
  std::shared_ptr<SimEvent> e = EventFor(event);
  if (s == nullptr || e == nullptr) {
    return MakeStatus(infinicclInvalidArgument, "%s: bad event or stream", call);
  }
  // The generation is taken when the work is queued (at each launch of a
  // captured record or wait).
  if (record) {
    SubmitEach(s, [e]() -> std::function<void()> {
      return [e, generation = e->Record()] { e->Complete(generation); };
    });
  } else {
    SubmitEach(s, [e]() -> std::function<void()> {
      return [e, generation = e->Last()] { e->Wait(generation); };
    });
  }
  return Status::Ok();
}

Status SimRuntime::GateCreate(void **gate) {
  auto g = std::make_shared<HostGate>();
  std::lock_guard<std::mutex> lock(mutex_);
  *gate = g.get();
  gates_.emplace(g.get(), std::move(g));
  return Status::Ok();
}

// A stream still inside a wait keeps the gate until it leaves it.
Status SimRuntime::GateDestroy(void *gate) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (gates_.erase(static_cast<HostGate *>(gate)) == 0) {
    return MakeStatus(infinicclInvalidArgument, "%p is not an emulated-device gate", gate);
  }
  return Status::Ok();
}

Status SimRuntime::GateWait(void *stream, void *gate, uint32_t target) {
  SimStream *s = StreamFor(stream);
  std::shared_ptr<HostGate> g;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = gates_.find(static_cast<HostGate *>(gate));
    if (it != gates_.end()) g = it->second;
  }
  if (s == nullptr || g == nullptr) {
    return MakeStatus(infinicclInvalidArgument, "GateWait: bad gate or stream %p", stream);
  }
  if (!strict_.stream_memops) return HostFunc(stream, [g, target] { g->Wait(target); });
  Submit(s, [g, target] { g->Wait(target); });
  return Status::Ok();
}

void SimRuntime::GateOpen(void *gate, uint32_t value) {
  static_cast<HostGate *>(gate)->Open(value);
}

SimStats SimRuntime::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  SimStats s = stats_;
  s.peak_link_copies = peak_link_copies_.load();
  s.link_copies_done = link_copies_done_.load();
  for (const auto &entry : link_ways_) {
    ++s.link_streams;
    if (entry.second == 3) ++s.link_streams_both_ways;
  }
  for (const auto &range : registered_mem_) s.registered_bytes += range.second;
  return s;
}

void SimRuntime::ResetStats() {
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t live = stats_.live_device_bytes;
  stats_ = SimStats{};
  stats_.live_device_bytes = live;
  link_ways_.clear();
  peak_link_copies_.store(link_copies_.load());
  link_copies_done_.store(0);
}

Status SimRuntime::Kernel(void *stream, unsigned microseconds) {
  SimStream *s = StreamFor(stream);
  if (s == nullptr) {
    return MakeStatus(infinicclInvalidArgument, "%p is not an emulated-device stream",
                      stream);
  }
  Submit(s, [microseconds] {
    // A sleep, not WaitUntil's spin: a kernel runs on the device, not on a core.
    std::this_thread::sleep_for(std::chrono::microseconds(microseconds));
  });
  return Status::Ok();
}

Status SimRuntime::HostFunc(void *stream, std::function<void()> fn) {
  SimStream *s = StreamFor(stream);
  if (s == nullptr) {
    return MakeStatus(infinicclInvalidArgument, "%p is not an emulated-device stream",
                      stream);
  }
  if (!strict_.hostfn_serial) {
    Submit(s, std::move(fn));
    return Status::Ok();
  }
  // The stream hands `fn` to the device's host-function thread when it
  // reaches it, and waits there until `fn` has run.
  SimStream *serial = HostFnThread(stream);
  Submit(s, [serial, fn = std::move(fn)] {
    auto ran = std::make_shared<SimEvent>();
    const uint64_t generation = ran->Record();
    serial->Enqueue([&fn, ran, generation] {
      fn();
      ran->Complete(generation);
    });
    ran->Wait(generation);
  });
  return Status::Ok();
}

}  // namespace infiniccl
