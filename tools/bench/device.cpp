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
  bool HostAccessible() const override { return true; }
  bool IsHostMemory() const override { return true; }
  void *Allocate(size_t bytes) override { return HostAllocate(bytes); }
  void Free(void *p) noexcept override { HostFree(p); }
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

std::unique_ptr<Device> MakeDevice(const std::string &name, std::string *error) {
  if (name == "cpu") return std::make_unique<CpuDevice>();
  *error = "device " + name +
           " not available in this build (available: " + DeviceNames() + ")";
  return nullptr;
}

const char *DeviceNames() {
  return "cpu";
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
      data_(device ? device->Allocate(bytes) : HostAllocate(bytes)),
      bytes_(bytes) {}

Buffer::~Buffer() {
  Reset();
}

Buffer::Buffer(Buffer &&other) noexcept
    : device_(other.device_),
      data_(std::exchange(other.data_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)) {}

Buffer &Buffer::operator=(Buffer &&other) noexcept {
  if (this != &other) {
    Reset();
    device_ = other.device_;
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void Buffer::Reset() noexcept {
  if (!data_) return;
  if (device_)
    device_->Free(data_);
  else
    HostFree(data_);
  data_ = nullptr;
  bytes_ = 0;
}

}  // namespace bench
