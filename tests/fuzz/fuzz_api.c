/* Fuzz target: every public entry point with arguments decoded from the
 * input, on a 1-rank communicator (no launcher needed: MPI singleton).
 *
 * The library must answer each call with a valid result code and, on
 * failure, a message -- never crash, abort, or trip a sanitizer. Written in
 * C so that out-of-range enum values are passed the way a C caller passes
 * them (in C++ forming them is itself undefined).
 *
 * Only the caller's side of the contract is kept: pointers are NULL or
 * point into buffers large enough for any count that could pass
 * validation; counts beyond the buffers come with NULL buffers, which
 * validation must reject. Anything else the library accepts is a bug the
 * sanitizers report. Infinite waits cannot happen at one rank: Send/Recv
 * (tagged too) need a peer other than the caller, and a receive from
 * INFINICCL_ANY_SOURCE outside a group needs a second rank.
 *
 * Built as a libFuzzer target with clang (-DINFINICCL_FUZZ=ON) and, with
 * any compiler, as fuzz_api_replay (fuzz_replay.c): deterministic random
 * inputs or the files given on its command line. */
#include <infiniccl/infiniccl.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kBufBytes = 1 << 16, kMaxSmallBytes = kBufBytes / 2 };

static unsigned char g_a[kBufBytes], g_b[kBufBytes];
static infinicclComm_t g_comm, g_dead;  /* live 1-rank comm; a destroyed handle */
static int g_stream_dummy;
long fuzz_api_ok, fuzz_api_rejected; /* calls that succeeded / were refused */

typedef struct {
  const uint8_t *p;
  size_t n;
} Input;

static uint64_t Take(Input *in, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) {
    v = (v << 8) | (in->n ? *in->p : 0);
    if (in->n) ++in->p, --in->n;
  }
  return v;
}

static void Fail(const char *what, int rc) {
  fprintf(stderr, "fuzz_api: %s returned %d (%s), last error '%s'\n", what, rc,
          infinicclGetErrorString((infinicclResult_t)rc), infinicclGetLastError(NULL));
  abort(); /* a finding: libFuzzer saves the input */
}

/* Every result must be a known code; a failure must come with a message. */
static void Check(const char *what, infinicclResult_t rc, infinicclComm_t comm) {
  if ((int)rc < 0 || (int)rc >= (int)infinicclNumResults) Fail(what, (int)rc);
  if (rc == infinicclSuccess) {
    ++fuzz_api_ok;
  } else {
    ++fuzz_api_rejected;
    const char *m = infinicclGetLastError(comm);
    if (m == NULL || m[0] == '\0') Fail(what, (int)rc);
  }
}

static infinicclComm_t PickComm(Input *in) {
  switch (Take(in, 1) % 6) {
    case 0: return NULL;
    case 1: return g_dead;
    case 2: return (infinicclComm_t)(uintptr_t)Take(in, 8); /* never issued */
    default: return g_comm;
  }
}

/* Edges of the enums: ops 0..7 (4 Avg, 5..7 the bitwise ops, which a
 * floating dtype 8..11 refuses; 8 infinicclNumOps), dtypes 0..11 (12
 * infinicclNumTypes), roots and peers at one rank. */
static int PickInt(Input *in) {
  static const int kEdges[] = {0, 1, -1, 2, 4, 5, 7, 8, 9, 11, 12, 13, 255, 65536,
                               0x7fffffff, (int)0x80000000u};
  const uint64_t v = Take(in, 1);
  if (v < 200) return kEdges[v % (sizeof kEdges / sizeof kEdges[0])];
  return (int)Take(in, 4);
}

/* A count and the bytes it needs per element: small counts fit the buffers
 * for every dtype (8 bytes max) at one rank; huge ones set *huge. */
static size_t PickCount(Input *in, int *huge) {
  static const size_t kHuge[] = {(size_t)1 << 31, ((size_t)1 << 31) + 1, SIZE_MAX,
                                 SIZE_MAX / 2, SIZE_MAX / 8 + 1, (size_t)1 << 61,
                                 (size_t)0x7fffffff + 2};
  const uint64_t mode = Take(in, 1) % 8;
  *huge = 0;
  if (mode == 0) return 0;
  if (mode == 1) {
    *huge = 1;
    return kHuge[Take(in, 1) % (sizeof kHuge / sizeof kHuge[0])];
  }
  return (size_t)(Take(in, 2) % (kMaxSmallBytes / 8)) + 1;
}

