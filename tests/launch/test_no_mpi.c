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
 *   nodes:   each rank on a host of its own (on_own_host.sh): every rank's
 *            CommInitRank returns InvalidUsage at once, saying the ranks
 *            span nodes and naming the launchers that give them MPI.
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
 *   p2pabort, p2prevoke, p2pdie: the same, the others waiting in a Recv
 *            from the last rank (rank 0 outside a group, the rest inside).
 * usage: test_no_mpi <id file> <nranks> <rank>
 *                    host|sim|badrank|missing|shmoff|nodes|mismatch|abort|revoke|die|
 *                    cycles|stall
 *                    [AllReduce Reduce Broadcast AllGather ReduceScatter
 *                     Gather Scatter AllToAll SendRecv Split P2p ...]
 * Split: children of even and odd ranks, an AllReduce on each.
 * P2p: Send/Recv through the node's shared memory (P2pSuite): a ring
 * outside a group at 0, 1, 1 Mi and 4 Mi elements; a group in which every
 * rank sends to and receives from every rank (itself included), receives
 * posted first, in every dtype; tags received out of order; receives from
 * INFINICCL_ANY_SOURCE; a receive shorter than its message. */
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
  /* p2pabort, p2prevoke, p2pdie: the others wait in a Recv from the last
   * rank (outside a group on rank 0, inside one on the others) instead of
   * the second AllReduce. */
  const int p2p = strncmp(mode, "p2p", 3) == 0;
  if (p2p) mode += 3;
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
    int got[1] = {0};
    if (!p2p) {
      rc = infinicclAllReduce((int[1]){1}, (int[1]){0}, 1, infinicclInt32, infinicclSum, comm,
                              NULL);
    } else if (rank == 0) {
      rc = infinicclRecv(got, 1, infinicclInt32, n - 1, comm, NULL);
    } else {
      OK(infinicclGroupStart());
      OK(infinicclRecv(got, 1, infinicclInt32, n - 1, comm, NULL));
      rc = infinicclGroupEnd();
    }
    printf("rank %d: %s with rank %d %s: %d %s\n", rank, p2p ? "Recv" : "AllReduce", n - 1,
           strcmp(mode, "die") == 0 ? "gone" : strcmp(mode, "revoke") == 0 ? "revoking" : "aborted",
           (int)rc, infinicclGetLastError(comm));
    snprintf(want, sizeof want, "rank %d", n - 1);
    CHECK(rc == infinicclRemoteError, "returned %d", (int)rc);
    CHECK(strstr(infinicclGetLastError(comm), want) != NULL, "the message names no %s", want);
    OK(infinicclCommAbort(comm));
  }
}

/* ---- P2p: Send/Recv through the node's shared memory ---- */

static const infinicclDataType_t kTypes[] = {
    infinicclInt8,   infinicclInt16,   infinicclInt32,  infinicclInt64,
    infinicclUInt8,  infinicclUInt16,  infinicclUInt32, infinicclUInt64,
    infinicclFloat16, infinicclBFloat16, infinicclFloat32, infinicclFloat64};
static size_t TypeSize(infinicclDataType_t t) {
  switch (t) {
    case infinicclInt8: case infinicclUInt8: return 1;
    case infinicclInt16: case infinicclUInt16: case infinicclFloat16: case infinicclBFloat16:
      return 2;
    case infinicclInt32: case infinicclUInt32: case infinicclFloat32: return 4;
    default: return 8;
  }
}
/* Element i of the message from `src` to `dst` of tag `tag`: a small
 * integer (0..99), exact in every type. */
