// SimRuntime: an EMULATED device for machines without an accelerator.
//
// Its "device memory" is host memory that the runtime tracks, so Classify
// reports it as device memory and the library must move it with MemcpyAsync,
// exactly as it would real device memory. Each stream has a worker thread (an
// emulated copy engine): copies are asynchronous and overlap with the caller,
// and INFINICCL_SIM_COPY_GBPS / INFINICCL_SIM_COPY_LATENCY_US throttle them
// to a PCIe-like bandwidth and fixed cost: the copy thread sleeps, then spins
// for the last 150 us so that a copy ends on time (so each throttled copy
// costs up to 150 us of CPU). It counts copies, bytes and allocations for
// tests, and can inject copy failures.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "device/device_runtime.h"

namespace infiniccl {

class HostGate;
class SimEvent;
class SimStream;

// A stream's work recorded by a capture (as a CUDA graph): each node makes,
// at every launch, the work it queues there (an event record takes a new
// generation then; a copy or kernel is the same work each time).
struct SimGraph {
  std::vector<std::function<std::function<void()>()>> nodes;
};

struct SimStats {
  uint64_t device_allocs = 0, device_frees = 0;
  uint64_t host_allocs = 0, host_frees = 0;  // pinned host
  uint64_t d2h_copies = 0, d2h_bytes = 0;
  uint64_t h2d_copies = 0, h2d_bytes = 0;
  uint64_t d2d_copies = 0, d2d_bytes = 0;
  uint64_t live_device_bytes = 0;
  // The most copies over the host link (device to host, host to device)
  // that ran at once: 2 where a pipeline's copy in and copy out overlap.
  uint64_t peak_link_copies = 0;
  // Copies over the host link that have ended (the counts above are taken
  // when a copy is queued): equal to d2h_copies + h2d_copies once every
  // queued copy is done.
  uint64_t link_copies_done = 0;
  // The streams that carried copies over the host link (queued), and those
  // among them that carried copies both ways: a pipeline whose copies in and
  // out may overlap has them on streams of one direction each.
  uint64_t link_streams = 0, link_streams_both_ways = 0;
  uint64_t registered_bytes = 0;  // host memory page-locked now (HostRegister)
};

// What the emulated device enforces of a GPU's rules (INFINICCL_SIM_*,
// docs/CONFIG.md). All on by default: an emulator forgives nothing a GPU
// does not, so code that passes on it does not hang on a GPU.
struct SimStrict {
  // Host functions of a device run one at a time on one thread (CUDA, HIP).
  bool hostfn_serial = true;
  // A device-to-host copy into pageable memory returns once done; a
  // host-to-device copy from pageable memory reads its source when called.
  bool pageable_sync = true;
  // Malloc, MallocHost, Free and FreeHost wait for every stream.
  bool implicit_sync = true;
  // Gates by a stream wait (as cuStreamWaitValue32); false: by a host
  // function (as cudaLaunchHostFunc), the only mechanism of some runtimes.
  bool stream_memops = true;
};

// Not final: tests wrap its calls (unit_engine watches its gates open).
class SimRuntime : public DeviceRuntime {
 public:
  // `copy_latency_us`: the fixed cost of each host<->device copy (a real
  // copy engine's launch and completion), on top of bytes / bandwidth.
  SimRuntime(int device_count, double copy_gbps, bool pinned_available,
             double copy_latency_us = 0, SimStrict strict = SimStrict{});
  ~SimRuntime() override;

  DeviceKind kind() const override { return DeviceKind::kSim; }
  const char *description() const override { return "sim (emulated device)"; }
  bool emulated() const override { return true; }
  // Its own chunk sweep (docs/PERFORMANCE.md, "Device buffers on the emulated device") chose 4 MiB.
  size_t DefaultChunkBytes() const override { return size_t{4} << 20; }

  int DeviceCount() override { return device_count_; }
  Status GetDevice(int *device) override;
  Status SetDevice(int device) override;

  Status Classify(const void *ptr, PointerInfo *info) override;
  // True if `ptr` lies in memory this runtime handed out (for the registry's
  // "device memory of a runtime that is not enabled" check).
  bool Owns(const void *ptr) const;
  bool HasAllocations() const { return live_allocs_.load(std::memory_order_relaxed) > 0; }

  Status Malloc(void **ptr, size_t bytes) override;
  Status Free(void *ptr) override;
  Status MallocHost(void **ptr, size_t bytes) override;
  Status FreeHost(void *ptr) override;
  // As cudaHostRegister: the range counts as pinned for the strict pageable
  // rules until HostUnregister (INFINICCL_SIM_PINNED=0: NotSupported).
  Status HostRegister(void *ptr, size_t bytes) override;
  Status HostUnregister(void *ptr) override;

  Status MemcpyAsync(void *dst, const void *src, size_t bytes, CopyKind kind,
                     void *stream) override;
  // A capturing stream: InvalidUsage, as cudaStreamSynchronize (and the
  // capture is invalidated).
  Status StreamSynchronize(void *stream) override;
  Status StreamIsCapturing(void *stream, bool *capturing) override;
  Status StreamCreate(void **stream) override;
  Status StreamDestroy(void *stream) override;

  Status EventCreate(void **event) override;
  Status EventDestroy(void *event) override;
  Status EventRecord(void *event, void *stream) override;
  Status EventSynchronize(void *event) override;
  // *done: the stream has reached the event's last record (true when it
  // was never recorded).
  Status EventQuery(void *event, bool *done);
  Status StreamWaitEvent(void *stream, void *event) override;

