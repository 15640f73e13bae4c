// Device-buffer variant of the collectives matrix, on the EMULATED device.
//
// Built into test_collectives_sim (ITEST_DEVICE_MIRROR defined): every
// GuardedBuffer gets a mirror in emulated device memory, guards included.
// Around each API call the host contents are uploaded, the call gets the
// device addresses (D(ptr)), and the device contents are downloaded, so the
// same independent checks (values, guards, untouched buffers) judge the
// staged path. Without ITEST_DEVICE_MIRROR, D() is the identity.
#ifndef INFINICCL_TESTS_MPI_DEVICE_MIRROR_H_
#define INFINICCL_TESTS_MPI_DEVICE_MIRROR_H_

#include "test_util.h"

#ifdef ITEST_DEVICE_MIRROR
#include <map>

#include "device/registry.h"

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
    m.device = &infiniccl::DeviceRegistry::EnableSim();
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
