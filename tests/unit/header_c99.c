/* The public header compiles as strict C99 (-std=c99 -pedantic -Werror) and
 * every function it declares is exported by the shared library: each is
 * referenced below (the list is generated from the headers), so a missing
 * or hidden symbol fails the link. main()
 * checks a few enum values and calls what works without infinicclInit. */
#include <infiniccl/infiniccl.h>
#include <infiniccl/infiniccl_sim.h>
#include <string.h>

/* Compile-time checks without C11's _Static_assert. */
#define CHECK(name, cond) typedef char check_##name[(cond) ? 1 : -1]
CHECK(success, infinicclSuccess == 0);
CHECK(not_supported, infinicclNotSupported == 8);
CHECK(num_results, infinicclNumResults == 9);
CHECK(char_is_int8, infinicclChar == 0 && infinicclInt8 == 0);
CHECK(int32, infinicclInt == 2 && infinicclInt32 == 2);
CHECK(uint64, infinicclUInt64 == 7);
CHECK(half, infinicclHalf == 8 && infinicclFloat16 == 8);
CHECK(bfloat16, infinicclBFloat16 == 9);
CHECK(float32, infinicclFloat == 10 && infinicclFloat32 == 10);
CHECK(float64, infinicclDouble == 11 && infinicclFloat64 == 11);
CHECK(num_types, infinicclNumTypes == 12);
CHECK(ops, infinicclSum == 0 && infinicclProd == 1 && infinicclMax == 2 &&
               infinicclMin == 3 && infinicclAvg == 4 && infinicclBand == 5 &&
               infinicclBor == 6 && infinicclBxor == 7 && infinicclNumOps == 8);
CHECK(unique_id, sizeof(infinicclUniqueId) == INFINICCL_UNIQUE_ID_BYTES);
CHECK(split_nocolor, INFINICCL_SPLIT_NOCOLOR == -1);
CHECK(any_source, INFINICCL_ANY_SOURCE == -1);
CHECK(tag_max, INFINICCL_TAG_MAX == 0xFFFFFF);
CHECK(version, INFINICCL_VERSION_CODE ==
                   INFINICCL_MAJOR * 10000 + INFINICCL_MINOR * 100 + INFINICCL_PATCH);

typedef void (*AnyFunction)(void);

/* Every function the public headers declare (infiniccl.h, infiniccl_sim.h),
 * listed at build time by header_functions.cmake. */
static const AnyFunction kFunctions[] = {
#define INFINICCL_HEADER_FUNCTION(name) (AnyFunction)name,
#include "header_functions.inc"
#undef INFINICCL_HEADER_FUNCTION
};
static infinicclResult_t (*const kSimMemcpy)(void *, const void *, size_t,
                                             void *) = infinicclSimMemcpy;
static infinicclResult_t (*const kSimKernel)(void *, unsigned) = infinicclSimKernel;

/* Typed pointers: a changed signature fails to compile. */
static infinicclResult_t (*const kAllReduce)(const void *, void *, size_t,
                                             infinicclDataType_t, infinicclRedOp_t,
                                             infinicclComm_t,
                                             void *) = infinicclAllReduce;
static infinicclResult_t (*const kCommInitRank)(infinicclComm_t *, int, infinicclUniqueId,
                                                int) = infinicclCommInitRank;
static const char *(*const kGetErrorString)(infinicclResult_t) = infinicclGetErrorString;
static infinicclResult_t (*const kSendTagged)(const void *, size_t, infinicclDataType_t, int,
                                              int, infinicclComm_t,
                                              void *) = infinicclSendTagged;
static infinicclResult_t (*const kRecvTagged)(void *, size_t, infinicclDataType_t, int, int,
                                              int *, infinicclComm_t,
                                              void *) = infinicclRecvTagged;
static infinicclResult_t (*const kDescribeWait)(infinicclComm_t, char *,
                                                size_t) = infinicclCommDescribeWait;

int main(void) {
  const infinicclDataType_t types[] = {
      infinicclChar,     infinicclInt8,    infinicclInt16,   infinicclInt,
      infinicclInt32,    infinicclInt64,   infinicclUInt8,   infinicclUInt16,
      infinicclUInt32,   infinicclUInt64,  infinicclHalf,    infinicclFloat16,
      infinicclBFloat16, infinicclFloat,   infinicclFloat32, infinicclDouble,
      infinicclFloat64,  infinicclNumTypes};
  const infinicclRedOp_t ops[] = {infinicclSum,  infinicclProd, infinicclMax,
                                  infinicclMin,  infinicclAvg,  infinicclBand,
                                  infinicclBor,  infinicclBxor, infinicclNumOps};
  const infinicclResult_t results[] = {infinicclSuccess,         infinicclUnhandledError,
                                       infinicclSystemError,     infinicclInternalError,
                                       infinicclInvalidArgument, infinicclInvalidUsage,
                                       infinicclRemoteError,     infinicclInProgress,
                                       infinicclNotSupported,    infinicclNumResults};
  infinicclComm_t comm = NULL;
  infinicclUniqueId id;
  size_t i;
  int version = 0;

  for (i = 0; i < sizeof kFunctions / sizeof kFunctions[0]; ++i) {
    if (kFunctions[i] == NULL) return 10;
  }
  if (sizeof kFunctions / sizeof kFunctions[0] != INFINICCL_HEADER_FUNCTION_COUNT) return 11;
  if (kSimMemcpy == NULL || kSimKernel == NULL) return 18;
  if (types[17] != 12 || types[12] != 9 || ops[5] != 5 || ops[8] != 8 || results[9] != 9) return 12;
  if (kAllReduce == NULL || kCommInitRank == NULL || kSendTagged == NULL ||
      kRecvTagged == NULL || kDescribeWait == NULL)
    return 13;
  if (comm != NULL) return 14;
  id.internal[0] = 0;
  if (id.internal[0] != 0) return 15;

  /* What works without infinicclInit. */
  if (infinicclGetVersion(&version) != infinicclSuccess) return 20;
  if (version != INFINICCL_VERSION_CODE) return 21;
  for (i = 0; i < sizeof results / sizeof results[0]; ++i) {
    if (kGetErrorString(results[i]) == NULL) return 22;
  }
  if (infinicclGetLastError(NULL) == NULL) return 23;
  if (infinicclGetRank(&version) != infinicclInvalidUsage) return 24;
  {
    char runtimes[INFINICCL_DEVICE_RUNTIMES_BYTES];
    if (infinicclGetDeviceRuntimes(runtimes, sizeof runtimes) != infinicclSuccess) return 25;
    if (strncmp(runtimes, "cpu,", 4) != 0) return 26;
  }
  return 0;
}