  // A gate wait is a work item of the stream that blocks its worker (the
  // emulated copy engine) until the gate is opened; without stream memory
  // operations, a host function that blocks until then.
  const char *GateMechanism() override {
    return strict_.stream_memops ? "emulated stream wait" : "emulated host function";
  }
  bool GateIsHostFunction() override { return !strict_.stream_memops; }
  bool HostFunctionsSerialized() const override { return strict_.hostfn_serial; }
  Status GateCreate(void **gate) override;
  Status GateDestroy(void *gate) override;
  Status GateWait(void *stream, void *gate, uint32_t target) override;
  void GateOpen(void *gate, uint32_t value) override;

  // Test hooks.
  SimStats stats() const;
  void ResetStats();
  void SetCopyGbps(double gbps) { copy_gbps_.store(gbps); }
  void SetCopyLatencyUs(double us) { copy_latency_us_.store(us); }
  void SetPinnedAvailable(bool available) { pinned_available_.store(available); }
  // The next `n` MemcpyAsync calls fail with SystemError (nothing copied).
  void FailNextCopies(int n) { fail_copies_.store(n); }

  // An emulated kernel (infinicclSimKernel): holds `stream` for
  // `microseconds`; its worker sleeps, so it costs no CPU.
  Status Kernel(void *stream, unsigned microseconds);
  // Runs `fn` once the stream reaches it, and the stream goes on once `fn`
  // returned (as cudaLaunchHostFunc): on the device's one host-function
  // thread (SimStrict::hostfn_serial), else on the stream's worker. The
  // public sim API frees events with it.
  Status HostFunc(void *stream, std::function<void()> fn);
  const SimStrict &strict() const { return strict_; }

  // Stream capture, as cudaStreamBeginCapture / EndCapture / GraphLaunch:
  // while a stream captures, the work queued on it (copies, kernels, event
  // records and waits, gates, host functions) is recorded into a graph, not
  // run. Not on the default stream (as CUDA's legacy stream). A
  // synchronisation of the capturing stream invalidates the capture:
  // EndCapture then fails and makes no graph.
  Status BeginCapture(void *stream);
  Status EndCapture(void *stream, std::shared_ptr<SimGraph> *graph);
  // Queues the graph's work on `stream` (which may itself be capturing).
  Status LaunchGraph(const SimGraph &graph, void *stream);

 private:
  struct Allocation {
    size_t bytes;
    int device;
  };
  SimStream *StreamFor(void *stream);
  // Queues on `s` the work `make` returns, or records `make` into the graph
  // of the capture `s` is in.
  void SubmitEach(SimStream *s, std::function<std::function<void()>()> make);
  // `work` the same at every launch.
  void Submit(SimStream *s, std::function<void()> work);
  // The stats of one copy.
  void CountCopy(const SimStream *s, CopyKind kind, size_t bytes);
  bool Capturing(SimStream *s);
  // Waits for every stream (Free's implicit synchronisation).
  void SynchronizeAll();
  // Whether [p, p+bytes) lies in pinned memory of this runtime (mutex_ held).
  bool IsPinnedLocked(const void *p, size_t bytes) const;
  // The host-function thread of the device `stream` belongs to.
  SimStream *HostFnThread(void *stream);
  // EventRecord (`record`: a new generation, complete when the stream reaches
  // it) and StreamWaitEvent (the stream waits for the last one recorded).
  Status QueueEvent(const char *call, void *event, void *stream, bool record);
  // The live event `event` names, or nullptr.
  std::shared_ptr<SimEvent> EventFor(void *event);
  // Device memory range check: the allocation containing [p, p+bytes).
  bool FindDevice(const void *p, size_t bytes, int *device) const;

  const int device_count_;
  std::atomic<double> copy_gbps_;
  std::atomic<double> copy_latency_us_;
  std::atomic<bool> pinned_available_;
  std::atomic<int> fail_copies_{0};
  std::atomic<int64_t> live_allocs_{0};

  mutable std::mutex mutex_;
  const SimStrict strict_;
  std::map<uintptr_t, Allocation> device_mem_;  // base -> allocation
  std::map<uintptr_t, size_t> pinned_mem_;      // base -> bytes
  std::map<uintptr_t, size_t> registered_mem_;  // base -> bytes (HostRegister)
  // Shared: SynchronizeAll waits on streams outside mutex_ while
  // StreamDestroy may drop them.
  struct StreamEntry {
    std::shared_ptr<SimStream> stream;
    int device;
  };
  std::map<SimStream *, StreamEntry> streams_;
  std::map<int, std::unique_ptr<SimStream>> hostfn_threads_;  // by device
  std::map<SimEvent *, std::shared_ptr<SimEvent>> events_;
  std::map<HostGate *, std::shared_ptr<HostGate>> gates_;
  std::unique_ptr<SimStream> default_stream_;
  struct Capture {
    std::shared_ptr<SimGraph> graph = std::make_shared<SimGraph>();
    const char *invalidated = nullptr;  // what invalidated it
  };
  std::map<SimStream *, Capture> captures_;
  SimStats stats_;
  std::map<const SimStream *, int> link_ways_;  // per stream: 1 device to host, 2 back
  std::atomic<uint64_t> link_copies_{0}, peak_link_copies_{0};  // running, and the most
  std::atomic<uint64_t> link_copies_done_{0};
};

}  // namespace infiniccl
