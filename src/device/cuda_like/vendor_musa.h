// Moore Threads MUSA's names (musa*, from musa_runtime_api.h under
// $MUSA_PATH or /usr/local/musa/include) for the generic ones CudaLikeRuntime
// calls. See vendor_cuda.h for the shape of a mapping.
//
// Written from MUSA's documented API and from open-source code that calls it
// (torch_musa, FlagCX's MUSA adaptor); not yet built or run against a MUSA
// SDK or a Moore Threads device.
#pragma once

#include <musa_runtime_api.h>

#include <cstddef>
#include <cstdio>

namespace infiniccl::cuda_like {

struct MusaApi {
  static constexpr const char *kPrefix = "musa";

  using Error = musaError_t;
  using Stream = musaStream_t;
  using Event = musaEvent_t;
  using MemcpyKind = musaMemcpyKind;
  using PointerAttributes = musaPointerAttributes;

  static constexpr Error kSuccess = musaSuccess;
  static constexpr auto kMemoryTypeUnregistered = musaMemoryTypeUnregistered;
  static constexpr auto kMemoryTypeHost = musaMemoryTypeHost;
  static constexpr auto kMemoryTypeDevice = musaMemoryTypeDevice;
  static constexpr auto kMemoryTypeManaged = musaMemoryTypeManaged;
  static constexpr MemcpyKind kMemcpyHostToDevice = musaMemcpyHostToDevice;
  static constexpr MemcpyKind kMemcpyDeviceToHost = musaMemcpyDeviceToHost;
  static constexpr MemcpyKind kMemcpyDeviceToDevice = musaMemcpyDeviceToDevice;
  static constexpr unsigned kEventDisableTiming = musaEventDisableTiming;

  // MUSA's version encoding is not documented where we could read it: print
  // the raw integer rather than guess.
  static void FormatVersion(int version, char *buf, size_t size) {
    std::snprintf(buf, size, "%d", version);
  }

  static const char *GetErrorString(Error e) { return musaGetErrorString(e); }
  static Error GetLastError() { return musaGetLastError(); }
  static Error RuntimeGetVersion(int *v) { return musaRuntimeGetVersion(v); }
  static Error GetDeviceCount(int *n) { return musaGetDeviceCount(n); }
  static Error GetDevice(int *d) { return musaGetDevice(d); }
  static Error SetDevice(int d) { return musaSetDevice(d); }
  static Error PointerGetAttributes(PointerAttributes *a, const void *p) {
    return musaPointerGetAttributes(a, p);
  }
  static Error Malloc(void **p, size_t n) { return musaMalloc(p, n); }
  static Error Free(void *p) { return musaFree(p); }
  static Error MallocHost(void **p, size_t n) { return musaMallocHost(p, n); }
  static Error FreeHost(void *p) { return musaFreeHost(p); }
  static Error MemcpyAsync(void *dst, const void *src, size_t n, MemcpyKind k, Stream s) {
    return musaMemcpyAsync(dst, src, n, k, s);
  }
  static Error StreamSynchronize(Stream s) { return musaStreamSynchronize(s); }
  static Error StreamCreate(Stream *s) { return musaStreamCreate(s); }
  static Error StreamDestroy(Stream s) { return musaStreamDestroy(s); }
  static Error EventCreateWithFlags(Event *e, unsigned f) {
    return musaEventCreateWithFlags(e, f);
  }
  static Error EventDestroy(Event e) { return musaEventDestroy(e); }
  static Error EventRecord(Event e, Stream s) { return musaEventRecord(e, s); }
  static Error EventSynchronize(Event e) { return musaEventSynchronize(e); }
  static Error StreamWaitEvent(Stream s, Event e, unsigned f) {
    return musaStreamWaitEvent(s, e, f);
  }
};

}  // namespace infiniccl::cuda_like
