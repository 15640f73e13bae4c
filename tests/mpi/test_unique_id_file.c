/* infinicclGetUniqueId + infinicclCommInitRank as upstream InfiniLM's
 * programs call them, through the public headers only: world rank 0 makes
 * the id and writes it to a FILE, the others read it after an MPI_Barrier,
 * and each joins with its rank in REVERSED order of its world rank. Then
 * AllReduce, AllGather and Broadcast in int32 and float32, and a Send/Recv
 * ring, each checked exactly: on host buffers (`host`) or on emulated
 * device buffers (`sim`, under INFINICCL_DEVICE=sim). `noinit`: the
 * program starts MPI itself and never calls infinicclInit; every rank's
 * CommInitRank then returns infinicclInvalidUsage naming infinicclInit.
 * usage: test_unique_id_file <id file> host|sim|noinit */
#include <infiniccl/infiniccl.h>
#include <infiniccl/infiniccl_sim.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { N = 1000 };

static int g_failures = 0;
static int g_world = 0;

#define OK(call)                                                                \
  do {                                                                          \
    infinicclResult_t rc_ = (call);                                             \
    if (rc_ != infinicclSuccess) {                                              \
      fprintf(stderr, "world rank %d: %s:%d: %s = %d: %s\n", g_world, __FILE__, \
              __LINE__, #call, (int)rc_, infinicclGetLastError(NULL));          \
      ++g_failures;                                                             \
    }                                                                           \
  } while (0)
#define CHECK(cond, ...)                                                                 \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      fprintf(stderr, "world rank %d: %s:%d: %s: ", g_world, __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                                      \
      fprintf(stderr, "\n");                                                             \
      ++g_failures;                                                                      \
    }                                                                                    \
  } while (0)

static int g_sim = 0;

#include "../side_buffers.h"

/* Element i of rank r's contribution; exact in int32 and float32. */
static double Value(int r, int i) {
  return (double)((r + 1) * 3 + i % 97);
}

static void Store(infinicclDataType_t t, void *h, int i, double v) {
  if (t == infinicclInt32) {
    ((int *)h)[i] = (int)v;
  } else {
    ((float *)h)[i] = (float)v;
  }
}
static double Load(infinicclDataType_t t, const void *h, int i) {
  return t == infinicclInt32 ? (double)((const int *)h)[i]
                             : (double)((const float *)h)[i];
}

static void Collectives(infinicclComm_t comm, int rank, int n, infinicclDataType_t t) {
  const size_t el = 4;
  char *h = malloc(el * N * (size_t)n), *back = malloc(el * N * (size_t)n);
  void *a = Alloc(el * N), *b = Alloc(el * N * (size_t)n);
  const char *name = t == infinicclInt32 ? "int32" : "float32";
  int i, r, bad = 0;

  for (i = 0; i < N; ++i) Store(t, h, i, Value(rank, i));
  Put(a, h, el * N);
  OK(infinicclAllReduce(a, b, N, t, infinicclSum, comm, NULL));
  Get(back, b, el * N);
  for (i = 0; i < N; ++i) {
    double want = 0;
    for (r = 0; r < n; ++r) want += Value(r, i);
    bad += Load(t, back, i) != want;
  }
  CHECK(bad == 0, "AllReduce %s: %d wrong elements", name, bad);

  bad = 0;
  OK(infinicclAllGather(a, b, N, t, comm, NULL));
  Get(back, b, el * N * (size_t)n);
  for (r = 0; r < n; ++r)
    for (i = 0; i < N; ++i) bad += Load(t, back, r * N + i) != Value(r, i);
  CHECK(bad == 0, "AllGather %s: %d wrong elements (rank order is CommInitRank's)", name,
        bad);

  bad = 0;
  for (i = 0; i < N; ++i) Store(t, h, i, rank == 0 ? 1000.0 + i : -1.0);
  Put(a, h, el * N);
  OK(infinicclBroadcast(a, a, N, t, 0, comm, NULL));
  Get(back, a, el * N);
  for (i = 0; i < N; ++i) bad += Load(t, back, i) != 1000.0 + i;
  CHECK(bad == 0, "Broadcast %s from rank 0: %d wrong elements", name, bad);

  /* Ring: send to rank+1, receive from rank-1. */
  bad = 0;
  for (i = 0; i < N; ++i) Store(t, h, i, Value(rank, i) * 2);
  Put(a, h, el * N);
  OK(infinicclGroupStart());
  OK(infinicclSend(a, N, t, (rank + 1) % n, comm, NULL));
  OK(infinicclRecv(b, N, t, (rank + n - 1) % n, comm, NULL));
  OK(infinicclGroupEnd());
  Get(back, b, el * N);
  for (i = 0; i < N; ++i) bad += Load(t, back, i) != Value((rank + n - 1) % n, i) * 2;
  CHECK(bad == 0, "Send/Recv ring %s: %d wrong elements from rank %d", name, bad,
        (rank + n - 1) % n);

  Free(a);
  Free(b);
  free(h);
  free(back);
}

