/* Buffers of a C test program on the side under test: host memory, or the
 * emulated device's (infinicclSim*) when g_sim is set. Include after
 * defining g_sim and OK(call), the program's check of a library call. */
#ifndef INFINICCL_TESTS_SIDE_BUFFERS_H
#define INFINICCL_TESTS_SIDE_BUFFERS_H

#include <infiniccl/infiniccl_sim.h>
#include <stdlib.h>
#include <string.h>

/* A buffer of `bytes` on the side under test. */
static void *Alloc(size_t bytes) {
  void *p = NULL;
  if (g_sim) {
    OK(infinicclSimMalloc(&p, bytes));
  } else {
    p = malloc(bytes);
  }
  return p;
}
static void Free(void *p) {
  if (g_sim) {
    OK(infinicclSimFree(p));
  } else {
    free(p);
  }
}
static void Put(void *dst, const void *host, size_t bytes) {
  if (g_sim) {
    OK(infinicclSimMemcpy(dst, host, bytes, NULL));
  } else {
    memcpy(dst, host, bytes);
  }
}
/* After the work queued on the default stream. */
static void Get(void *host, const void *src, size_t bytes) {
  if (g_sim) {
    OK(infinicclSimStreamSynchronize(NULL));
    OK(infinicclSimMemcpy(host, src, bytes, NULL));
  } else {
    memcpy(host, src, bytes);
  }
}

#endif
