// DeviceRegistry: the runtimes this process can use, and the one question
// route/ asks per call: what memory is this pointer?
//
// Compiled-in vendor runtimes (WITH_NVIDIA, WITH_METAX, ...) are created at
// first use; one whose driver or device is missing reports 0 devices and is
// skipped. The emulated device (sim) is never picked up by accident: it is
// enabled only by INFINICCL_DEVICE=sim or by EnableSim() (tests, benchmark).
#pragma once

#include <memory>
#include <vector>

#include "device/device_runtime.h"

namespace infiniccl {

// Factories, each defined only when its runtime is compiled in
// (src/device/cuda_like/, ascend/, cambricon/, guarded by
// INFINICCL_WITH_<VENDOR>).
std::unique_ptr<DeviceRuntime> MakeCudaRuntime();      // INFINICCL_WITH_NVIDIA
std::unique_ptr<DeviceRuntime> MakeMacaRuntime();      // INFINICCL_WITH_METAX
std::unique_ptr<DeviceRuntime> MakeIluvatarRuntime();  // INFINICCL_WITH_ILUVATAR
std::unique_ptr<DeviceRuntime> MakeMusaRuntime();      // INFINICCL_WITH_MOORE
std::unique_ptr<DeviceRuntime> MakeHipRuntime();       // INFINICCL_WITH_HIP
std::unique_ptr<DeviceRuntime> MakeAscendRuntime();    // INFINICCL_WITH_ASCEND
std::unique_ptr<DeviceRuntime> MakeCambriconRuntime(); // INFINICCL_WITH_CAMBRICON

class DeviceRegistry {
 public:
  // Runtime of `kind` if compiled in (sim: only once enabled); else nullptr.
  static DeviceRuntime *Get(DeviceKind kind);
  // Runtimes with at least one device, in a fixed order (vendors, then sim).
  static std::vector<DeviceRuntime *> Active();
  // Kinds compiled into this build (cpu and sim always).
  static std::vector<DeviceKind> Built();

  // Classifies `ptr` across the active runtimes. Host unless one claims it.
  // InvalidArgument for memory of a runtime that exists but is not enabled
  // (emulated-device memory while sim is off).
  static Status Classify(const void *ptr, PointerInfo *info);

  static DeviceRuntime &EnableSim();
  static bool SimEnabled();
  // Test hook: turns sim off again (its allocations stay tracked).
  static void DisableSim();
};

}  // namespace infiniccl
