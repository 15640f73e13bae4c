/* The emulated device's public API (infiniccl/infiniccl_sim.h), from C:
 * every function, every refusal, the emulated kernel's hold, and one
 * collective on memory and a stream made with it.
 *
 *   test_sim_api            under INFINICCL_DEVICE=sim, at any rank count:
 *                           the calls before infinicclInit, then an
 *                           AllReduce ordered after a kernel and an
 *                           asynchronous copy on an API stream, then the
 *                           calls after infinicclFinalize
 *   test_sim_api disabled   without the emulated device: every call is
 *                           infinicclInvalidUsage naming INFINICCL_DEVICE=sim
 *                           (no MPI, one process)
 *
 * Times are asserted as orderings only: a kernel of 20 ms cannot be over
 * before 20 ms have passed, however slow the machine. */
#define _POSIX_C_SOURCE 199309L
#include <infiniccl/infiniccl.h>
#include <infiniccl/infiniccl_sim.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int g_failures = 0;
static int g_rank = 0;

#define CHECK(cond)                                                                  \
  do {                                                                               \
    if (!(cond)) {                                                                   \
      fprintf(stderr, "[rank %d] %s:%d: CHECK failed: %s (last error: %s)\n", g_rank, \
              __FILE__, __LINE__, #cond, infinicclGetLastError(NULL));               \
      ++g_failures;                                                                  \
    }                                                                                \
  } while (0)

/* `call` returns `code` and the thread's last error names the function and
 * contains `text`. */
#define EXPECT_FAIL(call, code, function, text)                                     \
  do {                                                                              \
    infinicclResult_t r_ = (call);                                                  \
    const char *m_ = infinicclGetLastError(NULL);                                   \
    if (r_ != (code) || strstr(m_, function) == NULL || strstr(m_, text) == NULL) { \
      fprintf(stderr,                                                               \
              "[rank %d] %s:%d: %s returned %d (want %d), message \"%s\" (want "    \
              "\"%s\" and \"%s\")\n",                                               \
              g_rank, __FILE__, __LINE__, #call, (int)r_, (int)(code), m_, function, \
              text);                                                                \
      ++g_failures;                                                                 \
    }                                                                               \
  } while (0)

#define OK(call) CHECK((call) == infinicclSuccess)

static double Now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#define KERNEL_US 20000u
#define KERNEL_S (KERNEL_US * 1e-6)

static void Disabled(void) {
  void *p = NULL, *s = NULL, *e = NULL;
  char host[16];
  const char *need = "INFINICCL_DEVICE=sim";
  EXPECT_FAIL(infinicclSimMalloc(&p, 64), infinicclInvalidUsage, "infinicclSimMalloc", need);
  CHECK(p == NULL);
  EXPECT_FAIL(infinicclSimFree(host), infinicclInvalidUsage, "infinicclSimFree", need);
  EXPECT_FAIL(infinicclSimMemcpy(host, host + 8, 8, NULL), infinicclInvalidUsage,
              "infinicclSimMemcpy", need);
  EXPECT_FAIL(infinicclSimStreamCreate(&s), infinicclInvalidUsage,
              "infinicclSimStreamCreate", need);
  CHECK(s == NULL);
  EXPECT_FAIL(infinicclSimStreamDestroy(host), infinicclInvalidUsage,
              "infinicclSimStreamDestroy", need);
  EXPECT_FAIL(infinicclSimStreamSynchronize(NULL), infinicclInvalidUsage,
              "infinicclSimStreamSynchronize", need);
  EXPECT_FAIL(infinicclSimEventCreate(&e), infinicclInvalidUsage, "infinicclSimEventCreate",
              need);
  CHECK(e == NULL);
  EXPECT_FAIL(infinicclSimEventRecord(host, NULL), infinicclInvalidUsage,
              "infinicclSimEventRecord", need);
  EXPECT_FAIL(infinicclSimStreamWaitEvent(NULL, host), infinicclInvalidUsage,
              "infinicclSimStreamWaitEvent", need);
  EXPECT_FAIL(infinicclSimEventDestroy(host), infinicclInvalidUsage,
              "infinicclSimEventDestroy", need);
  EXPECT_FAIL(infinicclSimKernel(NULL, 10), infinicclInvalidUsage, "infinicclSimKernel",
              need);
  EXPECT_FAIL(infinicclSimEventSynchronize(host), infinicclInvalidUsage,
              "infinicclSimEventSynchronize", need);
  {
    int done = -1;
    EXPECT_FAIL(infinicclSimEventQuery(host, &done), infinicclInvalidUsage,
                "infinicclSimEventQuery", need);
  }
}

/* Memory and copies, every direction, and what is refused. */
static void Memory(void) {
  enum { N = 1 << 16 };
  int *host = malloc(N * sizeof(int)), *back = malloc(N * sizeof(int));
  int *a = NULL, *b = NULL;
  void *zero = (void *)1, *s = NULL;
  int i, same = 1;
  int local[4] = {0, 0, 0, 0};
  for (i = 0; i < N; ++i) host[i] = i * 7 + 3;

  EXPECT_FAIL(infinicclSimMalloc(NULL, 8), infinicclInvalidArgument, "infinicclSimMalloc",
              "ptr is NULL");
  OK(infinicclSimMalloc(&zero, 0));
  CHECK(zero == NULL);
  OK(infinicclSimMalloc((void **)&a, N * sizeof(int)));
  OK(infinicclSimMalloc((void **)&b, N * sizeof(int)));
  CHECK(a != NULL && b != NULL && a != b);
  CHECK(((size_t)a % 256) == 0);

  /* Host to device, device to device, device to host, all synchronous. */
  OK(infinicclSimMemcpy(a, host, N * sizeof(int), NULL));
  OK(infinicclSimMemcpy(b, a, N * sizeof(int), NULL));
  memset(back, 0, N * sizeof(int));
  OK(infinicclSimMemcpy(back, b, N * sizeof(int), NULL));
  for (i = 0; i < N; ++i) same = same && back[i] == i * 7 + 3;
  CHECK(same);
  /* A piece in the middle, device to host. */
  OK(infinicclSimMemcpy(local, a + 100, sizeof local, NULL));
  CHECK(local[0] == 703 && local[3] == 724);
  /* On a stream: done after StreamSynchronize. */
  OK(infinicclSimStreamCreate(&s));
  OK(infinicclSimMemcpy(b + 5, local, sizeof local, s));
  OK(infinicclSimStreamSynchronize(s));
  OK(infinicclSimMemcpy(back, b, 16 * sizeof(int), NULL));
  CHECK(back[5] == 703 && back[8] == 724 && back[9] == 9 * 7 + 3);
  OK(infinicclSimMemcpy(back, a, 0, s)); /* zero bytes: nothing to do */

  EXPECT_FAIL(infinicclSimMemcpy(back, host, 8, NULL), infinicclInvalidArgument,
              "infinicclSimMemcpy", "neither dst");
  /* Past the end of the allocation, either side. */
  EXPECT_FAIL(infinicclSimMemcpy(host, a + N - 2, 4 * sizeof(int), NULL),
              infinicclInvalidArgument, "infinicclSimMemcpy", "not inside");
  EXPECT_FAIL(infinicclSimMemcpy(a + N - 2, host, 4 * sizeof(int), s),
              infinicclInvalidArgument, "infinicclSimMemcpy", "not inside");
  EXPECT_FAIL(infinicclSimMemcpy(NULL, a, 4, NULL), infinicclInvalidArgument,
              "infinicclSimMemcpy", "NULL");
  EXPECT_FAIL(infinicclSimMemcpy(a, host, 4, local), infinicclInvalidArgument,
              "infinicclSimMemcpy", "not an emulated-device stream");

  /* Free: foreign, inside an allocation, twice. */
  EXPECT_FAIL(infinicclSimFree(local), infinicclInvalidArgument, "infinicclSimFree",
              "not emulated-device memory");
  EXPECT_FAIL(infinicclSimFree(a + 1), infinicclInvalidArgument, "infinicclSimFree",
              "not an emulated-device allocation");
  OK(infinicclSimFree(NULL));
  OK(infinicclSimFree(b));
  EXPECT_FAIL(infinicclSimFree(b), infinicclInvalidArgument, "infinicclSimFree",
              "not emulated-device memory");
  /* Freed memory is no device side of a copy any more. */
  EXPECT_FAIL(infinicclSimMemcpy(back, b, 8, NULL), infinicclInvalidArgument,
              "infinicclSimMemcpy", "neither dst");

  /* Free waits for the copies still queued (cudaFree's synchronisation):
   * the copy into `b` is queued behind a 20 ms kernel. */
  OK(infinicclSimMalloc((void **)&b, N * sizeof(int)));
  {
    const double t0 = Now();
    OK(infinicclSimKernel(s, KERNEL_US));
    OK(infinicclSimMemcpy(b, host, N * sizeof(int), s));
    OK(infinicclSimFree(b));
    CHECK(Now() - t0 >= KERNEL_S);
  }
  OK(infinicclSimStreamDestroy(s));
  OK(infinicclSimFree(a));
  free(host);
  free(back);
}

/* Streams and events: made, used, destroyed, and refused afterwards. */
static void StreamsAndEvents(void) {
  void *s = NULL, *s2 = NULL, *e = NULL, *gone = NULL, *e_gone = NULL;
  int local = 0;
  EXPECT_FAIL(infinicclSimStreamCreate(NULL), infinicclInvalidArgument,
              "infinicclSimStreamCreate", "NULL");
  EXPECT_FAIL(infinicclSimEventCreate(NULL), infinicclInvalidArgument,
              "infinicclSimEventCreate", "NULL");
  OK(infinicclSimStreamCreate(&s));
  OK(infinicclSimStreamCreate(&s2));
  OK(infinicclSimStreamCreate(&gone));
  CHECK(s != NULL && s2 != NULL && s != s2);
  OK(infinicclSimStreamDestroy(gone));
  OK(infinicclSimEventCreate(&e));
  OK(infinicclSimEventCreate(&e_gone));
  CHECK(e != NULL && e != e_gone);
  OK(infinicclSimEventDestroy(e_gone));

  /* The default stream works everywhere a stream does. */
  OK(infinicclSimStreamSynchronize(NULL));
  OK(infinicclSimKernel(NULL, 10));
  OK(infinicclSimEventRecord(e, NULL));
  OK(infinicclSimStreamWaitEvent(s, e));
  OK(infinicclSimStreamSynchronize(s));
  /* Waiting for an event never recorded does not wait. */
  {
    void *fresh = NULL;
    OK(infinicclSimEventCreate(&fresh));
    OK(infinicclSimStreamWaitEvent(s, fresh));
    OK(infinicclSimStreamSynchronize(s));
    OK(infinicclSimEventDestroy(fresh));
  }
  /* Query and synchronize: an event never recorded is done; one behind a
   * 200 ms kernel is not done at once, and is after synchronizing. */
  {
    void *q = NULL;
    int done = -1;
    OK(infinicclSimEventCreate(&q));
    OK(infinicclSimEventQuery(q, &done));
    CHECK(done == 1);
    OK(infinicclSimKernel(s2, 200000));
    OK(infinicclSimEventRecord(q, s2));
    OK(infinicclSimEventQuery(q, &done));
    CHECK(done == 0);
    OK(infinicclSimEventSynchronize(q));
    OK(infinicclSimEventQuery(q, &done));
    CHECK(done == 1);
    EXPECT_FAIL(infinicclSimEventQuery(q, NULL), infinicclInvalidArgument,
                "infinicclSimEventQuery", "NULL");
    OK(infinicclSimEventDestroy(q));
    EXPECT_FAIL(infinicclSimEventQuery(q, &done), infinicclInvalidArgument,
                "infinicclSimEventQuery", "not an emulated-device event");
    EXPECT_FAIL(infinicclSimEventSynchronize(q), infinicclInvalidArgument,
                "infinicclSimEventSynchronize", "not an emulated-device event");
  }

  /* A destroyed stream, a foreign pointer, NULL where no default applies. */
  EXPECT_FAIL(infinicclSimStreamDestroy(gone), infinicclInvalidArgument,
              "infinicclSimStreamDestroy", "not an emulated-device stream");
  EXPECT_FAIL(infinicclSimStreamDestroy(NULL), infinicclInvalidArgument,
              "infinicclSimStreamDestroy", "default stream");
  EXPECT_FAIL(infinicclSimStreamDestroy(&local), infinicclInvalidArgument,
              "infinicclSimStreamDestroy", "not an emulated-device stream");
  EXPECT_FAIL(infinicclSimStreamSynchronize(gone), infinicclInvalidArgument,
              "infinicclSimStreamSynchronize", "not an emulated-device stream");
  EXPECT_FAIL(infinicclSimKernel(gone, 10), infinicclInvalidArgument, "infinicclSimKernel",
              "not an emulated-device stream");
  EXPECT_FAIL(infinicclSimEventRecord(e, gone), infinicclInvalidArgument,
              "infinicclSimEventRecord", "not an emulated-device stream");
  EXPECT_FAIL(infinicclSimStreamWaitEvent(&local, e), infinicclInvalidArgument,
              "infinicclSimStreamWaitEvent", "not an emulated-device stream");

  /* A destroyed event, a foreign pointer, NULL. */
  EXPECT_FAIL(infinicclSimEventRecord(e_gone, s), infinicclInvalidArgument,
              "infinicclSimEventRecord", "not an emulated-device event");
  EXPECT_FAIL(infinicclSimStreamWaitEvent(s, e_gone), infinicclInvalidArgument,
              "infinicclSimStreamWaitEvent", "not an emulated-device event");
  EXPECT_FAIL(infinicclSimEventDestroy(e_gone), infinicclInvalidArgument,
              "infinicclSimEventDestroy", "not an emulated-device event");
  EXPECT_FAIL(infinicclSimEventRecord(&local, s), infinicclInvalidArgument,
              "infinicclSimEventRecord", "not an emulated-device event");
  EXPECT_FAIL(infinicclSimStreamWaitEvent(s, &local), infinicclInvalidArgument,
              "infinicclSimStreamWaitEvent", "not an emulated-device event");
  EXPECT_FAIL(infinicclSimEventDestroy(&local), infinicclInvalidArgument,
              "infinicclSimEventDestroy", "not an emulated-device event");
  EXPECT_FAIL(infinicclSimEventRecord(NULL, s), infinicclInvalidArgument,
              "infinicclSimEventRecord", "NULL");
  EXPECT_FAIL(infinicclSimEventDestroy(NULL), infinicclInvalidArgument,
              "infinicclSimEventDestroy", "NULL");

  /* Destroyed while a record and a wait are still queued behind a kernel:
   * accepted at once, refused from then on, freed once the streams pass. */
  {
    void *late = NULL;
    OK(infinicclSimEventCreate(&late));
    OK(infinicclSimKernel(s, KERNEL_US));
    OK(infinicclSimEventRecord(late, s));
    OK(infinicclSimStreamWaitEvent(s2, late));
    OK(infinicclSimEventDestroy(late));
    EXPECT_FAIL(infinicclSimEventRecord(late, s), infinicclInvalidArgument,
                "infinicclSimEventRecord", "not an emulated-device event");
    OK(infinicclSimStreamSynchronize(s2));
    OK(infinicclSimStreamSynchronize(s));
  }
  OK(infinicclSimEventDestroy(e));
  OK(infinicclSimStreamDestroy(s2));
  OK(infinicclSimStreamDestroy(s));
}

/* The kernel holds its stream, and what is queued after it, 20 ms. */
static void KernelHold(void) {
  void *s = NULL, *s2 = NULL, *e = NULL;
  int *flag = NULL;
  const int one = 1, zero = 0;
  int seen = -1;
  double t0, queued, read_at;
  OK(infinicclSimStreamCreate(&s));
  OK(infinicclSimStreamCreate(&s2));
  OK(infinicclSimEventCreate(&e));
  OK(infinicclSimMalloc((void **)&flag, sizeof(int)));
  OK(infinicclSimMemcpy(flag, &zero, sizeof zero, NULL));

  /* StreamSynchronize after a 20 ms kernel: at least 20 ms. */
  t0 = Now();
  OK(infinicclSimKernel(s, KERNEL_US));
  OK(infinicclSimStreamSynchronize(s));
  CHECK(Now() - t0 >= KERNEL_S);

  /* An event recorded after the kernel is not complete before it ends: a
   * copy on s2 that waits for it has not happened while the kernel runs
   * (checked when the read itself ended within the 20 ms), and has once s2
   * is synchronised, which is at least 20 ms after the kernel was queued. */
  t0 = Now();
  OK(infinicclSimKernel(s, KERNEL_US));
  OK(infinicclSimEventRecord(e, s));
  OK(infinicclSimStreamWaitEvent(s2, e));
  OK(infinicclSimMemcpy(flag, &one, sizeof one, s2));
  queued = Now();
  OK(infinicclSimMemcpy(&seen, flag, sizeof seen, NULL)); /* default stream, now */
  read_at = Now();
  if (read_at - t0 < KERNEL_S) {
    CHECK(seen == 0);
  } else {
    printf("note: the read ended %.1f ms after the kernel was queued (queued in %.1f "
           "ms); ordering before the kernel's end not checked this time\n",
           (read_at - t0) * 1e3, (queued - t0) * 1e3);
  }
  OK(infinicclSimStreamSynchronize(s2));
  CHECK(Now() - t0 >= KERNEL_S);
  OK(infinicclSimMemcpy(&seen, flag, sizeof seen, NULL));
  CHECK(seen == 1);
  OK(infinicclSimStreamSynchronize(s));

  /* Work on another stream does not wait for the kernel. */
  t0 = Now();
  OK(infinicclSimKernel(s, KERNEL_US));
  OK(infinicclSimMemcpy(flag, &zero, sizeof zero, s2));
  OK(infinicclSimStreamSynchronize(s2));
  read_at = Now();
  OK(infinicclSimMemcpy(&seen, flag, sizeof seen, NULL));
  if (read_at - t0 < KERNEL_S) CHECK(seen == 0);
  OK(infinicclSimStreamSynchronize(s));

  OK(infinicclSimFree(flag));
  OK(infinicclSimEventDestroy(e));
  OK(infinicclSimStreamDestroy(s2));
  OK(infinicclSimStreamDestroy(s));
}

/* One AllReduce on API memory and an API stream, after a kernel and an
 * asynchronous copy that produces its input: exact sums. */
static void Collective(int nranks) {
  enum { N = (1 << 20) + 3 }; /* 4 MiB of int32 and a bit: several chunks */
  int *host = malloc(N * sizeof(int)), *out = malloc(N * sizeof(int));
  int *send = NULL, *recv = NULL;
  void *s = NULL;
  infinicclComm_t comm = NULL;
  infinicclStagingStats before, after;
  long long wrong = 0;
  int i;
  OK(infinicclCommInitAll(&comm, 0, NULL));
  OK(infinicclSimStreamCreate(&s));
  OK(infinicclSimMalloc((void **)&send, N * sizeof(int)));
  OK(infinicclSimMalloc((void **)&recv, N * sizeof(int)));
  for (i = 0; i < N; ++i) host[i] = (g_rank + 1) * (i % 1000) + 1;
  OK(infinicclGetStagingStats(&before));
  /* The input exists only once the kernel and the copy have run. */
  OK(infinicclSimKernel(s, KERNEL_US));
  OK(infinicclSimMemcpy(send, host, N * sizeof(int), s));
  OK(infinicclAllReduce(send, recv, N, infinicclInt32, infinicclSum, comm, s));
  OK(infinicclSimMemcpy(out, recv, N * sizeof(int), s));
  OK(infinicclSimStreamSynchronize(s));
  OK(infinicclGetStagingStats(&after));
  for (i = 0; i < N; ++i) {
    /* sum over r of ((r+1)*(i%1000) + 1) */
    const long long want =
        (long long)(i % 1000) * nranks * (nranks + 1) / 2 + nranks;
    if (out[i] != want) ++wrong;
  }
  CHECK(wrong == 0);
  if (nranks > 1) CHECK(after.staged_calls > before.staged_calls); /* device memory */
  OK(infinicclSimFree(send));
  OK(infinicclSimFree(recv));
  OK(infinicclSimStreamDestroy(s));
  OK(infinicclCommDestroy(comm));
  free(host);
  free(out);
}

int main(int argc, char **argv) {
  int nranks = 1;
  if (argc > 1 && strcmp(argv[1], "disabled") == 0) {
    Disabled();
  } else {
    /* Before infinicclInit: the whole API works. */
    Memory();
    StreamsAndEvents();
    OK(infinicclInit(&argc, &argv));
    OK(infinicclGetRank(&g_rank));
    OK(infinicclGetSize(&nranks));
    KernelHold();
    Collective(nranks);
    OK(infinicclFinalize());
    /* And after infinicclFinalize. */
    {
      void *p = NULL;
      OK(infinicclSimMalloc(&p, 64));
      OK(infinicclSimFree(p));
    }
  }
  if (g_failures) {
    fprintf(stderr, "[rank %d] %d check(s) failed\n", g_rank, g_failures);
    return 1;
  }
  printf("[rank %d] test_sim_api: all checks passed\n", g_rank);
  return 0;
}
