// The CUDA runtime API (cuda_runtime_api.h, libcudart): NVIDIA CUDA, and
// Iluvatar CoreX, whose runtime implements the same API under the same names
// (its own cuda_runtime_api.h and libcudart, from /usr/local/corex) and so is
// CudaLikeRuntime over this mapping, reporting itself as "iluvatar".
// cmake/Devices.cmake never enables both: the libraries define the same
// cuda* symbols.
#if defined(INFINICCL_WITH_NVIDIA) || defined(INFINICCL_WITH_ILUVATAR)

#include <cuda_runtime_api.h>

#include <memory>

#include "device/cuda_like/cuda_like_runtime.h"
#include "device/registry.h"

namespace infiniccl {

namespace {

struct CudaApi {
  INFINICCL_CUDA_LIKE_API(cuda, cudaPointerAttributes)

  // cudaRuntimeGetVersion encodes 1000 * major + 10 * minor (13000 = 13.0).
  static void FormatVersion(int version, char *buf, size_t size) {
    std::snprintf(buf, size, "%d.%d", version / 1000, (version % 1000) / 10);
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
