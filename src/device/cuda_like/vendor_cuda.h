// The CUDA runtime's names for the generic ones CudaLikeRuntime calls.
// Iluvatar CoreX implements this same API (cuda_runtime_api.h and libcudart
// from /usr/local/corex), so it uses this mapping too.
//
// Each vendor header is a name mapping only: types, constants, and one-line
// wrappers (wrappers rather than function pointers, so that C++ overloads a
// vendor header may add next to the C function never make a name ambiguous).
// The vendor's function is always kPrefix + the generic name, which is how
// error messages name the call that failed.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdio>

namespace infiniccl::cuda_like {

struct CudaApi {
  static constexpr const char *kPrefix = "cuda";

  using Error = cudaError_t;
  using Stream = cudaStream_t;
  using Event = cudaEvent_t;
  using MemcpyKind = cudaMemcpyKind;
  using PointerAttributes = cudaPointerAttributes;

  static constexpr Error kSuccess = cudaSuccess;
  static constexpr auto kMemoryTypeUnregistered = cudaMemoryTypeUnregistered;
  static constexpr auto kMemoryTypeHost = cudaMemoryTypeHost;
  static constexpr auto kMemoryTypeDevice = cudaMemoryTypeDevice;
  static constexpr auto kMemoryTypeManaged = cudaMemoryTypeManaged;
  static constexpr MemcpyKind kMemcpyHostToDevice = cudaMemcpyHostToDevice;
  static constexpr MemcpyKind kMemcpyDeviceToHost = cudaMemcpyDeviceToHost;
  static constexpr MemcpyKind kMemcpyDeviceToDevice = cudaMemcpyDeviceToDevice;
  static constexpr unsigned kEventDisableTiming = cudaEventDisableTiming;

  // cudaRuntimeGetVersion encodes 1000 * major + 10 * minor (13000 = 13.0).
  static void FormatVersion(int version, char *buf, size_t size) {
    std::snprintf(buf, size, "%d.%d", version / 1000, (version % 1000) / 10);
  }

  static const char *GetErrorString(Error e) { return cudaGetErrorString(e); }
  static Error GetLastError() { return cudaGetLastError(); }
  static Error RuntimeGetVersion(int *v) { return cudaRuntimeGetVersion(v); }
  static Error GetDeviceCount(int *n) { return cudaGetDeviceCount(n); }
  static Error GetDevice(int *d) { return cudaGetDevice(d); }
  static Error SetDevice(int d) { return cudaSetDevice(d); }
  static Error PointerGetAttributes(PointerAttributes *a, const void *p) {
    return cudaPointerGetAttributes(a, p);
  }
  static Error Malloc(void **p, size_t n) { return cudaMalloc(p, n); }
  static Error Free(void *p) { return cudaFree(p); }
  static Error MallocHost(void **p, size_t n) { return cudaMallocHost(p, n); }
  static Error FreeHost(void *p) { return cudaFreeHost(p); }
  static Error MemcpyAsync(void *dst, const void *src, size_t n, MemcpyKind k, Stream s) {
    return cudaMemcpyAsync(dst, src, n, k, s);
  }
  static Error StreamSynchronize(Stream s) { return cudaStreamSynchronize(s); }
  static Error StreamCreate(Stream *s) { return cudaStreamCreate(s); }
  static Error StreamDestroy(Stream s) { return cudaStreamDestroy(s); }
  static Error EventCreateWithFlags(Event *e, unsigned f) {
    return cudaEventCreateWithFlags(e, f);
  }
  static Error EventDestroy(Event e) { return cudaEventDestroy(e); }
  static Error EventRecord(Event e, Stream s) { return cudaEventRecord(e, s); }
  static Error EventSynchronize(Event e) { return cudaEventSynchronize(e); }
  static Error StreamWaitEvent(Stream s, Event e, unsigned f) {
    return cudaStreamWaitEvent(s, e, f);
  }
};

}  // namespace infiniccl::cuda_like