/* NULL, the start of a buffer, or an offset into it (overlaps, misalignment). */
static void *PickPtr(Input *in, unsigned char *buf, int huge) {
  const uint64_t v = Take(in, 1) % 8;
  if (huge || v == 0) return NULL;
  if (v <= 4) return buf;
  return buf + Take(in, 2) % (kBufBytes - kMaxSmallBytes);
}

static void *PickStream(Input *in) { return Take(in, 1) % 4 == 0 ? &g_stream_dummy : NULL; }

static void Collective(Input *in) {
  int huge = 0;
  const uint64_t which = Take(in, 1) % 13;
  const size_t count = PickCount(in, &huge);
  const int dt = PickInt(in), op = PickInt(in), root = PickInt(in);
  infinicclComm_t comm = PickComm(in);
  void *s = PickPtr(in, g_a, huge);
  void *r = Take(in, 1) % 4 == 0 ? s : PickPtr(in, g_b, huge); /* in place or not */
  void *stream = PickStream(in);
  const infinicclDataType_t DT = (infinicclDataType_t)dt;
  const infinicclRedOp_t OP = (infinicclRedOp_t)op;
  infinicclResult_t rc = infinicclSuccess;
  switch (which) {
    case 0: rc = infinicclAllReduce(s, r, count, DT, OP, comm, stream); break;
    case 1: rc = infinicclBroadcast(s, r, count, DT, root, comm, stream); break;
    case 2: rc = infinicclBcast(r, count, DT, root, comm, stream); break;
    case 3: rc = infinicclReduce(s, r, count, DT, OP, root, comm, stream); break;
    case 4: rc = infinicclAllGather(s, r, count, DT, comm, stream); break;
    case 5: rc = infinicclGather(s, r, count, DT, root, comm, stream); break;
    case 6: rc = infinicclScatter(s, r, count, DT, root, comm, stream); break;
    case 7: rc = infinicclReduceScatter(s, r, count, DT, OP, comm, stream); break;
    case 8: rc = infinicclAllToAll(s, r, count, DT, comm, stream); break;
    case 9: rc = infinicclSend(s, count, DT, root, comm, stream); break;
    case 10: rc = infinicclRecv(r, count, DT, root, comm, stream); break;
    case 11: rc = infinicclSendTagged(s, count, DT, root, op, comm, stream); break;
    case 12: {
      int source = -7;
      rc = infinicclRecvTagged(r, count, DT, root, op, Take(in, 1) % 2 ? &source : NULL, comm,
                               stream);
      /* A refused call writes no sender. */
      if (rc != infinicclSuccess && source != -7) Fail("RecvTagged source", rc);
      break;
    }
  }
  Check("collective", rc, comm);
  /* Contract checks the sanitizers cannot see: a huge count never succeeds
   * (its buffers are NULL), nor does a call on a handle that is not live. */
  if (rc == infinicclSuccess && count > 0 && (huge || comm != g_comm)) Fail("collective", rc);
}

