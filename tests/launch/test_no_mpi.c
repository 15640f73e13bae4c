/* A program in upstream's style started without any MPI launcher: a shell
 * loop (run_ranks.sh) starts one process per rank and gives each its rank
 * in argv. Rank 0 makes the id (infinicclGetUniqueId) and writes it to a
 * FILE; the others wait for the file and read it; each joins with
 * infinicclCommInitRank. No infinicclInit, no MPI. Then each collective
 * named on the command line at 1 MiB per rank in int32 and float32 and at
 * 16 MiB in int32, checked exactly against values computed here: on host
 * buffers (`host`) or emulated device buffers (`sim`, under
 * INFINICCL_DEVICE=sim).
 *   badrank: the last rank gives rank = nranks; every rank must fail at once
 *            (InvalidUsage from the root's verdict, naming the rank).
 *   missing: the last rank never joins; the others must fail (RemoteError
 *            naming it) within INFINICCL_TIMEOUT_SEC.
 *   shmoff:  run with INFINICCL_SHM=0: every rank's CommInitRank returns
 *            InvalidUsage naming the setting (shared memory is every
 *            call's path without MPI).
 * The contract on a communicator made so, after one exact AllReduce:
 *   mismatch: the last rank passes another count; every rank's call is
 *            refused (InvalidUsage), and the next AllReduce is exact.
 *   abort:    the last rank calls infinicclCommAbort instead of the second
 *            AllReduce; the others' AllReduce returns RemoteError.
 *   revoke:   the same with infinicclCommRevoke.
 *   cycles:   20 times: a child split off, an exact AllReduce on it, and
 *            infinicclCommAbort of it on every rank; then the parent sums.
 *   stall:    the last rank sleeps instead of the second AllReduce; the
 *            others' watchdog (INFINICCL_TIMEOUT_SEC) ends their process
 *            with exit code 124, and the last rank's AllReduce then returns
 *            RemoteError. Each rank runs in a child process, whose exit
 *            code the parent checks.
 *   die:      the last rank exits instead of the second AllReduce; the
 *            others' AllReduce returns RemoteError naming it.
 * usage: test_no_mpi <id file> <nranks> <rank>
 *                    host|sim|badrank|missing|shmoff|mismatch|abort|revoke|die|cycles|stall
 *                    [AllReduce Reduce Broadcast AllGather ReduceScatter
 *                     Gather Scatter AllToAll SendRecv Split ...]
 * Split: children of even and odd ranks, an AllReduce on each. */
#include <infiniccl/infiniccl.h>
#include <infiniccl/infiniccl_sim.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

static int g_failures = 0;
static int g_rank = 0;
static int g_sim = 0;

