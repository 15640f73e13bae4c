// Test-only entry points into the EMULATED device (sim), so the Python tests
// can allocate "device" arrays and drive the staging path. Built into
// libinfiniccl_pysim.so, a copy of libinfiniccl with these four functions
// added (the installed library exports only the public API); the tests load
// it through INFINICCL_LIBRARY.
#include <cstddef>

#include "device/registry.h"
#include "device/sim/sim_runtime.h"

namespace {

infiniccl::DeviceRuntime *Sim() {
  return infiniccl::DeviceRegistry::Get(infiniccl::DeviceKind::kSim);
}

}  // namespace

#define PYSIM_API extern "C" __attribute__((visibility("default")))

// 0 on success, -1 when INFINICCL_DEVICE=sim did not enable the device, 1 when
// the runtime refused.
PYSIM_API int infinicclTestSimMalloc(void **ptr, size_t bytes) {
  if (Sim() == nullptr) return -1;
  return Sim()->Malloc(ptr, bytes).ok() ? 0 : 1;
}

PYSIM_API int infinicclTestSimFree(void *ptr) {
  if (Sim() == nullptr) return -1;
  return Sim()->Free(ptr).ok() ? 0 : 1;
}

// Synchronous copy; to_device selects host->device or device->host.
PYSIM_API int infinicclTestSimCopy(void *dst, const void *src, size_t bytes, int to_device) {
  if (Sim() == nullptr) return -1;
  const auto kind = to_device ? infiniccl::CopyKind::kHostToDevice
                              : infiniccl::CopyKind::kDeviceToHost;
  if (!Sim()->MemcpyAsync(dst, src, bytes, kind, nullptr).ok()) return 1;
  return Sim()->StreamSynchronize(nullptr).ok() ? 0 : 1;
}
