// The public header compiles as C++11 (-std=c++11 -pedantic -Werror), its
// functions have C linkage and are exported by the shared library (each is
// referenced below). main() calls what works without infinicclInit.
#include <infiniccl/infiniccl.h>
#include <infiniccl/infiniccl_sim.h>

#include <cstddef>
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

static const AnyFunction kFunctions[] = {
    reinterpret_cast<AnyFunction>(&infinicclInit),
    reinterpret_cast<AnyFunction>(&infinicclFinalize),
    reinterpret_cast<AnyFunction>(&infinicclGetRank),
    reinterpret_cast<AnyFunction>(&infinicclGetSize),
    reinterpret_cast<AnyFunction>(&infinicclGetUniqueId),
    reinterpret_cast<AnyFunction>(&infinicclCommInitAll),
    reinterpret_cast<AnyFunction>(&infinicclCommInitRank),
    reinterpret_cast<AnyFunction>(&infinicclCommDestroy),
    reinterpret_cast<AnyFunction>(&infinicclAllReduce),
    reinterpret_cast<AnyFunction>(&infinicclBroadcast),
    reinterpret_cast<AnyFunction>(&infinicclBcast),
    reinterpret_cast<AnyFunction>(&infinicclReduce),
    reinterpret_cast<AnyFunction>(&infinicclAllGather),
    reinterpret_cast<AnyFunction>(&infinicclGather),
    reinterpret_cast<AnyFunction>(&infinicclScatter),
    reinterpret_cast<AnyFunction>(&infinicclReduceScatter),
    reinterpret_cast<AnyFunction>(&infinicclAllToAll),
    reinterpret_cast<AnyFunction>(&infinicclSend),
    reinterpret_cast<AnyFunction>(&infinicclRecv),
    reinterpret_cast<AnyFunction>(&infinicclGetErrorString),
    reinterpret_cast<AnyFunction>(&infinicclGetLastError),
    reinterpret_cast<AnyFunction>(&infinicclGetVersion),
    reinterpret_cast<AnyFunction>(&infinicclGetDeviceRuntimes),
    reinterpret_cast<AnyFunction>(&infinicclCommCount),
    reinterpret_cast<AnyFunction>(&infinicclCommUserRank),
    reinterpret_cast<AnyFunction>(&infinicclCommSplit),
    reinterpret_cast<AnyFunction>(&infinicclCommAbort),
    reinterpret_cast<AnyFunction>(&infinicclCommRevoke),
    reinterpret_cast<AnyFunction>(&infinicclCommGetFailedRanks),
    reinterpret_cast<AnyFunction>(&infinicclCommShrink),
    reinterpret_cast<AnyFunction>(&infinicclCommGrow),
    reinterpret_cast<AnyFunction>(&infinicclCommGetAsyncError),
    reinterpret_cast<AnyFunction>(&infinicclCommDescribeWait),
    reinterpret_cast<AnyFunction>(&infinicclGetStagingStats),
    reinterpret_cast<AnyFunction>(&infinicclMemTrim),
    reinterpret_cast<AnyFunction>(&infinicclCommInitMpi),
    reinterpret_cast<AnyFunction>(&infinicclGroupStart),
    reinterpret_cast<AnyFunction>(&infinicclGroupEnd),
    reinterpret_cast<AnyFunction>(&infinicclSendTagged),
    reinterpret_cast<AnyFunction>(&infinicclRecvTagged),
    reinterpret_cast<AnyFunction>(&infinicclSimMalloc),
    reinterpret_cast<AnyFunction>(&infinicclSimFree),
    reinterpret_cast<AnyFunction>(&infinicclSimMemcpy),
    reinterpret_cast<AnyFunction>(&infinicclSimStreamCreate),
    reinterpret_cast<AnyFunction>(&infinicclSimStreamDestroy),
    reinterpret_cast<AnyFunction>(&infinicclSimStreamSynchronize),
    reinterpret_cast<AnyFunction>(&infinicclSimEventCreate),
    reinterpret_cast<AnyFunction>(&infinicclSimEventRecord),
    reinterpret_cast<AnyFunction>(&infinicclSimStreamWaitEvent),
    reinterpret_cast<AnyFunction>(&infinicclSimEventDestroy),
    reinterpret_cast<AnyFunction>(&infinicclSimKernel),
    reinterpret_cast<AnyFunction>(&infinicclSimEventSynchronize),
    reinterpret_cast<AnyFunction>(&infinicclSimEventQuery),
    reinterpret_cast<AnyFunction>(&infinicclSimStreamBeginCapture),
    reinterpret_cast<AnyFunction>(&infinicclSimStreamEndCapture),
    reinterpret_cast<AnyFunction>(&infinicclSimStreamIsCapturing),
    reinterpret_cast<AnyFunction>(&infinicclSimGraphNodes),
    reinterpret_cast<AnyFunction>(&infinicclSimGraphLaunch),
    reinterpret_cast<AnyFunction>(&infinicclSimGraphDestroy),
};

int main() {
  for (std::size_t i = 0; i < sizeof kFunctions / sizeof kFunctions[0]; ++i) {
    if (kFunctions[i] == nullptr) return 10;
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