#define OK(call)                                                                     \
  do {                                                                               \
    infinicclResult_t rc_ = (call);                                                  \
    if (rc_ != infinicclSuccess) {                                                   \
      fprintf(stderr, "rank %d: %s:%d: %s = %d: %s\n", g_rank, __FILE__, __LINE__, \
              #call, (int)rc_, infinicclGetLastError(NULL));                         \
      ++g_failures;                                                                  \
    }                                                                                \
  } while (0)
#define CHECK(cond, ...)                                                           \
  do {                                                                             \
    if (!(cond)) {                                                                 \
      fprintf(stderr, "rank %d: %s:%d: %s: ", g_rank, __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                                \
      fprintf(stderr, "\n");                                                       \
      ++g_failures;                                                                \
    }                                                                              \
  } while (0)

#include "../side_buffers.h"

/* Element i of rank r's contribution; small integers, exact in float32. */
static double Value(int r, size_t i) { return (double)((r + 1) * 3 + (int)(i % 97)); }
static void Store(infinicclDataType_t t, void *h, size_t i, double v) {
  if (t == infinicclInt32) {
    ((int *)h)[i] = (int)v;
  } else {
    ((float *)h)[i] = (float)v;
  }
}
static double Load(infinicclDataType_t t, const void *h, size_t i) {
  return t == infinicclInt32 ? (double)((const int *)h)[i] : (double)((const float *)h)[i];
}
static double Sum(int n, size_t i) {
  double s = 0;
  int r;
  for (r = 0; r < n; ++r) s += Value(r, i);
  return s;
}

/* One collective, `count` elements per rank (per block for the calls of
 * n blocks). */
static void Run(const char *coll, infinicclComm_t comm, int rank, int n, size_t count,
                infinicclDataType_t t) {
  const size_t el = 4, all = count * (size_t)n;
  char *h = malloc(el * all), *back = malloc(el * all);
  void *a = Alloc(el * all), *b = Alloc(el * all);
  const int root = n - 1;
  size_t i, bad = 0;
  int r;
  for (i = 0; i < all; ++i) Store(t, h, i, Value(rank, i));
  for (i = 0; i < all; ++i) Store(t, back, i, -1);
  Put(a, h, el * all);
  Put(b, back, el * all);
  if (strcmp(coll, "AllReduce") == 0) {
    OK(infinicclAllReduce(a, b, count, t, infinicclSum, comm, NULL));
    Get(back, b, el * count);
    for (i = 0; i < count; ++i) bad += Load(t, back, i) != Sum(n, i);
  } else if (strcmp(coll, "Reduce") == 0) {
    OK(infinicclReduce(a, b, count, t, infinicclSum, root, comm, NULL));
    Get(back, b, el * count);
    for (i = 0; i < count; ++i) bad += Load(t, back, i) != (rank == root ? Sum(n, i) : -1);
  } else if (strcmp(coll, "Broadcast") == 0) {
    OK(infinicclBroadcast(a, b, count, t, root, comm, NULL));
    Get(back, b, el * count);
    for (i = 0; i < count; ++i) bad += Load(t, back, i) != Value(root, i);
  } else if (strcmp(coll, "AllGather") == 0) {
    OK(infinicclAllGather(a, b, count, t, comm, NULL));
    Get(back, b, el * all);
    for (r = 0; r < n; ++r)
      for (i = 0; i < count; ++i) bad += Load(t, back, (size_t)r * count + i) != Value(r, i);
  } else if (strcmp(coll, "ReduceScatter") == 0) {
    OK(infinicclReduceScatter(a, b, count, t, infinicclSum, comm, NULL));
    Get(back, b, el * count);
    for (i = 0; i < count; ++i) bad += Load(t, back, i) != Sum(n, (size_t)rank * count + i);
  } else if (strcmp(coll, "Gather") == 0) {
    OK(infinicclGather(a, b, count, t, root, comm, NULL));
    Get(back, b, el * all);
    for (r = 0; r < n; ++r)
      for (i = 0; i < count; ++i)
        bad += Load(t, back, (size_t)r * count + i) != (rank == root ? Value(r, i) : -1);
  } else if (strcmp(coll, "Scatter") == 0) {
    OK(infinicclScatter(a, b, count, t, root, comm, NULL));
    Get(back, b, el * count);
    for (i = 0; i < count; ++i) bad += Load(t, back, i) != Value(root, (size_t)rank * count + i);
  } else if (strcmp(coll, "AllToAll") == 0) {
    /* Block j of rank r's input goes to rank j, at block r. */
    OK(infinicclAllToAll(a, b, count, t, comm, NULL));
    Get(back, b, el * all);
    for (r = 0; r < n; ++r)
      for (i = 0; i < count; ++i)
        bad += Load(t, back, (size_t)r * count + i) != Value(r, (size_t)rank * count + i);
  } else if (strcmp(coll, "SendRecv") == 0) {
    /* A ring: to rank+1, from rank-1, in a group. */
    OK(infinicclGroupStart());
    OK(infinicclSend(a, count, t, (rank + 1) % n, comm, NULL));
    OK(infinicclRecv(b, count, t, (rank + n - 1) % n, comm, NULL));
    OK(infinicclGroupEnd());
    Get(back, b, el * count);
    for (i = 0; i < count; ++i) bad += Load(t, back, i) != Value((rank + n - 1) % n, i);
  } else if (strcmp(coll, "Split") == 0) {
    /* Children of even and odd ranks, in reverse order of rank (a child of
     * one rank at 3 ranks); each sums its members' values. */
    infinicclComm_t child = NULL;
    int csize = 0, crank = -1;
    OK(infinicclCommSplit(comm, rank % 2, -rank, &child));
    if (child != NULL) {
      OK(infinicclCommCount(child, &csize));
      OK(infinicclCommUserRank(child, &crank));
      CHECK(csize == (n + 1 - rank % 2) / 2 && crank == (n - 1 - rank) / 2,
            "child rank %d of %d", crank, csize);
      OK(infinicclAllReduce(a, b, count, t, infinicclSum, child, NULL));
      Get(back, b, el * count);
      for (i = 0; i < count; ++i) {
        double want = 0;
        for (r = rank % 2; r < n; r += 2) want += Value(r, i);
        bad += Load(t, back, i) != want;
      }
      OK(infinicclCommDestroy(child));
    } else {
      CHECK(0, "no child communicator");
    }
  } else {
    CHECK(0, "unknown collective %s", coll);
  }
  CHECK(bad == 0, "%s %s of %zu elements: %zu wrong", coll,
        t == infinicclInt32 ? "int32" : "float32", count, bad);
  Free(a);
  Free(b);
  free(h);
  free(back);
}

/* Rank 0 writes the id to `path` (through a rename, so a reader never sees
 * half of it); the others wait for the file, at most 60 s. */
static int ShareId(const char *path, infinicclUniqueId *id) {
  FILE *f;
  int tries;
  if (g_rank == 0) {
    char tmp[4096];
    OK(infinicclGetUniqueId(id));
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    f = fopen(tmp, "wb");
    if (f == NULL || fwrite(id, sizeof *id, 1, f) != 1) return -1;
    fclose(f);
    return rename(tmp, path);
  }
  for (tries = 0; tries < 6000; ++tries) {
    f = fopen(path, "rb");
    if (f != NULL) {
      const size_t got = fread(id, sizeof *id, 1, f);
      fclose(f);
      if (got == 1) return 0;
    }
    usleep(10000);
  }
  return -1;
}

/* One host AllReduce of 1000 int32 elements; 1 when exact. */
static int SumOnce(infinicclComm_t comm, int rank, int n, infinicclResult_t *rc) {
  int in[1000], out[1000], i, ok = 1;
  for (i = 0; i < 1000; ++i) in[i] = (int)Value(rank, (size_t)i);
  *rc = infinicclAllReduce(in, out, 1000, infinicclInt32, infinicclSum, comm, NULL);
  for (i = 0; i < 1000 && *rc == infinicclSuccess; ++i) ok &= out[i] == (int)Sum(n, (size_t)i);
  return *rc == infinicclSuccess && ok;
}

static void Contract(infinicclComm_t comm, const char *mode, int rank, int n) {
  infinicclResult_t rc;
  const int last = rank == n - 1;
  CHECK(SumOnce(comm, rank, n, &rc), "first AllReduce: %d %s", (int)rc,
        infinicclGetLastError(comm));
  if (strcmp(mode, "mismatch") == 0) {
    int in[8] = {0}, out[8];
    rc = infinicclAllReduce(in, out, last ? 7 : 8, infinicclInt32, infinicclSum, comm, NULL);
    printf("rank %d: a count that differs: %d %s\n", rank, (int)rc, infinicclGetLastError(comm));
    CHECK(rc == infinicclInvalidUsage, "AllReduce of differing counts returned %d", (int)rc);
    CHECK(SumOnce(comm, rank, n, &rc), "AllReduce after the refused one: %d %s", (int)rc,
          infinicclGetLastError(comm));
    OK(infinicclCommDestroy(comm));
  } else if (strcmp(mode, "cycles") == 0) {
    int cycle;
    for (cycle = 0; cycle < 20; ++cycle) {
      infinicclComm_t child = NULL;
      OK(infinicclCommSplit(comm, 0, rank, &child));
      if (child == NULL) break;
      CHECK(SumOnce(child, rank, n, &rc), "cycle %d: AllReduce on the child: %d %s", cycle,
            (int)rc, infinicclGetLastError(child));
      OK(infinicclCommAbort(child));
    }
    CHECK(SumOnce(comm, rank, n, &rc), "the parent after the cycles: %d %s", (int)rc,
          infinicclGetLastError(comm));
    OK(infinicclCommDestroy(comm));
  } else if (last && strcmp(mode, "stall") == 0) {
    sleep(15);
    rc = infinicclAllReduce((int[1]){1}, (int[1]){0}, 1, infinicclInt32, infinicclSum, comm,
                            NULL);
    printf("rank %d: AllReduce after the others' watchdog: %d %s\n", rank, (int)rc,
           infinicclGetLastError(comm));
    CHECK(rc == infinicclRemoteError, "returned %d", (int)rc);
    OK(infinicclCommAbort(comm));
  } else if (strcmp(mode, "stall") == 0) {
    rc = infinicclAllReduce((int[1]){1}, (int[1]){0}, 1, infinicclInt32, infinicclSum, comm,
                            NULL);
    CHECK(0, "AllReduce without the last rank returned %d (the watchdog should end this process)",
          (int)rc);
  } else if (last && strcmp(mode, "die") == 0) {
    printf("rank %d: exits\n", rank);
    fflush(stdout);
    _exit(0);
  } else if (last && strcmp(mode, "revoke") == 0) {
    OK(infinicclCommRevoke(comm, 0));
    OK(infinicclCommDestroy(comm));
  } else if (last) {
    OK(infinicclCommAbort(comm));
  } else {
    char want[32];
    rc = infinicclAllReduce((int[1]){1}, (int[1]){0}, 1, infinicclInt32, infinicclSum, comm,
                            NULL);
    printf("rank %d: AllReduce with rank %d %s: %d %s\n", rank, n - 1,
           strcmp(mode, "die") == 0 ? "gone" : strcmp(mode, "revoke") == 0 ? "revoking" : "aborted",
           (int)rc, infinicclGetLastError(comm));
    snprintf(want, sizeof want, "rank %d", n - 1);
    CHECK(rc == infinicclRemoteError, "returned %d", (int)rc);
    CHECK(strstr(infinicclGetLastError(comm), want) != NULL, "the message names no %s", want);
    OK(infinicclCommAbort(comm));
  }
}

static double Now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  infinicclUniqueId id;
  infinicclComm_t comm = NULL;
  int n, rank, count = -1, user_rank = -1, a;
  const char *mode;
  if (argc < 5) {
    fprintf(stderr,
            "usage: %s <id file> <nranks> <rank> host|sim|badrank|missing [collective...]\n",
            argv[0]);
    return 2;
  }
  n = atoi(argv[2]);
  g_rank = rank = atoi(argv[3]);
  mode = argv[4];
  if (strcmp(mode, "stall") == 0 && getenv("TEST_NO_MPI_CHILD") == NULL) {
    /* The rank runs in a child; its exit code is the verdict. */
    const int want = rank == n - 1 ? 0 : 124;
    int status = 0;
    const pid_t child = fork();
    if (child == 0) {
      setenv("TEST_NO_MPI_CHILD", "1", 1);
      execv("/proc/self/exe", argv);
      _exit(127);
    }
    waitpid(child, &status, 0);
    printf("rank %d: exit %d, want %d\n", rank, WIFEXITED(status) ? WEXITSTATUS(status) : -1,
           want);
    return WIFEXITED(status) && WEXITSTATUS(status) == want ? 0 : 1;
  }
  g_sim = strcmp(mode, "sim") == 0;
  if (ShareId(argv[1], &id) != 0) {
    fprintf(stderr, "rank %d: the id file %s could not be shared\n", rank, argv[1]);
    return 1;
  }
  if (strcmp(mode, "missing") == 0 && rank == n - 1) {
    printf("rank %d: does not join (missing)\n", rank);
    return 0;
  }
  if (strcmp(mode, "shmoff") == 0) {
    const infinicclResult_t rc = infinicclCommInitRank(&comm, n, id, rank);
    const char *msg = infinicclGetLastError(NULL);
    printf("rank %d: %d %s\n", rank, (int)rc, msg);
    CHECK(rc == infinicclInvalidUsage, "CommInitRank returned %d", (int)rc);
    CHECK(strstr(msg, "INFINICCL_SHM=0") != NULL, "message: %s", msg);
    CHECK(comm == NULL, "a communicator was returned");
  } else if (strcmp(mode, "badrank") == 0 || strcmp(mode, "missing") == 0) {
    const int given = strcmp(mode, "badrank") == 0 && rank == n - 1 ? n : rank;
    const double start = Now();
    const infinicclResult_t rc = infinicclCommInitRank(&comm, n, id, given);
    const char *msg = infinicclGetLastError(NULL);
    const double took = Now() - start;
    printf("rank %d (gave rank %d): %d after %.1f s: %s\n", rank, given, (int)rc, took, msg);
    if (strcmp(mode, "badrank") == 0) {
      CHECK(rc == infinicclInvalidUsage, "CommInitRank returned %d", (int)rc);
      CHECK(strstr(msg, "out of range") != NULL, "message: %s", msg);
    } else {
      char want[64];
      snprintf(want, sizeof want, "rank %d of %d did not join", n - 1, n);
      CHECK(rc == infinicclRemoteError, "CommInitRank returned %d", (int)rc);
      CHECK(strstr(msg, want) != NULL, "message: %s", msg);
    }
    CHECK(comm == NULL, "a communicator was returned");
  } else {
    const double start = Now();
    OK(infinicclCommInitRank(&comm, n, id, rank));
    if (rank == 0) printf("rank 0: infinicclCommInitRank took %.1f ms\n", (Now() - start) * 1e3);
    if (comm != NULL) {
      OK(infinicclCommCount(comm, &count));
      OK(infinicclCommUserRank(comm, &user_rank));
      CHECK(count == n && user_rank == rank, "count %d rank %d, want %d %d", count, user_rank,
            n, rank);
      if (strcmp(mode, "host") != 0 && strcmp(mode, "sim") != 0) {
        Contract(comm, mode, rank, n);
        comm = NULL;
      }
      for (a = 5; a < argc && comm != NULL; ++a) {
        Run(argv[a], comm, rank, n, (size_t)1 << 18, infinicclInt32);
        Run(argv[a], comm, rank, n, (size_t)1 << 18, infinicclFloat32);
        Run(argv[a], comm, rank, n, (size_t)1 << 22, infinicclInt32);
      }
      if (comm != NULL) OK(infinicclCommDestroy(comm));
    }
  }
  if (rank == 0) remove(argv[1]);
  printf("rank %d of %d (%s): %s\n", rank, n, mode, g_failures == 0 ? "PASS" : "FAIL");
  return g_failures == 0 ? 0 : 1;
}