static int Elem(int src, int dst, int tag, size_t i) {
  return (int)((src * 7 + dst * 3 + tag * 5 + i) % 100);
}
/* IEEE half and bfloat16 of a small non-negative integer, by hand. */
static unsigned short HalfOf(int v) {
  int e = 0;
  if (v == 0) return 0;
  while ((v >> (e + 1)) != 0) ++e;
  return (unsigned short)(((e + 15) << 10) | ((v << (10 - e)) & 0x3ff));
}
static unsigned short Bf16Of(int v) {
  float f = (float)v;
  unsigned int bits;
  memcpy(&bits, &f, 4);
  return (unsigned short)(bits >> 16);
}
/* The message's bytes, computed here from (src, dst, tag). */
static void Expect(infinicclDataType_t t, char *h, size_t count, int src, int dst, int tag) {
  size_t i;
  for (i = 0; i < count; ++i) {
    const int v = Elem(src, dst, tag, i);
    void *at = h + i * TypeSize(t);
    switch (t) {
      case infinicclInt8: *(signed char *)at = (signed char)v; break;
      case infinicclUInt8: *(unsigned char *)at = (unsigned char)v; break;
      case infinicclInt16: *(short *)at = (short)v; break;
      case infinicclUInt16: *(unsigned short *)at = (unsigned short)v; break;
      case infinicclInt32: *(int *)at = v; break;
      case infinicclUInt32: *(unsigned int *)at = (unsigned int)v; break;
      case infinicclInt64: *(long long *)at = v; break;
      case infinicclUInt64: *(unsigned long long *)at = (unsigned long long)v; break;
      case infinicclFloat16: *(unsigned short *)at = HalfOf(v); break;
      case infinicclBFloat16: *(unsigned short *)at = Bf16Of(v); break;
      case infinicclFloat32: *(float *)at = (float)v; break;
      default: *(double *)at = (double)v; break;
    }
  }
}

/* A message on the side under test: its buffer and its host copy. */
typedef struct {
  void *buf;
  char *host;
  size_t count;
  infinicclDataType_t t;
} Msg;
/* A message's buffer and host copy, with a guard byte past the end. */
static Msg NewMsg(infinicclDataType_t t, size_t count) {
  Msg m;
  m.t = t;
  m.count = count;
  m.host = malloc(count * TypeSize(t) + 1);
  m.buf = Alloc(count * TypeSize(t) + 1);
  return m;
}
static Msg MakeSend(infinicclDataType_t t, size_t count, int src, int dst, int tag) {
  Msg m = NewMsg(t, count);
  Expect(t, m.host, count, src, dst, tag);
  Put(m.buf, m.host, count * TypeSize(t));
  return m;
}
static Msg MakeRecv(infinicclDataType_t t, size_t count) {
  Msg m = NewMsg(t, count);
  memset(m.host, 0xA5, count * TypeSize(t) + 1);
  Put(m.buf, m.host, count * TypeSize(t) + 1);
  return m;
}
/* Checks a received message against the one `src` sent of `tag`. */
static void CheckRecv(Msg *m, int src, int dst, int tag, const char *what) {
  const size_t bytes = m->count * TypeSize(m->t);
  char *want = malloc(bytes + 1);
  Get(m->host, m->buf, bytes);
  Expect(m->t, want, m->count, src, dst, tag);
  CHECK(memcmp(m->host, want, bytes) == 0, "%s: dtype %d, %zu elements from rank %d tag %d differ",
        what, (int)m->t, m->count, src, tag);
  free(want);
}
static void Drop(Msg *m) {
  Free(m->buf);
  free(m->host);
}

