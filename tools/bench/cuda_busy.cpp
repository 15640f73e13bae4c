// A busy kernel on an NVIDIA GPU for the overlap mode: one thread spinning
// on the GPU's global timer for the given time, so the compute stream is
// held by the device itself, as a training step's kernels hold it. The
// kernel is PTX, compiled by the driver when first launched (no nvcc at
// build time); the driver's module calls are reached through the CUDA
// runtime's entry-point lookup, as the library reaches cuStreamWaitValue32.
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <mutex>
#include <string>

#include "device.h"
#include "device/cuda_like/cuda_driver_entry.h"

namespace bench {
namespace {

constexpr char kBusyPtx[] = R"(
.version 7.0
.target sm_75
.address_size 64

.visible .entry infiniccl_bench_busy(.param .u64 ns)
{
  .reg .pred %p;
  .reg .u64 %t0, %t1, %d, %lim;
  ld.param.u64 %lim, [ns];
  mov.u64 %t0, %globaltimer;
BUSY:
  mov.u64 %t1, %globaltimer;
  sub.u64 %d, %t1, %t0;
  setp.lt.u64 %p, %d, %lim;
  @%p bra BUSY;
  ret;
}
)";

using infiniccl::CudaDriverEntry;
using LoadDataFn = CUresult (*)(CUmodule *, const void *);
using GetFunctionFn = CUresult (*)(CUfunction *, CUmodule, const char *);
using LaunchFn = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, unsigned, CUstream, void **, void **);

}  // namespace

std::string CudaBusyKernel(void *stream, unsigned microseconds) {
  // One module per process: the bench drives one device per rank.
  static std::once_flag once;
  static std::string error;
  static CUfunction busy = nullptr;
  static LaunchFn launch = nullptr;
  std::call_once(once, [] {
    const auto load = reinterpret_cast<LoadDataFn>(CudaDriverEntry("cuModuleLoadData"));
    const auto get = reinterpret_cast<GetFunctionFn>(CudaDriverEntry("cuModuleGetFunction"));
    launch = reinterpret_cast<LaunchFn>(CudaDriverEntry("cuLaunchKernel"));
    if (load == nullptr || get == nullptr || launch == nullptr) {
      error = "the CUDA driver's cuModuleLoadData/cuModuleGetFunction/cuLaunchKernel "
              "were not found";
      return;
    }
    cudaFree(nullptr);  // the device's primary context, current on this thread
    CUmodule module = nullptr;
    CUresult rc = load(&module, kBusyPtx);
    if (rc == CUDA_SUCCESS) rc = get(&busy, module, "infiniccl_bench_busy");
    if (rc != CUDA_SUCCESS) error = "the busy kernel's PTX did not load: CUresult " +
                                    std::to_string(static_cast<int>(rc));
  });
  if (!error.empty()) return error;
  unsigned long long ns = 1000ULL * microseconds;
  void *params[] = {&ns};
  const CUresult rc = launch(busy, 1, 1, 1, 1, 1, 1, 0, static_cast<CUstream>(stream),
                             params, nullptr);
  if (rc != CUDA_SUCCESS) return "cuLaunchKernel: CUresult " + std::to_string(static_cast<int>(rc));
  return "";
}

}  // namespace bench
