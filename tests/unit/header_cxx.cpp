// The public header compiles as C++11 (-std=c++11 -pedantic -Werror), its
// functions have C linkage and are exported by the shared library (each is
// referenced below, from a list generated from the headers, and looked up
// by name with dlsym). main() calls what works without infinicclInit.
#include <infiniccl/infiniccl.h>
#include <infiniccl/infiniccl_sim.h>

#include <dlfcn.h>

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <type_traits>

static_assert(infinicclSuccess == 0 && infinicclNotSupported == 8 &&
                  infinicclNumResults == 9,
              "result codes");
static_assert(infinicclChar == 0 && infinicclInt8 == 0 && infinicclInt16 == 1 &&
                  infinicclInt == 2 && infinicclInt32 == 2 && infinicclInt64 == 3 &&
                  infinicclUInt8 == 4 && infinicclUInt16 == 5 && infinicclUInt32 == 6 &&
                  infinicclUInt64 == 7 && infinicclHalf == 8 && infinicclFloat16 == 8 &&
                  infinicclBFloat16 == 9 && infinicclFloat == 10 &&
                  infinicclFloat32 == 10 && infinicclDouble == 11 &&
                  infinicclFloat64 == 11 && infinicclNumTypes == 12,
              "data types");
static_assert(infinicclSum == 0 && infinicclProd == 1 && infinicclMax == 2 &&
                  infinicclMin == 3 && infinicclAvg == 4 && infinicclBand == 5 &&
                  infinicclBor == 6 && infinicclBxor == 7 && infinicclNumOps == 8,
              "reduction ops");
static_assert(sizeof(infinicclUniqueId) == INFINICCL_UNIQUE_ID_BYTES, "unique id");
static_assert(std::is_same<infinicclComm_t, void *>::value, "comm handle");
static_assert(
    std::is_same<decltype(&infinicclAllReduce),
                 infinicclResult_t (*)(const void *, void *, size_t, infinicclDataType_t,
                                       infinicclRedOp_t, infinicclComm_t, void *)>::value,
    "AllReduce signature");
static_assert(std::is_same<decltype(&infinicclGetLastError),
                           const char *(*)(infinicclComm_t)>::value,
              "GetLastError signature");

static_assert(std::is_same<decltype(&infinicclSimMemcpy),
                           infinicclResult_t (*)(void *, const void *, std::size_t,
                                                 void *)>::value,
              "SimMemcpy signature");
static_assert(std::is_same<decltype(&infinicclSimKernel),
                           infinicclResult_t (*)(void *, unsigned)>::value,
              "SimKernel signature");
static_assert(std::is_same<decltype(&infinicclSimStreamWaitEvent),
                           infinicclResult_t (*)(void *, void *)>::value,
              "SimStreamWaitEvent signature");

typedef void (*AnyFunction)();

// Every function the public headers declare, listed at build time by
// header_functions.cmake; the names again as strings for dlsym.
static const AnyFunction kFunctions[] = {
#define INFINICCL_HEADER_FUNCTION(name) reinterpret_cast<AnyFunction>(&name),
#include "header_functions.inc"
#undef INFINICCL_HEADER_FUNCTION
};
static const char *const kNames[] = {
#define INFINICCL_HEADER_FUNCTION(name) #name,
#include "header_functions.inc"
#undef INFINICCL_HEADER_FUNCTION
};
static_assert(sizeof kFunctions / sizeof kFunctions[0] == INFINICCL_HEADER_FUNCTION_COUNT,
              "generated list");

int main() {
  for (std::size_t i = 0; i < sizeof kFunctions / sizeof kFunctions[0]; ++i) {
    if (kFunctions[i] == nullptr) return 10;
    // Exported from the shared library under its C name (not only linkable).
    void *dynamic = dlsym(RTLD_DEFAULT, kNames[i]);
    if (dynamic == nullptr || reinterpret_cast<AnyFunction>(dynamic) != kFunctions[i]) {
      std::fprintf(stderr, "%s: not exported by the library\n", kNames[i]);
      return 11;
    }
  }
  int version = 0;
  if (infinicclGetVersion(&version) != infinicclSuccess) return 20;
  if (version != INFINICCL_VERSION_CODE) return 21;
  for (int r = 0; r <= infinicclNumResults; ++r) {
    if (infinicclGetErrorString(static_cast<infinicclResult_t>(r)) == nullptr) return 22;
  }
  int rank = -1;
  if (infinicclGetRank(&rank) != infinicclInvalidUsage || rank != -1) return 23;
  if (std::strstr(infinicclGetLastError(nullptr), "infinicclGetRank") == nullptr)
    return 24;
  char runtimes[INFINICCL_DEVICE_RUNTIMES_BYTES];
  if (infinicclGetDeviceRuntimes(runtimes, sizeof runtimes) != infinicclSuccess) return 25;
  if (std::strncmp(runtimes, "cpu,", 4) != 0) return 26;
  return 0;
}
