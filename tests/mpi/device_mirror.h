// The EMULATED device (sim) in the MPI test programs that link the internal
// library.
//
// With ITEST_SIM (test_staging, test_group) or ITEST_DEVICE_MIRROR defined:
// EnableSim() and DeviceBuffer, a buffer of emulated device memory with
// upload and download.
//
// With ITEST_DEVICE_MIRROR (test_collectives_sim), the device-buffer variant
// of the collectives matrix: every GuardedBuffer gets a mirror in emulated
// device memory, guards included. Around each API call the host contents are
// uploaded, the call gets the device addresses (D(ptr)), and the device
// contents are downloaded, so the same independent checks (values, guards,
// untouched buffers) judge the staged path. Without ITEST_DEVICE_MIRROR, D()
// is the identity.
//
// With ITEST_DEVICE_VENDOR as well (test_collectives_vendor): the mirror is
// in the memory of the first vendor runtime with a device (a stand-in
// vendor library of tests/standin in the tests), not the emulated device.
#ifndef INFINICCL_TESTS_MPI_DEVICE_MIRROR_H_
#define INFINICCL_TESTS_MPI_DEVICE_MIRROR_H_

#include "test_util.h"

#if defined(ITEST_SIM) || defined(ITEST_DEVICE_MIRROR)
#include <vector>

#include "device/registry.h"
#include "device/sim/sim_runtime.h"

namespace itest {

// The emulated device, once EnableSim() has run (after infinicclInit).
inline infiniccl::SimRuntime *g_sim = nullptr;
// The device DeviceBuffer uses: the emulated one after EnableSim(), or
// whatever runtime a test sets (test_async_vendor: a stand-in vendor's).
inline infiniccl::DeviceRuntime *g_dev = nullptr;

inline infiniccl::SimRuntime &EnableSim() {
  g_sim = static_cast<infiniccl::SimRuntime *>(&infiniccl::DeviceRegistry::EnableSim());
  g_dev = g_sim;
  return *g_sim;
}

// A buffer of device memory (g_dev's), freed on scope exit.
struct DeviceBuffer {
  void *ptr = nullptr;
  size_t bytes = 0;
  explicit DeviceBuffer(size_t b) : bytes(b) { CHECK(g_dev->Malloc(&ptr, b).ok()); }
  ~DeviceBuffer() { g_dev->Free(ptr); }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  // Queues the copy of `h` on `stream` without waiting for it: `h` must
  // outlive the copy.
  void UploadAsync(const std::vector<unsigned char> &h, void *stream) {
    using infiniccl::CopyKind;
    CHECK(g_dev->MemcpyAsync(ptr, h.data(), h.size(), CopyKind::kHostToDevice, stream)
              .ok());
  }
  void Upload(const std::vector<unsigned char> &h, void *stream = nullptr) {
    UploadAsync(h, stream);
    CHECK(g_dev->StreamSynchronize(stream).ok());
  }
  // Downloads on `stream` (after whatever the stream holds) and waits.
  std::vector<unsigned char> Download(void *stream = nullptr) const {
    std::vector<unsigned char> h(bytes);
    using infiniccl::CopyKind;
    CHECK(g_dev->MemcpyAsync(h.data(), ptr, bytes, CopyKind::kDeviceToHost, stream).ok());
    CHECK(g_dev->StreamSynchronize(stream).ok());
    return h;
  }
};

inline std::vector<unsigned char> DownloadOn(const DeviceBuffer &b, void *stream) {
  return b.Download(stream);
}

}  // namespace itest
#endif

#ifdef ITEST_DEVICE_MIRROR
#include <map>

namespace itest {

struct Mirror {
  infiniccl::DeviceRuntime *device = nullptr;
  std::map<GuardedBuffer *, unsigned char *> live;  // host buffer -> device storage

  static Mirror &Get() {
    static Mirror m;
    return m;
  }
  static void Enable() {
    Mirror &m = Get();
#ifdef ITEST_DEVICE_VENDOR
    const std::vector<infiniccl::DeviceRuntime *> active =
        infiniccl::DeviceRegistry::Active();
    CHECK(!active.empty() && !active.front()->emulated(),
          "ITEST_DEVICE_VENDOR: no vendor runtime has a device");
    m.device = active.front();
#else
    m.device = &EnableSim();
#endif
    GuardedBuffer::on_create = [](GuardedBuffer *b) {
      void *p = nullptr;
      if (!Get().device->Malloc(&p, b->storage_bytes()).ok()) std::abort();
      Get().live[b] = static_cast<unsigned char *>(p);
    };
    GuardedBuffer::on_destroy = [](GuardedBuffer *b) {
      Get().device->Free(Get().live[b]);
      Get().live.erase(b);
    };
  }
  void Copy(bool to_device) {
    if (device == nullptr) return;  // a host-only rank (--host-ranks)
    for (auto &[host, dev] : live) {
      const auto kind = to_device ? infiniccl::CopyKind::kHostToDevice
                                  : infiniccl::CopyKind::kDeviceToHost;
      void *dst = to_device ? static_cast<void *>(dev) : host->storage();
      const void *src = to_device ? static_cast<const void *>(host->storage()) : dev;
      if (!device->MemcpyAsync(dst, src, host->storage_bytes(), kind, nullptr).ok()) std::abort();
    }
    device->StreamSynchronize(nullptr);
  }
  const void *Translate(const void *p) {
    const auto *c = static_cast<const unsigned char *>(p);
    for (auto &[host, dev] : live) {
      if (c >= host->storage() && c < host->storage() + host->storage_bytes()) {
        return dev + (c - host->storage());
      }
    }
    return p;
  }
};

inline void MirrorEnable() { Mirror::Enable(); }
inline void ToDevice() { Mirror::Get().Copy(true); }
inline void FromDevice() { Mirror::Get().Copy(false); }
inline void *D(void *p) { return const_cast<void *>(Mirror::Get().Translate(p)); }
inline const void *D(const void *p) { return Mirror::Get().Translate(p); }

}  // namespace itest

#else

namespace itest {
inline void MirrorEnable() {}
inline void ToDevice() {}
inline void FromDevice() {}
inline void *D(void *p) { return p; }
inline const void *D(const void *p) { return p; }
}  // namespace itest

#endif
#endif  // INFINICCL_TESTS_MPI_DEVICE_MIRROR_H_
