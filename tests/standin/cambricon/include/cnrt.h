/* Minimal declarations of Cambricon's CNRT (cnrt.h, CNRT 5 and later), for
 * the stand-in library of tests/standin only: the calls, types and
 * constants InfiniCCL uses, with the signatures of Cambricon's public CNRT
 * documentation. Not Cambricon's header; the real SDK's headers win
 * whenever a Neuware install is found (cmake/Devices.cmake). Only
 * cnrtSuccess (0) of cnrtRet_t is relied on by InfiniCCL; the other values
 * below are the stand-in's own. */
#ifndef ICCL_STANDIN_CNRT_H_
#define ICCL_STANDIN_CNRT_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  cnrtSuccess = 0,
  cnrtErrorNotReady = 1,
  cnrtErrorArgsInvalid = 632007,
  cnrtErrorNoDevice = 632008,
  cnrtErrorNoMem = 632009,
  cnrtErrorDeviceInvalid = 632010,
  cnrtErrorQueue = 632011,
  cnrtErrorNotifier = 632012,
} cnrtRet_t;

typedef struct cnrtQueue *cnrtQueue_t;
typedef struct cnrtNotifier *cnrtNotifier_t;

typedef enum {
  cnrtMemcpyHostToDev = 0,
  cnrtMemcpyDevToDev = 1,
  cnrtMemcpyDevToHost = 2,
  cnrtMemcpyHostToHost = 3,
  cnrtMemcpyPeerToPeer = 4,
  cnrtMemcpyNoDirection = 5,
} cnrtMemTransDir_t;

typedef enum {
  cnrtMemTypeUnregistered = 0,
  cnrtMemTypeHost = 1,
  cnrtMemTypeDevice = 2,
} cnrtMemType_t;

typedef struct cnrtPointerAttributes {
  cnrtMemType_t type;
  int device;
  void *devicePointer;
  void *hostPointer;
} cnrtPointerAttributes_t;

const char *cnrtGetErrorStr(cnrtRet_t error);
cnrtRet_t cnrtGetLastError(void);
cnrtRet_t cnrtGetLibVersion(int *major, int *minor, int *patch);

cnrtRet_t cnrtGetDeviceCount(unsigned int *count);
cnrtRet_t cnrtSetDevice(int device);
cnrtRet_t cnrtGetDevice(int *device);

cnrtRet_t cnrtMalloc(void **ptr, size_t bytes);
cnrtRet_t cnrtFree(void *ptr);
cnrtRet_t cnrtHostMalloc(void **ptr, size_t bytes);
cnrtRet_t cnrtFreeHost(void *ptr);
cnrtRet_t cnrtPointerGetAttributes(cnrtPointerAttributes_t *attr, const void *ptr);
cnrtRet_t cnrtMemcpyAsync(void *dst, void *src, size_t bytes, cnrtQueue_t queue,
                          cnrtMemTransDir_t dir);

cnrtRet_t cnrtQueueCreate(cnrtQueue_t *queue);
cnrtRet_t cnrtQueueDestroy(cnrtQueue_t queue);
cnrtRet_t cnrtQueueSync(cnrtQueue_t queue);

cnrtRet_t cnrtNotifierCreate(cnrtNotifier_t *notifier);
cnrtRet_t cnrtNotifierDestroy(cnrtNotifier_t notifier);
cnrtRet_t cnrtPlaceNotifier(cnrtNotifier_t notifier, cnrtQueue_t queue);
cnrtRet_t cnrtWaitNotifier(cnrtNotifier_t notifier);
cnrtRet_t cnrtQueueWaitNotifier(cnrtNotifier_t notifier, cnrtQueue_t queue, unsigned int flag);

/* A host function on a queue (CNRT 5 and later, cnrtInvokeHostFunc):
 * `fn(userData)` runs on a runtime thread when the queue reaches it; later
 * work on the queue waits for it to return. */
typedef void (*cnrtHostFn_t)(void *userData);
cnrtRet_t cnrtInvokeHostFunc(cnrtQueue_t queue, cnrtHostFn_t fn, void *userData);

/* The stand-in's own (see acl.h's). */
long iccl_standin_cambricon_count(const char *name);
void iccl_standin_cambricon_reset(void);
void iccl_standin_cambricon_record(const char *name);
int iccl_standin_cambricon_is_device(const void *ptr, size_t bytes);
int iccl_standin_cambricon_enqueue(cnrtQueue_t queue, void (*fn)(void *), void *arg);
long iccl_standin_cambricon_queue_held(cnrtQueue_t queue);

#ifdef __cplusplus
}
#endif

#endif /* ICCL_STANDIN_CNRT_H_ */
