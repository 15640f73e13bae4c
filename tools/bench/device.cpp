// The cpu device and buffer ownership. Runtime devices: runtime_device.cpp.
#include "device.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

namespace bench {
namespace {

constexpr size_t kAlign = 4096;

// Device memory that is host memory: copies are memcpy, nothing is async.
class CpuDevice final : public Device {
 public:
  const char *Name() const override { return "cpu"; }
  std::string Description() const override {
    return "cpu (the 'device' buffers of infiniccl_* and stage_* modes are plain "
           "host memory, the same buffers host_* modes use)";
  }
  bool HostAccessible() const override { return true; }
  bool IsHostMemory() const override { return true; }
  void *Allocate(size_t bytes) override { return HostAllocate(bytes); }
  void Free(void *p) noexcept override { HostFree(p); }
  std::string StagingHostMemory() const override { return "pageable (malloc)"; }
  void CopyToHost(void *dst, const void *src, size_t bytes) override {
    if (bytes) std::memcpy(dst, src, bytes);
  }
  void CopyFromHost(void *dst, const void *src, size_t bytes) override {
    if (bytes) std::memcpy(dst, src, bytes);
  }
  void Synchronize() override {}
  void *Stream() override { return nullptr; }
};

}  // namespace

std::unique_ptr<Device> MakeCpuDevice() {
  return std::make_unique<CpuDevice>();
}

void *HostAllocate(size_t bytes) {
  const size_t rounded = (bytes + kAlign - 1) / kAlign * kAlign;
  void *p = std::aligned_alloc(kAlign, rounded == 0 ? kAlign : rounded);
  if (!p) throw std::bad_alloc();
  return p;
}

void HostFree(void *p) noexcept {
  std::free(p);
}

Buffer::Buffer(Device *device, size_t bytes)
    : device_(device),
      where_(device ? Where::kDevice : Where::kHost),
      data_(device ? device->Allocate(bytes) : HostAllocate(bytes)),
      bytes_(bytes) {}

Buffer Buffer::HostStaging(Device *device, size_t bytes) {
  Buffer b;
  b.data_ = device ? device->AllocatePinned(bytes) : nullptr;
  if (b.data_) {
    b.device_ = device;
    b.where_ = Where::kPinned;
  } else {
    b.data_ = HostAllocate(bytes);
  }
  b.bytes_ = bytes;
  return b;
}

Buffer::~Buffer() {
  Reset();
}

Buffer::Buffer(Buffer &&other) noexcept
    : device_(other.device_),
      where_(other.where_),
      data_(std::exchange(other.data_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)) {}

Buffer &Buffer::operator=(Buffer &&other) noexcept {
  if (this != &other) {
    Reset();
    device_ = other.device_;
    where_ = other.where_;
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void Buffer::Reset() noexcept {
  if (!data_) return;
  switch (where_) {
    case Where::kDevice: device_->Free(data_); break;
    case Where::kPinned: device_->FreePinned(data_); break;
    case Where::kHost: HostFree(data_); break;
  }
  data_ = nullptr;
  bytes_ = 0;
}

}  // namespace bench
