// The CUDA runtime API (cuda_runtime_api.h, libcudart): NVIDIA CUDA, and
// Iluvatar CoreX, whose runtime implements the same API under the same names
// (its own cuda_runtime_api.h and libcudart, from /usr/local/corex) and so is
// CudaLikeRuntime over this mapping, reporting itself as "iluvatar".
// cmake/Devices.cmake never enables both: the libraries define the same
// cuda* symbols.
#if defined(INFINICCL_WITH_NVIDIA) || defined(INFINICCL_WITH_ILUVATAR)

#include <cuda.h>  // types and constants only: the driver is reached through the runtime
#include <cuda_runtime_api.h>

#include <memory>
#include <string>

#include "device/cuda_like/cuda_driver_entry.h"
#include "device/cuda_like/cuda_like_runtime.h"
#include "device/registry.h"

namespace infiniccl {

namespace {

struct CudaApi {
  INFINICCL_CUDA_LIKE_API(cuda, cudaPointerAttributes)

  // Stream capture (cudaStreamBeginCapture, torch.cuda.graph).
  static Error StreamIsCapturing(Stream s, bool *capturing) {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    const Error e = cudaStreamIsCapturing(s, &status);
    *capturing = status != cudaStreamCaptureStatusNone;
    return e;
  }

  // cudaRuntimeGetVersion encodes 1000 * major + 10 * minor (13000 = 13.0).
  static void FormatVersion(int version, char *buf, size_t size) {
    std::snprintf(buf, size, "%d.%d", version / 1000, (version % 1000) / 10);
  }

  // Gates by stream memory operations (DeviceRuntime::GateWait): the
  // counter lives in mapped page-locked memory and the stream waits with
  // cuStreamWaitValue32(GEQ), a driver function reached through the
  // runtime's entry-point query, so the library never links libcuda.
  static constexpr const char *kWaitValue32 = "cuStreamWaitValue32";
  using WaitValueFn = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned);
  using AttributeFn = CUresult (*)(int *, CUdevice_attribute, CUdevice);

  static WaitValueFn WaitValueEntry() {
    static const auto fn = reinterpret_cast<WaitValueFn>(CudaDriverEntry(kWaitValue32));
    return fn;
  }

  // Whether the driver takes stream memory operations on `device`:
  // CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS (92; named _V1 since CUDA
  // 11.7), which drivers loaded without NVreg_EnableStreamMemOPs report as 0
  // even on CUDA 12, then one real wait that is already satisfied.
  static bool WaitValue32Usable(int device, std::string *why) {
    auto attribute = reinterpret_cast<AttributeFn>(CudaDriverEntry("cuDeviceGetAttribute"));
    if (WaitValueEntry() == nullptr || attribute == nullptr) {
      *why = "cuStreamWaitValue32 not found in the driver";
      return false;
    }
    int can = 0;
    if (attribute(&can, static_cast<CUdevice_attribute>(92), device) != CUDA_SUCCESS ||
        !can) {
      *why = "the driver reports CAN_USE_STREAM_MEM_OPS = 0 (NVreg_EnableStreamMemOPs=0)";
      return false;
    }
    void *word = nullptr;
    uint64_t dev = 0;
    cudaStream_t s = nullptr;
    bool ok = MappedWord(&word, &dev).ok() &&
              cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess &&
              WaitValue32(s, dev, 0).ok() && cudaStreamSynchronize(s) == cudaSuccess;
    if (s != nullptr) cudaStreamDestroy(s);
    if (word != nullptr) cudaFreeHost(word);
    cudaGetLastError();
    if (!ok) *why = "a test cuStreamWaitValue32 failed";
    return ok;
  }
  static Status MappedWord(void **word, uint64_t *device_word) {
    *word = nullptr;
    void *dev = nullptr;
    if (cudaHostAlloc(word, 64, cudaHostAllocMapped | cudaHostAllocPortable) != cudaSuccess ||
        cudaHostGetDevicePointer(&dev, *word, 0) != cudaSuccess) {
      const cudaError_t err = cudaGetLastError();
      if (*word != nullptr) cudaFreeHost(*word);
      *word = nullptr;
      return MakeStatus(infinicclSystemError, "mapped gate word: %s",
                        cudaGetErrorString(err));
    }
    *static_cast<uint32_t *>(*word) = 0;
    *device_word = reinterpret_cast<uint64_t>(dev);
    return Status::Ok();
  }
  static Status WaitValue32(cudaStream_t stream, uint64_t device_word, uint32_t target) {
    const CUresult r = WaitValueEntry()(reinterpret_cast<CUstream>(stream),
                                        static_cast<CUdeviceptr>(device_word), target,
                                        CU_STREAM_WAIT_VALUE_GEQ);
    if (r == CUDA_SUCCESS) return Status::Ok();
    return MakeStatus(infinicclSystemError, "cuStreamWaitValue32 failed (CUresult %d)",
                      static_cast<int>(r));
  }
};

}  // namespace

#ifdef INFINICCL_WITH_NVIDIA
std::unique_ptr<DeviceRuntime> MakeCudaRuntime() {
  return std::make_unique<cuda_like::CudaLikeRuntime<CudaApi>>(DeviceKind::kCuda, "cuda");
}
#else
std::unique_ptr<DeviceRuntime> MakeIluvatarRuntime() {
  return std::make_unique<cuda_like::CudaLikeRuntime<CudaApi>>(DeviceKind::kIluvatar,
                                                               "iluvatar");
}
#endif

}  // namespace infiniccl

#endif  // INFINICCL_WITH_NVIDIA || INFINICCL_WITH_ILUVATAR
