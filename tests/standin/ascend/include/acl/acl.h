/* Minimal declarations of CANN's ACL runtime (acl/acl.h), for the stand-in
 * library of tests/standin only: the calls, types and constants InfiniCCL
 * uses, with the signatures and values of CANN's public documentation
 * (acl_base.h, acl_rt.h). Not Huawei's header; the real SDK's headers win
 * whenever an Ascend toolkit is found (cmake/Devices.cmake). */
#ifndef ICCL_STANDIN_ACL_ACL_H_
#define ICCL_STANDIN_ACL_ACL_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef int aclError;
typedef void *aclrtStream;
typedef void *aclrtEvent;

/* Error codes (acl_base.h). */
#define ACL_SUCCESS 0
#define ACL_ERROR_INVALID_PARAM 100000
#define ACL_ERROR_UNINITIALIZE 100001
#define ACL_ERROR_REPEAT_INITIALIZE 100002
#define ACL_ERROR_BAD_ALLOC 200000
#define ACL_ERROR_RT_PARAM_INVALID 107000
#define ACL_ERROR_RT_INVALID_DEVICEID 107001
#define ACL_ERROR_RT_CONTEXT_NULL 107002
#define ACL_ERROR_RT_STREAM_CONTEXT 107003
#define ACL_ERROR_RT_NO_DEVICE 507033

typedef enum aclrtMemcpyKind {
  ACL_MEMCPY_HOST_TO_HOST = 0,
  ACL_MEMCPY_HOST_TO_DEVICE = 1,
  ACL_MEMCPY_DEVICE_TO_HOST = 2,
  ACL_MEMCPY_DEVICE_TO_DEVICE = 3,
} aclrtMemcpyKind;

typedef enum aclrtMemMallocPolicy {
  ACL_MEM_MALLOC_HUGE_FIRST = 0,
  ACL_MEM_MALLOC_HUGE_ONLY = 1,
  ACL_MEM_MALLOC_NORMAL_ONLY = 2,
} aclrtMemMallocPolicy;

typedef enum aclrtMemLocationType {
  ACL_MEM_LOCATION_TYPE_HOST = 0,
  ACL_MEM_LOCATION_TYPE_DEVICE = 1,
} aclrtMemLocationType;

typedef struct aclrtMemLocation {
  uint32_t id;
  aclrtMemLocationType type;
} aclrtMemLocation;

typedef struct aclrtPtrAttributes {
  aclrtMemLocation location;
  uint32_t pageSize;
  uint32_t rsv[4];
} aclrtPtrAttributes;

aclError aclInit(const char *configPath);
aclError aclFinalize(void);
const char *aclGetRecentErrMsg(void);
aclError aclrtGetVersion(int32_t *majorVersion, int32_t *minorVersion, int32_t *patchVersion);

aclError aclrtGetDeviceCount(uint32_t *count);
aclError aclrtSetDevice(int32_t deviceId);
aclError aclrtGetDevice(int32_t *deviceId);

aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy);
aclError aclrtFree(void *devPtr);
aclError aclrtMallocHost(void **hostPtr, size_t size);
aclError aclrtFreeHost(void *hostPtr);
aclError aclrtPointerGetAttributes(const void *ptr, aclrtPtrAttributes *attributes);
aclError aclrtMemcpyAsync(void *dst, size_t destMax, const void *src, size_t count,
                          aclrtMemcpyKind kind, aclrtStream stream);

aclError aclrtCreateStream(aclrtStream *stream);
aclError aclrtDestroyStream(aclrtStream stream);
aclError aclrtSynchronizeStream(aclrtStream stream);

aclError aclrtCreateEvent(aclrtEvent *event);
aclError aclrtDestroyEvent(aclrtEvent event);
aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream);
aclError aclrtSynchronizeEvent(aclrtEvent event);
aclError aclrtStreamWaitEvent(aclrtStream stream, aclrtEvent event);

/* A host function on a stream (CANN's runtime API reference,
 * aclrtLaunchHostFunc; Atlas A2/A3 and later): `fn(args)` runs on a thread
 * the runtime creates and registers for the stream, when the stream reaches
 * it; later work on the stream waits for it to return. */
typedef void (*aclrtHostFunc)(void *args);
aclError aclrtLaunchHostFunc(aclrtStream stream, aclrtHostFunc fn, void *args);

/* The stand-in's own: how many times `name` was called ("aclrtMemcpyAsync",
 * "HcclAllReduce", ...), and a reset; `record` is for libhccl's stand-in. */
long iccl_standin_ascend_count(const char *name);
void iccl_standin_ascend_reset(void);
void iccl_standin_ascend_record(const char *name);
/* Whether [ptr, ptr + bytes) lies in one stand-in device allocation. */
int iccl_standin_ascend_is_device(const void *ptr, size_t bytes);
void iccl_standin_ascend_set_error(const char *message);
/* For libhccl's stand-in: runs fn(arg) in `stream`'s order (at once when the
 * stream is idle: 1; queued behind what holds it: 0; unknown stream: -1). */
int iccl_standin_ascend_enqueue(aclrtStream stream, void (*fn)(void *), void *arg);
/* How much work on `stream` (NULL: the default stream) found it held (by a
 * host function or an event wait) and ran later; -1: unknown stream. */
long iccl_standin_ascend_stream_held(aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif /* ICCL_STANDIN_ACL_ACL_H_ */