/* World rank 0 makes the id and writes it to `path`; the others read it
 * after the barrier. */
static void ShareId(const char *path, infinicclUniqueId *id) {
  FILE *f;
  if (g_world == 0) {
    char tmp[4096];
    OK(infinicclGetUniqueId(id));
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    f = fopen(tmp, "wb");
    CHECK(f != NULL, "cannot write %s", tmp);
    if (f != NULL) {
      CHECK(fwrite(id, sizeof *id, 1, f) == 1, "short write");
      fclose(f);
      CHECK(rename(tmp, path) == 0, "rename to %s", path);
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (g_world != 0) {
    f = fopen(path, "rb");
    CHECK(f != NULL, "cannot read %s", path);
    if (f != NULL) {
      CHECK(fread(id, sizeof *id, 1, f) == 1, "short read");
      fclose(f);
    }
  }
}

/* MPI started by the program, no infinicclInit: refused on every rank. */
static int WithoutInit(const char *path, int *argc, char ***argv) {
  infinicclUniqueId id;
  infinicclComm_t comm = NULL;
  int size = 0;
  MPI_Init(argc, argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_world);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  ShareId(path, &id);
  CHECK(
      infinicclCommInitRank(&comm, size, id, size - 1 - g_world) == infinicclInvalidUsage,
      "CommInitRank without infinicclInit: %s", infinicclGetLastError(NULL));
  CHECK(
      strstr(infinicclGetLastError(NULL), "MPI initialised but no infinicclInit") != NULL,
      "message: %s", infinicclGetLastError(NULL));
  CHECK(comm == NULL, "a communicator was returned");
  MPI_Barrier(MPI_COMM_WORLD);
  if (g_world == 0) remove(path);
  printf("world rank %d without infinicclInit: %s\n", g_world,
         g_failures == 0 ? "PASS" : "FAIL");
  MPI_Finalize();
  return g_failures == 0 ? 0 : 1;
}

int main(int argc, char **argv) {
  infinicclUniqueId id;
  infinicclComm_t comm = NULL;
  int world_size = 0, rank, count = -1, user_rank = -1;
  if (argc != 3) {
    fprintf(stderr, "usage: %s <id file> host|sim|noinit\n", argv[0]);
    return 2;
  }
  if (strcmp(argv[2], "noinit") == 0) return WithoutInit(argv[1], &argc, &argv);
  g_sim = strcmp(argv[2], "sim") == 0;
  OK(infinicclInit(&argc, &argv));
  OK(infinicclGetRank(&g_world));
  OK(infinicclGetSize(&world_size));
  ShareId(argv[1], &id);

  rank = world_size - 1 - g_world;
  OK(infinicclCommInitRank(&comm, world_size, id, rank));
  if (comm != NULL) {
    OK(infinicclCommCount(comm, &count));
    OK(infinicclCommUserRank(comm, &user_rank));
    CHECK(count == world_size && user_rank == rank, "count %d rank %d, want %d %d", count,
          user_rank, world_size, rank);
    Collectives(comm, rank, world_size, infinicclInt32);
    Collectives(comm, rank, world_size, infinicclFloat32);
    OK(infinicclCommDestroy(comm));
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (g_world == 0) remove(argv[1]);
  printf("world rank %d as rank %d (%s buffers): %s\n", g_world, rank, argv[2],
         g_failures == 0 ? "PASS" : "FAIL");
  OK(infinicclFinalize());
  return g_failures == 0 ? 0 : 1;
}
