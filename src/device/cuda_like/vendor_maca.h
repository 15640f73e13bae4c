// MetaX MACA's names (mc*, from mcr/mc_runtime_api.h under $MACA_PATH or
// /opt/maca/include) for the generic ones CudaLikeRuntime calls. See
// vendor_cuda.h for the shape of a mapping.
//
// Written from MACA's documented API and from open-source code that calls it
// (UCC's MACA memory component, FlagCX's MetaX adaptor); not yet built or run
// against a MACA SDK or a MetaX device.
#pragma once

#if __has_include(<mcr/mc_runtime_api.h>)
#include <mcr/mc_runtime_api.h>
#else
#include <mc_runtime_api.h>  // include path that already ends in include/mcr
#endif

#include <cstddef>
#include <cstdio>

namespace infiniccl::cuda_like {

struct MacaApi {
  static constexpr const char *kPrefix = "mc";

  using Error = mcError_t;
  using Stream = mcStream_t;
  using Event = mcEvent_t;
  using MemcpyKind = mcMemcpyKind;
  using PointerAttributes = mcPointerAttribute_t;

  static constexpr Error kSuccess = mcSuccess;
  static constexpr auto kMemoryTypeUnregistered = mcMemoryTypeUnregistered;
  static constexpr auto kMemoryTypeHost = mcMemoryTypeHost;
  static constexpr auto kMemoryTypeDevice = mcMemoryTypeDevice;
  static constexpr auto kMemoryTypeManaged = mcMemoryTypeManaged;
  static constexpr MemcpyKind kMemcpyHostToDevice = mcMemcpyHostToDevice;
  static constexpr MemcpyKind kMemcpyDeviceToHost = mcMemcpyDeviceToHost;
  static constexpr MemcpyKind kMemcpyDeviceToDevice = mcMemcpyDeviceToDevice;
  static constexpr unsigned kEventDisableTiming = mcEventDisableTiming;

  // MACA's version encoding is not documented where we could read it: print
  // the raw integer rather than guess.
  static void FormatVersion(int version, char *buf, size_t size) {
    std::snprintf(buf, size, "%d", version);
  }

  static const char *GetErrorString(Error e) { return mcGetErrorString(e); }
  static Error GetLastError() { return mcGetLastError(); }
  static Error RuntimeGetVersion(int *v) { return mcRuntimeGetVersion(v); }
  static Error GetDeviceCount(int *n) { return mcGetDeviceCount(n); }
  static Error GetDevice(int *d) { return mcGetDevice(d); }
  static Error SetDevice(int d) { return mcSetDevice(d); }
  static Error PointerGetAttributes(PointerAttributes *a, const void *p) {
    return mcPointerGetAttributes(a, p);
  }
  static Error Malloc(void **p, size_t n) { return mcMalloc(p, n); }
  static Error Free(void *p) { return mcFree(p); }
  static Error MallocHost(void **p, size_t n) { return mcMallocHost(p, n); }
  static Error FreeHost(void *p) { return mcFreeHost(p); }
  static Error MemcpyAsync(void *dst, const void *src, size_t n, MemcpyKind k, Stream s) {
    return mcMemcpyAsync(dst, src, n, k, s);
  }
  static Error StreamSynchronize(Stream s) { return mcStreamSynchronize(s); }
  static Error StreamCreate(Stream *s) { return mcStreamCreate(s); }
  static Error StreamDestroy(Stream s) { return mcStreamDestroy(s); }
  static Error EventCreateWithFlags(Event *e, unsigned f) {
    return mcEventCreateWithFlags(e, f);
  }
  static Error EventDestroy(Event e) { return mcEventDestroy(e); }
  static Error EventRecord(Event e, Stream s) { return mcEventRecord(e, s); }
  static Error EventSynchronize(Event e) { return mcEventSynchronize(e); }
  static Error StreamWaitEvent(Stream s, Event e, unsigned f) {
    return mcStreamWaitEvent(s, e, f);
  }
};

}  // namespace infiniccl::cuda_like
