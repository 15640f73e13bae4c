// Where the benchmark's "device" buffers live. This build has only the cpu
// device, whose memory is plain host memory; an accelerator adds a subclass
// (allocate/copy/synchronise through its runtime) and an entry in
// MakeDevice, and every mode works on it unchanged.
#ifndef INFINICCL_BENCH_DEVICE_H_
#define INFINICCL_BENCH_DEVICE_H_

#include <cstddef>
#include <memory>
#include <string>

namespace bench {

class Device {
 public:
  virtual ~Device() = default;
  virtual const char *Name() const = 0;
  // Whether the CPU may read and write this device's memory directly.
  virtual bool HostAccessible() const = 0;
  // Whether its memory is ordinary host memory, so that host_* and
  // infiniccl_* modes can run side by side on the very same buffers.
  virtual bool IsHostMemory() const = 0;
  // Throws std::bad_alloc (or a BenchError) on failure.
  virtual void *Allocate(size_t bytes) = 0;
  virtual void Free(void *p) noexcept = 0;
  // Copies ordered on Stream(); complete after Synchronize().
  virtual void CopyToHost(void *host_dst, const void *dev_src, size_t bytes) = 0;
  virtual void CopyFromHost(void *dev_dst, const void *host_src, size_t bytes) = 0;
  virtual void Synchronize() = 0;
  // The stream handed to infiniccl calls (nullptr for the cpu device).
  virtual void *Stream() = 0;
};

// "cpu" only in this build; nullptr and *error set otherwise.
std::unique_ptr<Device> MakeDevice(const std::string &name, std::string *error);
const char *DeviceNames();  // for --help

// Host memory: page-aligned so results do not depend on malloc's luck.
void *HostAllocate(size_t bytes);
void HostFree(void *p) noexcept;

// Owns one allocation on a device (device != nullptr) or on the host.
class Buffer {
 public:
  Buffer() = default;
  Buffer(Device *device, size_t bytes);
  ~Buffer();
  Buffer(Buffer &&other) noexcept;
  Buffer &operator=(Buffer &&other) noexcept;
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;

  void *data() const { return data_; }
  size_t bytes() const { return bytes_; }

 private:
  void Reset() noexcept;
  Device *device_ = nullptr;
  void *data_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace bench

#endif  // INFINICCL_BENCH_DEVICE_H_