static void P2pSuite(infinicclComm_t comm, int rank, int n) {
  const size_t sizes[] = {0, 1, (size_t)1 << 18, (size_t)1 << 22}; /* int32: 0, 4 B, 1, 16 MiB */
  const int right = (rank + 1) % n, left = (rank + n - 1) % n;
  size_t s, k;
  int p, tag;
  /* 1. A ring outside a group: rank 0 sends first, the others receive first. */
  for (s = 0; s < 4; ++s) {
    const infinicclDataType_t t = s == 2 ? infinicclFloat32 : infinicclInt32;
    Msg out = MakeSend(t, sizes[s], rank, right, 0), in = MakeRecv(t, sizes[s]);
    if (rank == 0) OK(infinicclSend(out.buf, out.count, t, right, comm, NULL));
    OK(infinicclRecv(in.buf, in.count, t, left, comm, NULL));
    if (rank != 0) OK(infinicclSend(out.buf, out.count, t, right, comm, NULL));
    CheckRecv(&in, left, rank, 0, "ring");
    Drop(&out);
    Drop(&in);
  }
  /* 2. A group: every rank receives from and sends to every rank (itself
   * included), receives posted first; every dtype at 1 and 1000 elements,
   * int32 at 0, 1 MiB and 16 MiB. */
  for (k = 0; k < sizeof kTypes / sizeof kTypes[0] + 3; ++k) {
    const size_t nt = sizeof kTypes / sizeof kTypes[0];
    const infinicclDataType_t t = k < nt ? kTypes[k] : infinicclInt32;
    const size_t counts[] = {0, (size_t)1 << 18, (size_t)1 << 22};
    size_t c;
    for (c = 0; c < (k < nt ? 2u : 1u); ++c) {
      const size_t count = k < nt ? (c == 0 ? 1 : 1000) : counts[k - nt];
      Msg *out = malloc(sizeof(Msg) * (size_t)n), *in = malloc(sizeof(Msg) * (size_t)n);
      for (p = 0; p < n; ++p) {
        out[p] = MakeSend(t, count, rank, p, 0);
        in[p] = MakeRecv(t, count);
      }
      OK(infinicclGroupStart());
      for (p = 0; p < n; ++p) OK(infinicclRecv(in[p].buf, count, t, p, comm, NULL));
      for (p = 0; p < n; ++p) OK(infinicclSend(out[p].buf, count, t, p, comm, NULL));
      OK(infinicclGroupEnd());
      for (p = 0; p < n; ++p) {
        CheckRecv(&in[p], p, rank, 0, "all pairs in a group");
        Drop(&out[p]);
        Drop(&in[p]);
      }
      free(out);
      free(in);
    }
  }
  /* 3. Tags received out of order: tags 1, 2, 3 sent to the right, received
   * from the left as 3, 2, 1; outside a group at 1000 elements (each fits
   * the ring), then in a group at 1 MiB and 16 MiB. */
  for (s = 0; s < 3; ++s) {
    const size_t count = s == 0 ? 1000 : s == 1 ? (size_t)1 << 18 : (size_t)1 << 22;
    Msg out[3], in[3];
    /* Written when each receive completes: at GroupEnd in a group, so they
     * live until then. */
    int sources[3] = {-7, -7, -7};
    for (tag = 1; tag <= 3; ++tag) {
      out[tag - 1] = MakeSend(infinicclInt32, count, rank, right, tag);
      in[tag - 1] = MakeRecv(infinicclInt32, count);
    }
    if (s != 0) OK(infinicclGroupStart());
    for (tag = 1; tag <= 3; ++tag) {
      OK(infinicclSendTagged(out[tag - 1].buf, count, infinicclInt32, right, tag, comm, NULL));
    }
    for (tag = 3; tag >= 1; --tag) {
      OK(infinicclRecvTagged(in[tag - 1].buf, count, infinicclInt32, left, tag,
                             &sources[tag - 1], comm, NULL));
    }
    if (s != 0) OK(infinicclGroupEnd());
    for (tag = 1; tag <= 3; ++tag) {
      Get(in[tag - 1].host, in[tag - 1].buf, 0); /* after the stream: *source set */
      CHECK(sources[tag - 1] == left, "tag %d: source %d, want %d", tag, sources[tag - 1],
            left);
      CheckRecv(&in[tag - 1], left, rank, tag, "tags out of order");
      Drop(&out[tag - 1]);
      Drop(&in[tag - 1]);
    }
  }
  /* 4. INFINICCL_ANY_SOURCE: each rank in turn receives one message from
   * every other rank, outside a group at 80 elements and in a group at
   * 1 MiB; the senders reported are distinct, the data each sender's. */
  for (s = 0; s < 2; ++s) {
    const size_t count = s == 0 ? 80 : (size_t)1 << 18;
    int root;
    for (root = 0; root < n; ++root) {
      if (rank != root) {
        Msg out = MakeSend(infinicclInt32, count, rank, root, 9);
        if (s != 0) OK(infinicclGroupStart());
        OK(infinicclSendTagged(out.buf, count, infinicclInt32, root, 9, comm, NULL));
        if (s != 0) OK(infinicclGroupEnd());
        Get(out.host, out.buf, 0);
        Drop(&out);
      } else {
        Msg *in = malloc(sizeof(Msg) * (size_t)n);
        int *source = malloc(sizeof(int) * (size_t)n), seen = 0, j;
        for (j = 0; j < n - 1; ++j) {
          in[j] = MakeRecv(infinicclInt32, count);
          source[j] = -7;
        }
        if (s != 0) OK(infinicclGroupStart());
        for (j = 0; j < n - 1; ++j) {
          OK(infinicclRecvTagged(in[j].buf, count, infinicclInt32, INFINICCL_ANY_SOURCE, 9,
                                 &source[j], comm, NULL));
        }
        if (s != 0) OK(infinicclGroupEnd());
        for (j = 0; j < n - 1; ++j) {
          Get(in[j].host, in[j].buf, 0);
          CHECK(source[j] >= 0 && source[j] < n && source[j] != rank &&
                    (seen & (1 << source[j])) == 0,
                "any source: receive %d reported sender %d", j, source[j]);
          if (source[j] >= 0 && source[j] < n) {
            seen |= 1 << source[j];
            CheckRecv(&in[j], source[j], rank, 9, "any source");
          }
          Drop(&in[j]);
        }
        free(in);
        free(source);
      }
    }
  }
  /* 5. A receive shorter than its message (host buffers): the receiver's
   * call returns infinicclRemoteError saying so, the sender's succeeds, and
   * the pair goes on working. */
  if (rank <= 1 && n >= 2) {
    int big[2000], small[1000], i;
    infinicclResult_t rc;
    for (i = 0; i < 2000; ++i) big[i] = Elem(0, 1, 4, (size_t)i);
    if (rank == 0) {
      OK(infinicclSendTagged(big, 2000, infinicclInt32, 1, 4, comm, NULL));
      OK(infinicclSendTagged(big, 1000, infinicclInt32, 1, 4, comm, NULL));
    } else {
      rc = infinicclRecvTagged(small, 1000, infinicclInt32, 0, 4, NULL, comm, NULL);
      printf("rank 1: a receive shorter than its message: %d %s\n", (int)rc,
             infinicclGetLastError(comm));
      CHECK(rc == infinicclRemoteError, "short receive returned %d", (int)rc);
      CHECK(strstr(infinicclGetLastError(comm), "truncated") != NULL, "message: %s",
            infinicclGetLastError(comm));
      memset(small, 0, sizeof small);
      OK(infinicclRecvTagged(small, 1000, infinicclInt32, 0, 4, NULL, comm, NULL));
      CHECK(memcmp(small, big, sizeof small) == 0, "the receive after the short one differs");
    }
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
  } else if (strcmp(mode, "nodes") == 0) {
    /* Each rank on a host of its own (on_own_host.sh): across nodes host
     * buffers need MPI, so every rank is refused at once, told how to
     * launch. */
    const infinicclResult_t rc = infinicclCommInitRank(&comm, n, id, rank);
    const char *msg = infinicclGetLastError(NULL);
    printf("rank %d: %d %s\n", rank, (int)rc, msg);
    CHECK(rc == infinicclInvalidUsage, "CommInitRank returned %d", (int)rc);
    CHECK(strstr(msg, "more than one node") != NULL, "message: %s", msg);
    CHECK(strstr(msg, "icclrun, mpirun or srun") != NULL, "message: %s", msg);
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
        if (strcmp(argv[a], "P2p") == 0) {
          P2pSuite(comm, rank, n);
          continue;
        }
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
