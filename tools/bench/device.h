// Where the benchmark's "device" buffers live. `cpu` is plain host memory;
// every other device is a runtime of the library's DeviceRegistry (cuda,
// metax, ..., and sim, the emulated device), driven through DeviceRuntime:
// Malloc/Free, MallocHost, MemcpyAsync on one stream, StreamSynchronize.
// Every mode works unchanged on any of them.
#ifndef INFINICCL_BENCH_DEVICE_H_
#define INFINICCL_BENCH_DEVICE_H_

#include <cstddef>
#include <memory>
#include <string>

namespace bench {

#ifdef INFINICCL_BENCH_CUDA_BUSY
// Queues a kernel that keeps an NVIDIA GPU busy for `microseconds` on
// `stream` (a cudaStream_t); "" when queued, else why not (cuda_busy.cpp).
std::string CudaBusyKernel(void *stream, unsigned microseconds);
#endif

class Device {
 public:
  virtual ~Device() = default;
  virtual const char *Name() const = 0;
  // The header's device line, e.g. "sim (emulated device; ...)".
  virtual std::string Description() const = 0;
  // Whether the CPU may read and write this device's memory directly.
  virtual bool HostAccessible() const = 0;
  // Whether its memory is ordinary host memory, so that host_* and
  // infiniccl_* modes can run side by side on the very same buffers.
  virtual bool IsHostMemory() const = 0;
  // Called once infinicclCommInitAll has bound this rank to a device:
  // creates the stream and probes pinned host memory. Throws BenchError.
  virtual void Open() {}
  // Throws std::bad_alloc (or a BenchError) on failure.
  virtual void *Allocate(size_t bytes) = 0;
  virtual void Free(void *p) noexcept = 0;
  // Page-locked host memory (MallocHost) for staging buffers that are reused;
  // nullptr when the device offers none (the caller then uses malloc).
  virtual void *AllocatePinned(size_t /*bytes*/) { return nullptr; }
  virtual void FreePinned(void * /*p*/) noexcept {}
  // What stage_reuse_* host buffers are, for the header.
  virtual std::string StagingHostMemory() const = 0;
  // Copies ordered on Stream(); complete after Synchronize().
  virtual void CopyToHost(void *host_dst, const void *dev_src, size_t bytes) = 0;
  virtual void CopyFromHost(void *dev_dst, const void *host_src, size_t bytes) = 0;
  virtual void Synchronize() = 0;
  // The stream handed to infiniccl calls (nullptr for the cpu device).
  virtual void *Stream() = 0;

  // The overlap mode: streams of its own, events, and a kernel that holds a
  // stream for a given time. Empty when this device can run it, else why
  // not. The others throw BenchError where unsupported.
  virtual std::string OverlapUnsupported() const {
    return "needs device streams and kernels: use --device sim (EMULATED kernels)";
  }
  virtual void *NewStream() { return nullptr; }
  virtual void DeleteStream(void * /*stream*/) noexcept {}
  virtual void SynchronizeStream(void * /*stream*/) {}
  virtual void *NewEvent() { return nullptr; }
  virtual void DeleteEvent(void * /*event*/) noexcept {}
  virtual void RecordEvent(void * /*event*/, void * /*stream*/) {}
  virtual void WaitEvent(void * /*stream*/, void * /*event*/) {}
  // Holds `stream` for `microseconds`: infinicclSimKernel on the emulated
  // device, a busy kernel on an NVIDIA GPU (cuda_busy.cpp).
  virtual void Kernel(void * /*stream*/, unsigned /*microseconds*/) {}
  virtual void CopyFromHostOn(void * /*stream*/, void * /*dev_dst*/,
                              const void * /*host_src*/, size_t /*bytes*/) {}
};

// `name` is cpu, a vendor name (cuda, metax, iluvatar, moore), sim, or empty
// for the default: the first vendor runtime with a device, else sim when
// INFINICCL_DEVICE=sim enables it, else cpu. `sim` enables the emulated
// device (DeviceRegistry::EnableSim), so call this before
// infinicclCommInitAll. nullptr and *error set when the device is not built
// in or has no device.
std::unique_ptr<Device> MakeDevice(const std::string &name, std::string *error);
std::string DeviceNames();  // for --help: the devices this build knows
std::unique_ptr<Device> MakeCpuDevice();

// Host memory: page-aligned so results do not depend on malloc's luck.
void *HostAllocate(size_t bytes);
void HostFree(void *p) noexcept;

// Owns one allocation: on a device, on the host, or (HostStaging) on the
// host pinned by the device when it can.
class Buffer {
 public:
  Buffer() = default;
  Buffer(Device *device, size_t bytes);  // device == nullptr: host
  // Pinned through `device` when it offers pinned memory, else HostAllocate.
  static Buffer HostStaging(Device *device, size_t bytes);
  ~Buffer();
  Buffer(Buffer &&other) noexcept;
  Buffer &operator=(Buffer &&other) noexcept;
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;

  void *data() const { return data_; }
  size_t bytes() const { return bytes_; }

 private:
  enum class Where { kHost, kDevice, kPinned };
  void Reset() noexcept;
  Device *device_ = nullptr;
  Where where_ = Where::kHost;
  void *data_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace bench

#endif  // INFINICCL_BENCH_DEVICE_H_