static void Other(Input *in) {
  int out = 0;
  infinicclComm_t c = NULL;
  infinicclUniqueId id;
  infinicclStagingStats stats;
  const int use_out = Take(in, 1) % 4 != 0;
  switch (Take(in, 1) % 18) {
    case 0: Check("GetRank", infinicclGetRank(use_out ? &out : NULL), NULL); break;
    case 1: Check("GetSize", infinicclGetSize(use_out ? &out : NULL), NULL); break;
    case 2: Check("GetUniqueId", infinicclGetUniqueId(use_out ? &id : NULL), NULL); break;
    case 3: {
      const int nranks = PickInt(in), rank = PickInt(in);
      memset(&id, (int)Take(in, 1), sizeof id);
      Check("CommInitRank", infinicclCommInitRank(use_out ? &c : NULL, nranks, id, rank), NULL);
      break;
    }
    case 4: {
      int devlist[4];
      const int ndev = PickInt(in) % 5;
      for (int i = 0; i < 4; ++i) devlist[i] = PickInt(in);
      const infinicclResult_t rc =
          infinicclCommInitAll(use_out ? &c : NULL, ndev, Take(in, 1) % 4 ? devlist : NULL);
      Check("CommInitAll", rc, NULL);
      if (rc == infinicclSuccess) Check("CommDestroy", infinicclCommDestroy(c), NULL);
      break;
    }
    case 5: {
      infinicclComm_t h = PickComm(in);
      if (h != g_comm) Check("CommDestroy", infinicclCommDestroy(h), NULL);
      break;
    }
    case 6: {
      infinicclComm_t h = PickComm(in);
      Check("CommCount", infinicclCommCount(h, use_out ? &out : NULL), h);
      break;
    }
    case 7: {
      infinicclComm_t h = PickComm(in);
      Check("CommUserRank", infinicclCommUserRank(h, use_out ? &out : NULL), h);
      break;
    }
    case 8:
      if (infinicclGetErrorString((infinicclResult_t)PickInt(in)) == NULL)
        Fail("GetErrorString", 0);
      break;
    case 9:
      if (infinicclGetLastError(PickComm(in)) == NULL) Fail("GetLastError", 0);
      break;
    case 10: Check("GetVersion", infinicclGetVersion(use_out ? &out : NULL), NULL); break;
    case 11: Check("GetStagingStats", infinicclGetStagingStats(use_out ? &stats : NULL), NULL); break;
    case 12: Check("MemTrim", infinicclMemTrim(), NULL); break;
    case 13: {
      infinicclComm_t h = PickComm(in);
      infinicclResult_t async = infinicclSuccess;
      Check("CommGetAsyncError", infinicclCommGetAsyncError(h, use_out ? &async : NULL), h);
      break;
    }
    case 14: {
      infinicclComm_t h = PickComm(in);
      char text[16];
      const size_t len = Take(in, 1) % (sizeof text + 1);
      Check("CommDescribeWait", infinicclCommDescribeWait(h, use_out ? text : NULL, len), h);
      break;
    }
    case 15: {
      /* The live communicator is never revoked: every later call would fail. */
      infinicclComm_t h = PickComm(in);
      const int flags = PickInt(in);
      if (h != g_comm) Check("CommRevoke", infinicclCommRevoke(h, flags), h);
      break;
    }
    case 16: {
      infinicclComm_t h = PickComm(in);
      int ranks[4];
      int count = (int)(Take(in, 1) % 6) - 1;
      infinicclResult_t rc =
          infinicclCommGetFailedRanks(h, use_out ? ranks : NULL, use_out ? &count : NULL);
      Check("CommGetFailedRanks", rc, h);
      if (rc == infinicclSuccess && count != 0)
        Fail("CommGetFailedRanks: failed ranks on a healthy communicator", count);
      break;
    }
    case 17: {
      infinicclComm_t h = PickComm(in);
      int exclude[3] = {PickInt(in), PickInt(in), PickInt(in)};
      const int n = (int)(Take(in, 1) % 5) - 1;
      const int flags = (int)(Take(in, 1) % 3);
      /* The aborting form would revoke the live communicator. */
      if (h == g_comm && flags == INFINICCL_SHRINK_ABORT) break;
      infinicclResult_t rc = infinicclCommShrink(h, Take(in, 1) % 4 ? exclude : NULL, n,
                                                 use_out ? &c : NULL, flags);
      Check("CommShrink", rc, h);
      if (rc == infinicclSuccess) Check("CommDestroy", infinicclCommDestroy(c), c);
      break;
    }
  }
}

/* libFuzzer ends with exit(): finalise there, or the launcher reports an
 * abnormal termination. (A second Finalize just returns InvalidUsage.) */
static void FinalizeAtExit(void) { infinicclFinalize(); }

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  /* Thousands of rejected calls a second: no WARN line for each. */
  setenv("INFINICCL_DEBUG", "NONE", 1);
  setenv("INFINICCL_ABORT_ON_ERROR", "0", 1);
  if (infinicclInit(NULL, NULL) != infinicclSuccess ||
      infinicclCommInitAll(&g_dead, 0, NULL) != infinicclSuccess ||
      infinicclCommDestroy(g_dead) != infinicclSuccess ||
      infinicclCommInitAll(&g_comm, 0, NULL) != infinicclSuccess) {
    fprintf(stderr, "fuzz_api: cannot set up a 1-rank communicator: %s\n",
            infinicclGetLastError(NULL));
    exit(2);
  }
  atexit(FinalizeAtExit);
  /* Init twice must be refused, not crash. */
  if (infinicclInit(NULL, NULL) != infinicclInvalidUsage) Fail("second Init", 0);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Input in = {data, size};
  for (int calls = 0; in.n > 0 && calls < 64; ++calls) {
    if (Take(&in, 1) % 3 == 0) {
      Other(&in);
    } else {
      Collective(&in);
    }
  }
  return 0;
}
