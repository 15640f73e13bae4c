// Correctness matrix in the style of nccl-tests: every collective x dtype x
// reduction op x count x in-place/out-of-place x root, on host buffers.
// Every element of every result is compared with a value computed here
// independently; guard zones around each buffer catch out-of-bounds writes,
// and buffers a collective must not write (send buffers, recvbuff at a
// non-root of Reduce/Gather) are checked to be unchanged.
//
// Usage: test_collectives [--large-count=N] [--mpi-thread=serialized]
// [--dtypes=Name,...] [--bitwise] [CollectiveName...] (default: all
// collectives, all dtypes, ops Sum..Avg); ITEST_VERBOSE=1 in the environment
// prints each case as it starts. --bitwise runs the reductions with Band,
// Bor and Bxor instead, on the integer types, and checks that each floating
// type is refused with infinicclInvalidArgument, writing nothing.
// --dtypes=Int8,Float16 runs only those dtypes (names as in kDtypes).
// --mpi-thread=serialized starts MPI at MPI_THREAD_SERIALIZED before
// infinicclInit, so every collective takes the library's serialised
// (nonblocking, polled) path. --ranks-on-node=N tells infinicclInit that N
// ranks share this node (the launcher's variable, overwritten before the
// call), so on a machine with fewer cores the library waits for MPI by
// polling (mpi_thread.h; with MPICH, Open MPI yields by itself).
// Device-buffer build (test_collectives_sim) only: --host-ranks=R,R... keeps
// those ranks on host buffers without the emulated device (a mixed job);
// --expect-hier=sharded|leader fails unless that two-level AllReduce form
// (src/hier) ran on every rank; --expect-hier=none unless none ran;
// with --expect-group-shm also unless the steps inside a group of two or
// more ranks ran on its shared memory (Topology::group_shm).
// --route-check=flat|sharded|leader runs, instead of the matrix, calls just
// below and at the two-level thresholds that INFINICCL_HIERARCHY_MIN_BYTES=auto
// gives (topology.h, HierMinBytes), on emulated device buffers with exact
// results: Broadcast of 64 KiB - 4 and 64 KiB must be flat and two-level,
// AllReduce of 16 MiB - 4 flat and AllReduce of 16 MiB the form named.
// --expect-shm fails unless every collective of the matrix took the
// shared-memory path on every rank, and no other path: the route's INFO
// line of each kind (INFINICCL_DEBUG=INFO, set here with
// INFINICCL_DEBUG_FILE to a file of this process, read back at the end).
#include <mpi.h>
#include <unistd.h>

#include <array>
#include <cctype>
#include <cinttypes>
#include <cstring>
#include <cstdlib>
#include <fstream>
#include <set>
#include <span>
#include <string>

#include "device_mirror.h"
#include "test_util.h"
#ifdef ITEST_DEVICE_MIRROR
#include "hier/topology.h"
#endif
#ifdef ITEST_DEVICE_VENDOR
#include <dlfcn.h>
#endif

using namespace itest;

namespace {

enum class Coll { AllReduce, Broadcast, Bcast, Reduce, AllGather, Gather, Scatter, ReduceScatter,
                  AllToAll, SendRecv };
constexpr Coll kAllColls[] = {Coll::AllReduce, Coll::Broadcast,     Coll::Bcast,    Coll::Reduce,
                              Coll::AllGather, Coll::Gather,        Coll::Scatter,
                              Coll::ReduceScatter, Coll::AllToAll, Coll::SendRecv};
const char *CollName(Coll c) {
  static const char *const kNames[] = {"AllReduce", "Broadcast",     "Bcast",    "Reduce",
                                       "AllGather", "Gather",        "Scatter",
                                       "ReduceScatter", "AllToAll", "SendRecv"};
  return kNames[static_cast<int>(c)];
}
bool IsReduction(Coll c) {
  return c == Coll::AllReduce || c == Coll::Reduce || c == Coll::ReduceScatter;
}
bool IsRooted(Coll c) {
  return c == Coll::Broadcast || c == Coll::Bcast || c == Coll::Reduce || c == Coll::Gather ||
         c == Coll::Scatter;
}

// Odd and prime counts catch chunking/remainder bugs; 65537 crosses 64 Ki.
// --large-count=N replaces the last one: sanitizer builds use a smaller one,
// since checking ~10^8 elements at -O0 under ASan takes minutes and adds
// nothing there (they look for memory errors, not for wrong values).
size_t g_counts[] = {0, 1, 1031, 65537};
// --ring: ReduceScatter only, at one count per dtype that makes the whole
// message at least 4 MiB, where the library (built against Open MPI) takes
// its own ring instead of MPI_Reduce_scatter_block. The +3 leaves the ring's
// last 1 MiB column round partial.
bool g_ring = false;
size_t RingCount(size_t elem, int n) {
  const size_t total = size_t{4} << 20, per_column = elem * size_t(n);
  return (total + per_column - 1) / per_column + 3;
}
// --dtypes: the dtypes to run (empty: all).
std::set<std::string> g_dtypes;
// --bitwise: the ops Band, Bor, Bxor (reductions of integer types) instead
// of Sum..Avg.
bool g_bitwise = false;
// Compare exactly (ops other than Avg never need a tolerance).
constexpr infinicclRedOp_t kExact = infinicclSum;

struct World {
  int rank;
  int n;
  infinicclComm_t comm;
};

struct Case {
  Coll coll;
  infinicclDataType_t dt;
  infinicclRedOp_t op;  // infinicclNumOps for data-moving collectives
  size_t count;
  int root;  // -1 when not rooted
  bool inplace;
  uint64_t seed;  // makes every case's data distinct from the previous one's
};

long g_cases = 0;
long g_elements = 0;

std::string Describe(const Case &c) {
  char s[192];
  std::snprintf(s, sizeof s, "%s dtype=%s op=%s count=%zu root=%d inplace=%d",
                CollName(c.coll), Info(c.dt).name, OpName(c.op), c.count, c.root,
                int(c.inplace));
  return s;
}

size_t Bytes(const Case &c, size_t elems) { return elems * Info(c.dt).size; }
unsigned char *At(const Case &c, GuardedBuffer &b, size_t elem) { return b.data() + Bytes(c, elem); }

template <class F>
void Fill(const Case &c, GuardedBuffer &b, size_t first, size_t count, F value) {
  for (size_t i = 0; i < count; ++i) Encode(c.dt, b.data(), first + i, value(i));
}

// Elements [first, first+count) of b must equal want(i), i relative to first.
template <class F>
void CheckRegion(const Case &c, const char *region, const GuardedBuffer &b, size_t first,
                 size_t count, infinicclRedOp_t cmp, F want) {
  int shown = 0;
  for (size_t i = 0; i < count; ++i) {
    double got = Decode(c.dt, b.data(), first + i), exp = want(i);
    if (Matches(c.dt, cmp, got, exp)) continue;
    if (shown++ < 3)
      Fail(__FILE__, __LINE__, "element mismatch", "%s region=%s index=%zu expected=%.17g got=%.17g",
           Describe(c).c_str(), region, first + i, exp, got);
    else
      ++g_failures;
  }
  g_elements += static_cast<long>(count);
}

void CheckGuards(const Case &c, const char *region, const GuardedBuffer &b) {
  CHECK(b.GuardsIntact(), "%s: write outside the %s buffer", Describe(c).c_str(), region);
}

void CheckUntouched(const Case &c, const char *region, const GuardedBuffer &b) {
  CHECK(b.Untouched(0, b.bytes()) && b.GuardsIntact(), "%s: %s buffer must not be written",
        Describe(c).c_str(), region);
}

bool RcOk(const Case &c, infinicclResult_t rc, const char *call) {
  if (rc == infinicclSuccess) return true;
  Fail(__FILE__, __LINE__, call, "%s returned %d (%s): %s", Describe(c).c_str(), int(rc),
       ResultName(rc), SafeLastError());
  return false;
}
#ifdef ITEST_DEVICE_VENDOR
// The vendor variant (test_collectives_vendor, over the stand-in vendor
// libraries of tests/standin): which path each call took, told by the calls
// the stand-in counted during it, against what this test expects from the
// CCL's documented limits (its own table, not the library's):
//   ITEST_EXPECT_PATH=ccl     the CCL wherever it can, MPI staging elsewhere;
//   ITEST_EXPECT_PATH=staged  never the CCL (INFINICCL_BACKEND=mpi);
//   ITEST_EXPECT_PATH=hier    the two-level path on emulated nodes: every
//                             AllReduce, Broadcast, Reduce, AllGather and
//                             ReduceScatter the CCL can run uses it inside
//                             the node (MPI between; with --expect-hier).
struct VendorProbe {
  using CountFn = long (*)(const char *);
  using QueuedFn = long (*)(void *);
  CountFn count = nullptr;
  QueuedFn held = nullptr;  // work on the default stream that waited behind a gate
  const char *host_func = "";  // the runtime's host-function call (the engine's gates)
  std::vector<const char *> ccl_calls, h2d, d2h;
  bool hccl = false;
  bool expect_ccl = false;
  bool expect_hier = false;
  int node_ranks = 0;  // ranks on this (emulated) node: its group's size
  long ccl_total = 0, staged_total = 0;  // calls of each path seen (this rank)
  std::array<long, 3> before{};

  static VendorProbe &Get() {
    static VendorProbe p;
    return p;
  }
  void Init() {
    const char *path = std::getenv("ITEST_EXPECT_PATH");
    CHECK(path != nullptr && (std::string(path) == "ccl" || std::string(path) == "staged" ||
                              std::string(path) == "hier"),
          "ITEST_EXPECT_PATH must be ccl, staged or hier");
    expect_hier = std::string(path) == "hier";
    expect_ccl = std::string(path) == "ccl" || expect_hier;
    MPI_Comm node = MPI_COMM_NULL;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &node_ranks);
    MPI_Comm_free(&node);
    const infiniccl::DeviceKind kind = Mirror::Get().device->kind();
    if (kind == infiniccl::DeviceKind::kAscend) {
      hccl = true;
      count = reinterpret_cast<CountFn>(dlsym(RTLD_DEFAULT, "iccl_standin_ascend_count"));
      held = reinterpret_cast<QueuedFn>(dlsym(RTLD_DEFAULT, "iccl_standin_ascend_stream_held"));
      host_func = "aclrtLaunchHostFunc";
      ccl_calls = {"HcclAllReduce", "HcclBroadcast", "HcclReduce", "HcclAllGather",
                   "HcclReduceScatter", "HcclSend", "HcclRecv", "HcclBatchSendRecv"};
      h2d = {"aclrtMemcpyAsync:HostToDevice"};
      d2h = {"aclrtMemcpyAsync:DeviceToHost"};
    } else {
      CHECK(kind == infiniccl::DeviceKind::kCambricon, "the vendor variant needs a stand-in");
      count = reinterpret_cast<CountFn>(dlsym(RTLD_DEFAULT, "iccl_standin_cambricon_count"));
      held = reinterpret_cast<QueuedFn>(dlsym(RTLD_DEFAULT, "iccl_standin_cambricon_queue_held"));
      host_func = "cnrtInvokeHostFunc";
      ccl_calls = {"cnclAllReduce", "cnclBroadcast", "cnclReduce", "cnclAllGather",
                   "cnclReduceScatter", "cnclSend", "cnclRecv"};
      h2d = {"cnrtMemcpyAsync:HostToDev"};
      d2h = {"cnrtMemcpyAsync:DevToHost"};
    }
    CHECK(count != nullptr && held != nullptr, "the stand-in's call counter is not loaded");
  }
  long Sum(const std::vector<const char *> &names) const {
    long n = 0;
    for (const char *name : names) n += count(name);
    return n;
  }
  std::array<long, 3> Now() const { return {Sum(ccl_calls), Sum(h2d), Sum(d2h)}; }

  // Whether the CCL can run `c`, from its documentation (and InfiniCCL's own
  // rules for every CCL: no 16-bit integer reductions, no integer Avg, no
  // bitwise op, no in-place AllToAll).
  bool CclCan(const World &w, const Case &c) const {
    const bool reduction = IsReduction(c.coll);
    if (c.count == 0) return false;                // no device bytes: host path
    if (reduction && w.n == 1) return false;       // one rank: a local copy
    if (c.coll == Coll::AllToAll && c.inplace) return false;
    const bool int16 = c.dt == infinicclInt16 || c.dt == infinicclUInt16;
    const bool floating = c.dt == infinicclFloat16 || c.dt == infinicclBFloat16 ||
                          c.dt == infinicclFloat32 || c.dt == infinicclFloat64;
    if (reduction && (int16 || (c.op == infinicclAvg && !floating) || IsBitwise(c.op)))
      return false;
    if (hccl) {
      if (reduction && c.op == infinicclAvg) return false;
      if (reduction && (c.dt == infinicclUInt8 || c.dt == infinicclUInt32)) return false;
    } else {
      if (c.dt == infinicclFloat64) return false;
      if (reduction && c.op == infinicclAvg) return false;
      if (reduction && (c.dt == infinicclInt64 || c.dt == infinicclUInt64)) return false;
    }
    return true;
  }
  void Before() { before = Now(); }
  void After(const World &w, const Case &c) {
    // One rank, Gather or Scatter in place: the root's block is already in
    // place, so nothing moves on any path.
    if (w.n == 1 && c.inplace && (c.coll == Coll::Gather || c.coll == Coll::Scatter)) return;
    // A staged call may still be queued to the progress engine (gates by a
    // host function on the stand-in's stream): once the stream has passed
    // it, every copy of the call has been made (and counted).
    CHECK(Mirror::Get().device->StreamSynchronize(nullptr).ok(), "stream synchronize");
    const std::array<long, 3> now = Now();
    const long ccl = now[0] - before[0], h2d_n = now[1] - before[1], d2h_n = now[2] - before[2];
    const bool want_ccl = expect_ccl && CclCan(w, c);
    if (expect_hier) {
      // Two-level: the group's CCL inside the node and staged MPI between,
      // so copies as well as CCL calls.
      const bool two_level = c.coll == Coll::AllReduce || c.coll == Coll::Broadcast ||
                             c.coll == Coll::Reduce || c.coll == Coll::AllGather ||
                             c.coll == Coll::ReduceScatter;
      // Avg runs as Sum at each level (divided at the end, hier/). A rank
      // alone on its node has no group CCL, and CNCL has no float64 at all.
      // A reduction the CCL cannot take still moves data through it (the
      // gather step of a two-level AllReduce, say): no claim either way,
      // the results are checked exactly.
      Case level = c;
      if (level.op == infinicclAvg) level.op = infinicclSum;
      const bool group_ccl = two_level && CclCan(w, level) && node_ranks > 1;
      const bool no_ccl = node_ranks == 1 || (!hccl && c.dt == infinicclFloat64);
      CHECK(!group_ccl || ccl > 0,
            "%s: expected the CCL inside the node (two-level path); the stand-in counted "
            "none (%ld host-to-device, %ld device-to-host copies)",
            Describe(c).c_str(), h2d_n, d2h_n);
      CHECK(!no_ccl || ccl == 0, "%s: expected no CCL call; the stand-in counted %ld",
            Describe(c).c_str(), ccl);
    } else if (want_ccl) {
      CHECK(ccl > 0 && h2d_n == 0 && d2h_n == 0,
            "%s: expected the CCL path; the stand-in counted %ld CCL calls, %ld host-to-device "
            "and %ld device-to-host copies",
            Describe(c).c_str(), ccl, h2d_n, d2h_n);
    } else {
      CHECK(ccl == 0, "%s: expected no CCL call; the stand-in counted %ld",
            Describe(c).c_str(), ccl);
    }
    ccl_total += ccl > 0;
    staged_total += h2d_n + d2h_n > 0;
  }
};
#define VENDOR_BEFORE() VendorProbe::Get().Before()
#define VENDOR_AFTER(c) VendorProbe::Get().After(w, c)
#else
#define VENDOR_BEFORE() (void)0
#define VENDOR_AFTER(c) (void)0
#endif

// Device variant: buffers go to the emulated device around the call.
#define CALL_OR_RETURN(c, call)                   \
  ToDevice();                                     \
  if (!RcOk(c, [&] {                              \
        VENDOR_BEFORE();                          \
        const infinicclResult_t rc_ = (call);     \
        VENDOR_AFTER(c);                          \
        FromDevice();                             \
        return rc_;                               \
      }(), #call))                                \
  return

void RunAllReduce(const World &w, const Case &c) {
  auto in = [&](size_t i) { return ReduceValue(c.dt, c.op, c.seed, w.rank, i); };
  auto want = [&](size_t i) { return ExpectedReduce(c.dt, c.op, c.seed, w.n, i); };
  GuardedBuffer recv(Bytes(c, c.count)), send(c.inplace ? 0 : Bytes(c, c.count));
  GuardedBuffer &src = c.inplace ? recv : send;
  Fill(c, src, 0, c.count, in);
  CALL_OR_RETURN(c, infinicclAllReduce(D(src.data()), D(recv.data()), c.count, c.dt, c.op, w.comm, nullptr));
  CheckRegion(c, "recv", recv, 0, c.count, c.op, want);
  if (!c.inplace) CheckRegion(c, "send", send, 0, c.count, kExact, in);
  CheckGuards(c, "recv", recv);
  CheckGuards(c, "send", send);
}

// Broadcast (sendbuff, recvbuff) and Bcast (one buffer, always in place).
void RunBroadcast(const World &w, const Case &c) {
  auto data = [&](size_t i) { return DataValue(c.dt, c.seed, c.root, i); };
  bool root = w.rank == c.root;
  GuardedBuffer recv(Bytes(c, c.count)), send(c.inplace ? 0 : Bytes(c, c.count));
  GuardedBuffer &src = c.inplace ? recv : send;
  if (root) Fill(c, src, 0, c.count, data);  // sendbuff is not significant at non-roots
  if (c.coll == Coll::Bcast) {
    CALL_OR_RETURN(c, infinicclBcast(D(recv.data()), c.count, c.dt, c.root, w.comm, nullptr));
  } else {
    CALL_OR_RETURN(c, infinicclBroadcast(D(src.data()), D(recv.data()), c.count, c.dt, c.root, w.comm,
                                         nullptr));
  }
  CheckRegion(c, "recv", recv, 0, c.count, kExact, data);
  CheckGuards(c, "recv", recv);
  if (c.inplace) return;
  if (root)
    CheckRegion(c, "send", send, 0, c.count, kExact, data);
  else
    CheckUntouched(c, "non-root send", send);
}

void RunReduce(const World &w, const Case &c) {
  auto in = [&](size_t i) { return ReduceValue(c.dt, c.op, c.seed, w.rank, i); };
  auto want = [&](size_t i) { return ExpectedReduce(c.dt, c.op, c.seed, w.n, i); };
  bool root = w.rank == c.root;
  GuardedBuffer recv(Bytes(c, c.count)), send(c.inplace ? 0 : Bytes(c, c.count));
  GuardedBuffer &src = c.inplace ? recv : send;
  Fill(c, src, 0, c.count, in);
  CALL_OR_RETURN(c, infinicclReduce(D(src.data()), D(recv.data()), c.count, c.dt, c.op, c.root, w.comm,
                                    nullptr));
  if (root)
    CheckRegion(c, "recv", recv, 0, c.count, c.op, want);
  else if (c.inplace)  // a non-root's input must survive: only the root receives
    CheckRegion(c, "non-root in-place buffer", recv, 0, c.count, kExact, in);
  else
    CheckUntouched(c, "non-root recv", recv);
  if (!c.inplace) CheckRegion(c, "send", send, 0, c.count, kExact, in);
  CheckGuards(c, "recv", recv);
  CheckGuards(c, "send", send);
}

void RunAllGather(const World &w, const Case &c) {
  auto data = [&](int r) { return [&c, r](size_t i) { return DataValue(c.dt, c.seed, r, i); }; };
  GuardedBuffer recv(Bytes(c, w.n * c.count)), send(c.inplace ? 0 : Bytes(c, c.count));
  const void *sb = send.data();
  if (c.inplace) {  // NCCL layout: sendbuff == recvbuff + rank*count
    Fill(c, recv, w.rank * c.count, c.count, data(w.rank));
    sb = At(c, recv, w.rank * c.count);
  } else {
    Fill(c, send, 0, c.count, data(w.rank));
  }
  CALL_OR_RETURN(c, infinicclAllGather(D(sb), D(recv.data()), c.count, c.dt, w.comm, nullptr));
  for (int r = 0; r < w.n; ++r) CheckRegion(c, "recv", recv, r * c.count, c.count, kExact, data(r));
  if (!c.inplace) CheckRegion(c, "send", send, 0, c.count, kExact, data(w.rank));
  CheckGuards(c, "recv", recv);
  CheckGuards(c, "send", send);
}

void RunGather(const World &w, const Case &c) {
  auto data = [&](int r) { return [&c, r](size_t i) { return DataValue(c.dt, c.seed, r, i); }; };
  bool root = w.rank == c.root;
  bool inplace = c.inplace && root;  // in place is a root-side layout
  GuardedBuffer recv(Bytes(c, w.n * c.count)), send(inplace ? 0 : Bytes(c, c.count));
  const void *sb = send.data();
  if (inplace) {  // sendbuff == recvbuff + root*count
    Fill(c, recv, c.root * c.count, c.count, data(w.rank));
    sb = At(c, recv, c.root * c.count);
  } else {
    Fill(c, send, 0, c.count, data(w.rank));
  }
  CALL_OR_RETURN(c, infinicclGather(D(sb), D(recv.data()), c.count, c.dt, c.root, w.comm, nullptr));
  if (root) {
    for (int r = 0; r < w.n; ++r)
      CheckRegion(c, "recv", recv, r * c.count, c.count, kExact, data(r));
    CheckGuards(c, "recv", recv);
  } else {
    CheckUntouched(c, "non-root recv", recv);
  }
  if (!inplace) CheckRegion(c, "send", send, 0, c.count, kExact, data(w.rank));
  CheckGuards(c, "send", send);
}

void RunScatter(const World &w, const Case &c) {
  auto data = [&](size_t i) { return DataValue(c.dt, c.seed, c.root, i); };
  bool root = w.rank == c.root;
  bool inplace = c.inplace && root;
  GuardedBuffer send(Bytes(c, w.n * c.count)), recv(inplace ? 0 : Bytes(c, c.count));
  if (root) Fill(c, send, 0, w.n * c.count, data);
  void *rb = inplace ? At(c, send, c.root * c.count) : recv.data();  // recvbuff == sendbuff + root*count
  CALL_OR_RETURN(c, infinicclScatter(D(send.data()), D(rb), c.count, c.dt, c.root, w.comm, nullptr));
  if (root)  // whole sendbuff unchanged; in place its root block is the result
    CheckRegion(c, "send", send, 0, w.n * c.count, kExact, data);
  else
    CheckUntouched(c, "non-root send", send);
  if (!inplace) {
    size_t off = w.rank * c.count;
    CheckRegion(c, "recv", recv, 0, c.count, kExact, [&](size_t i) { return data(off + i); });
  }
  CheckGuards(c, "recv", recv);
  CheckGuards(c, "send", send);
}

void RunReduceScatter(const World &w, const Case &c) {
  auto in = [&](size_t i) { return ReduceValue(c.dt, c.op, c.seed, w.rank, i); };
  size_t off = w.rank * c.count;
  auto want = [&](size_t i) { return ExpectedReduce(c.dt, c.op, c.seed, w.n, off + i); };
  GuardedBuffer send(Bytes(c, w.n * c.count)), recv(c.inplace ? 0 : Bytes(c, c.count));
  Fill(c, send, 0, w.n * c.count, in);
  void *rb = c.inplace ? At(c, send, off) : recv.data();  // recvbuff == sendbuff + rank*count
  CALL_OR_RETURN(c, infinicclReduceScatter(D(send.data()), D(rb), c.count, c.dt, c.op, w.comm, nullptr));
  if (c.inplace) {  // the other blocks of an in-place buffer are undefined afterwards
    CheckRegion(c, "recv", send, off, c.count, c.op, want);
  } else {
    CheckRegion(c, "recv", recv, 0, c.count, c.op, want);
    CheckRegion(c, "send", send, 0, w.n * c.count, kExact, in);
  }
  CheckGuards(c, "recv", recv);
  CheckGuards(c, "send", send);
}

void RunAllToAll(const World &w, const Case &c) {
  // Rank r's element j*count+k goes to rank j's block r, element k.
  auto data = [&](int r) { return [&c, r](size_t i) { return DataValue(c.dt, c.seed, r, i); }; };
  size_t total = w.n * c.count;
  GuardedBuffer recv(Bytes(c, total)), send(c.inplace ? 0 : Bytes(c, total));
  GuardedBuffer &src = c.inplace ? recv : send;
  Fill(c, src, 0, total, data(w.rank));
  CALL_OR_RETURN(c, infinicclAllToAll(D(src.data()), D(recv.data()), c.count, c.dt, w.comm, nullptr));
  size_t off = w.rank * c.count;
  for (int r = 0; r < w.n; ++r)
    CheckRegion(c, "recv", recv, r * c.count, c.count, kExact,
                [&](size_t i) { return data(r)(off + i); });
  if (!c.inplace) CheckRegion(c, "send", send, 0, total, kExact, data(w.rank));
  CheckGuards(c, "recv", recv);
  CheckGuards(c, "send", send);
}

// A ring: send to rank+1, receive from rank-1. Even ranks send first and odd
// ranks receive first, so blocking sends cannot all wait on each other.
void RunSendRecv(const World &w, const Case &c) {
  int next = (w.rank + 1) % w.n, prev = (w.rank - 1 + w.n) % w.n;
  auto data = [&](int r) { return [&c, r](size_t i) { return DataValue(c.dt, c.seed, r, i); }; };
  GuardedBuffer send(Bytes(c, c.count)), recv(Bytes(c, c.count));
  Fill(c, send, 0, c.count, data(w.rank));
  for (int step = 0; step < 2; ++step) {
    if ((step == 0) == (w.rank % 2 == 0)) {
      CALL_OR_RETURN(c, infinicclSend(D(send.data()), c.count, c.dt, next, w.comm, nullptr));
    } else {
      CALL_OR_RETURN(c, infinicclRecv(D(recv.data()), c.count, c.dt, prev, w.comm, nullptr));
    }
  }
  CheckRegion(c, "recv", recv, 0, c.count, kExact, data(prev));
  CheckRegion(c, "send", send, 0, c.count, kExact, data(w.rank));
  CheckGuards(c, "recv", recv);
  CheckGuards(c, "send", send);
}

// ITEST_VERBOSE=1 names each case before it runs: the last line printed
// names the case when a run crashes or hangs.
const bool g_verbose = std::getenv("ITEST_VERBOSE") != nullptr;

// Collective/dtype/op combinations with a failure, for the summary: only
// the first few mismatches are printed in full.
std::set<std::string> g_failed_combos;

void RunCaseBody(const World &w, const Case &c);

void RunCase(const World &w, const Case &c) {
  ++g_cases;
  if (g_verbose) std::fprintf(stderr, "[rank %d] %s\n", w.rank, Describe(c).c_str());
  long before = g_failures;
  RunCaseBody(w, c);
  if (g_failures != before)
    g_failed_combos.insert(std::string(CollName(c.coll)) + "/" + Info(c.dt).name + "/" +
                           OpName(c.op));
}

void RunCaseBody(const World &w, const Case &c) {
  switch (c.coll) {
    case Coll::AllReduce: RunAllReduce(w, c); break;
    case Coll::Broadcast:
    case Coll::Bcast: RunBroadcast(w, c); break;
    case Coll::Reduce: RunReduce(w, c); break;
    case Coll::AllGather: RunAllGather(w, c); break;
    case Coll::Gather: RunGather(w, c); break;
    case Coll::Scatter: RunScatter(w, c); break;
    case Coll::ReduceScatter: RunReduceScatter(w, c); break;
    case Coll::AllToAll: RunAllToAll(w, c); break;
    case Coll::SendRecv: RunSendRecv(w, c); break;
  }
}

// A bitwise op on a floating type: infinicclInvalidArgument on every rank,
// naming the op and the type, nothing written, and the communicator still
// works (the next case uses it).
void RunBitwiseRefused(const World &w, Coll coll, const DtypeInfo &d, uint64_t &seed) {
  for (infinicclRedOp_t op : {infinicclBand, infinicclBor, infinicclBxor}) {
    const Case c{coll, d.dt, op, 1031, coll == Coll::Reduce ? w.n - 1 : -1, false, ++seed};
    ++g_cases;
    const size_t send_count = coll == Coll::ReduceScatter ? c.count * size_t(w.n) : c.count;
    GuardedBuffer send(Bytes(c, send_count)), recv(Bytes(c, c.count));
    Fill(c, send, 0, send_count, [&](size_t i) { return double(i % 7); });
    ToDevice();
    infinicclResult_t rc = infinicclSuccess;
    switch (coll) {
      case Coll::AllReduce:
        rc = infinicclAllReduce(D(send.data()), D(recv.data()), c.count, c.dt, op, w.comm,
                                nullptr);
        break;
      case Coll::Reduce:
        rc = infinicclReduce(D(send.data()), D(recv.data()), c.count, c.dt, op, c.root, w.comm,
                             nullptr);
        break;
      default:
        rc = infinicclReduceScatter(D(send.data()), D(recv.data()), c.count, c.dt, op, w.comm,
                                    nullptr);
        break;
    }
    FromDevice();
    const std::string msg = SafeLastError();
    CHECK(rc == infinicclInvalidArgument, "%s: returned %d (%s), expected InvalidArgument: %s",
          Describe(c).c_str(), int(rc), ResultName(rc), msg.c_str());
    std::string type = d.name, op_name = OpName(op);
    for (char &ch : type) ch = char(std::tolower(static_cast<unsigned char>(ch)));
    for (char &ch : op_name) ch = char(std::tolower(static_cast<unsigned char>(ch)));
    CHECK(msg.find(op_name) != std::string::npos && msg.find(type) != std::string::npos &&
              msg.find("integer") != std::string::npos,
          "%s: the message should name the op, the type and what the op takes: %s",
          Describe(c).c_str(), msg.c_str());
    CheckUntouched(c, "recv", recv);
    CheckRegion(c, "send", send, 0, send_count, kExact, [](size_t i) { return double(i % 7); });
  }
}

void RunMatrix(const World &w, Coll coll, uint64_t &seed) {
  if (coll == Coll::SendRecv && w.n < 2) return;  // sending to self is invalid
  if (g_bitwise && !IsReduction(coll)) return;     // nothing to combine
  const int first_op = g_bitwise ? int(infinicclBand) : 0;
  const int end_op = g_bitwise ? int(infinicclNumOps) : int(infinicclBand);
  for (const DtypeInfo &d : kDtypes) {
    if (!g_dtypes.empty() && g_dtypes.count(d.name) == 0) continue;
    if (g_bitwise && d.is_float) {
      RunBitwiseRefused(w, coll, d, seed);
      continue;
    }
    for (int op = first_op; op < end_op; ++op) {
      if (!IsReduction(coll) && op > first_op) break;
      auto rop = IsReduction(coll) ? infinicclRedOp_t(op) : infinicclNumOps;
      const size_t ring[] = {RingCount(d.size, w.n)};
      using Counts = std::span<const size_t>;
      for (size_t count : g_ring ? Counts(ring) : Counts(g_counts)) {
        for (int inplace = 0; inplace < 2; ++inplace) {
          if (coll == Coll::SendRecv && inplace) continue;   // no in-place form
          if (coll == Coll::Bcast && !inplace) continue;     // always in place
          for (int root = IsRooted(coll) ? 0 : -1; root < (IsRooted(coll) ? w.n : 0); ++root)
            RunCase(w, Case{coll, d.dt, rop, count, root, inplace != 0, ++seed});
        }
      }
    }
  }
}

// The codecs are the reference for every fp16/bf16 check, so test them first.
void CheckCodecs() {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    bool nan = (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0;
    if (!nan) CHECK(FloatToHalf(HalfToFloat(uint16_t(h))) == h, "half 0x%04x", h);
    bool bnan = (h & 0x7f80) == 0x7f80 && (h & 0x7f) != 0;
    if (!bnan) CHECK(FloatToBFloat16(BFloat16ToFloat(uint16_t(h))) == h, "bf16 0x%04x", h);
  }
  for (int i = -2048; i <= 2048; ++i) CHECK(HalfToFloat(FloatToHalf(float(i))) == float(i));
  for (int i = -256; i <= 256; ++i) CHECK(BFloat16ToFloat(FloatToBFloat16(float(i))) == float(i));
  CHECK(FloatToHalf(1.0f) == 0x3c00);
  CHECK(FloatToHalf(65504.0f) == 0x7bff);
  CHECK(FloatToHalf(65520.0f) == 0x7c00);
  CHECK(FloatToHalf(2049.0f) == 0x6800);  // tie -> even (2048)
  CHECK(FloatToHalf(2051.0f) == 0x6802);  // tie -> even (2052)
  CHECK(FloatToHalf(1.0f / 3) == 0x3555);
  CHECK(FloatToHalf(0x1p-25f) == 0x0000);  // tie -> even (0)
  CHECK(FloatToHalf(0x1.8p-25f) == 0x0001);
  CHECK(FloatToBFloat16(257.0f) == 0x4380);  // tie -> even (256)
  CHECK(FloatToBFloat16(259.0f) == 0x4382);  // tie -> even (260)
  CHECK(FloatToBFloat16(1.0f / 3) == 0x3eab);
}

#ifdef ITEST_DEVICE_MIRROR
// --route-check (above): which path the default thresholds give, as a user
// who sets none gets them. float32 sums of small integers: exact.
void RouteCheck(const World &w, const std::string &allreduce_form) {
  auto ran = [] {
    const infiniccl::HierStats h = infiniccl::GetHierStats();
    return std::array<uint64_t, 2>{h.sharded + h.leader + h.other, h.sharded};
  };
  struct Case {
    bool reduce;
    size_t bytes;
    bool two_level;
  };
  const bool ar_two_level = allreduce_form != "flat";
  const Case cases[] = {{false, (64u << 10) - 4, false}, {false, 64u << 10, true},
                        {true, (16u << 20) - 4, false}, {true, 16u << 20, ar_two_level}};
  const int root = w.n - 1;
  for (const Case &c : cases) {
    const size_t n = c.bytes / sizeof(float);
    std::vector<float> host(n);
    for (size_t i = 0; i < n; ++i)
      host[i] = static_cast<float>((i % 7 + 1) * static_cast<size_t>(c.reduce || w.rank == root ? w.rank + 1 : 0));
    std::vector<unsigned char> bytes(c.bytes);
    std::memcpy(bytes.data(), host.data(), c.bytes);
    DeviceBuffer send(c.bytes), recv(c.bytes);
    send.Upload(bytes);
    const auto before = ran();
    if (c.reduce) {
      CHECK_RC(infinicclAllReduce(send.ptr, recv.ptr, n, infinicclFloat32, infinicclSum, w.comm,
                                  nullptr),
               infinicclSuccess);
    } else {
      CHECK_RC(infinicclBroadcast(send.ptr, recv.ptr, n, infinicclFloat32, root, w.comm, nullptr),
               infinicclSuccess);
    }
    // Read once the stream has passed the call: a call on device buffers
    // returns when queued (the progress engine runs it).
    const std::vector<unsigned char> out = recv.Download();
    const auto after = ran();
    std::memcpy(host.data(), out.data(), c.bytes);
    const size_t factor = c.reduce ? static_cast<size_t>(w.n) * (w.n + 1) / 2 : root + 1;
    size_t wrong = 0;
    for (size_t i = 0; i < n; ++i) wrong += host[i] != static_cast<float>((i % 7 + 1) * factor);
    const char *name = c.reduce ? "AllReduce" : "Broadcast";
    CHECK(wrong == 0, "--route-check: %s of %zu bytes: %zu elements wrong", name, c.bytes, wrong);
    const bool two_level = after[0] > before[0];
    CHECK(two_level == c.two_level, "--route-check: %s of %zu bytes took the %s path, expected %s",
          name, c.bytes, two_level ? "two-level" : "flat", c.two_level ? "two-level" : "flat");
    ++g_cases;
    g_elements += static_cast<long>(n);
    if (c.reduce && c.two_level && two_level) {
      const bool sharded = after[1] > before[1];
      CHECK(sharded == (allreduce_form == "sharded"),
            "--route-check: AllReduce of %zu bytes took the %s form, expected %s", c.bytes,
            sharded ? "sharded" : "leaders'", allreduce_form.c_str());
    }
    if (w.rank == 0)
      std::printf("[rank 0] route-check %s %zu bytes: %s\n", name, c.bytes,
                  two_level ? "two-level" : "flat");
  }
}
#endif

// --expect-shm: the route's INFO lines in `log` (route/route.cpp,
// Announce: "<kind> on comm of <n> ranks: <path>", once per kind and path)
// name shared memory for every collective run here, and no other path.
void ExpectShmRoute(const World &w, const std::set<std::string> &only, const std::string &log) {
  std::ifstream in(log);
  CHECK(in.good(), "--expect-shm: cannot read the log %s", log.c_str());
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  const std::string shm = "the node's ranks through a shared-memory segment";
  for (Coll coll : kAllColls) {
    if (coll == Coll::SendRecv || (!only.empty() && only.count(CollName(coll)) == 0)) continue;
    // Bcast is a Broadcast; " INFO " keeps AllGather from matching Gather.
    const std::string kind = coll == Coll::Bcast ? "Broadcast" : CollName(coll);
    const std::string head = " INFO " + kind + " on comm of " + std::to_string(w.n) + " ranks: ";
    bool on_shm = false;
    for (const std::string &line : lines) {
      const size_t at = line.find(head);
      if (at == std::string::npos) continue;
      const bool this_shm = line.compare(at + head.size(), shm.size(), shm) == 0;
      CHECK(this_shm, "--expect-shm: %s took another path: %s", CollName(coll), line.c_str());
      on_shm = on_shm || this_shm;
    }
    CHECK(on_shm, "--expect-shm: no route line of %s names shared memory (log %s)",
          CollName(coll), log.c_str());
  }
}

}  // namespace

int main(int argc, char **argv) {
  bool own_mpi = false;
  std::string shm_log;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--expect-shm") {
      const char *tmp = std::getenv("TMPDIR");
      shm_log = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") +
                "/test_collectives_route_" + std::to_string(getpid()) + ".log";
      std::remove(shm_log.c_str());
      setenv("INFINICCL_DEBUG", "INFO", 1);
      setenv("INFINICCL_DEBUG_FILE", shm_log.c_str(), 1);
    } else if (std::string(argv[i]) == "--mpi-thread=serialized") {
      int provided = 0;
      MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
      own_mpi = true;
    } else if (std::string(argv[i]).rfind("--ranks-on-node=", 0) == 0) {
      setenv("MPI_LOCALNRANKS", argv[i] + 16, 1);
      setenv("OMPI_COMM_WORLD_LOCAL_SIZE", argv[i] + 16, 1);
    }
  }
  if (infinicclInit(&argc, &argv) != infinicclSuccess) {
    std::fprintf(stderr, "infinicclInit failed: %s\n", SafeLastError());
    return 2;
  }
  World w{};
  MPI_Comm_rank(MPI_COMM_WORLD, &w.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &w.n);
  bool host_only = false;
  std::string expect_hier, route_check;
  bool expect_group_shm = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--host-ranks=", 0) == 0) {
      const std::string list = "," + arg.substr(13) + ",";
      host_only = list.find("," + std::to_string(w.rank) + ",") != std::string::npos;
    } else if (arg.rfind("--expect-hier=", 0) == 0) {
      expect_hier = arg.substr(14);
    } else if (arg.rfind("--route-check=", 0) == 0) {
      route_check = arg.substr(14);
    } else if (arg == "--expect-group-shm") {
      expect_group_shm = true;
    }
  }
  if (!host_only) MirrorEnable();
#ifdef ITEST_DEVICE_VENDOR
  VendorProbe::Get().Init();
#endif
  g_rank = w.rank;
  double t0 = MPI_Wtime();

  int v = -1;
  CHECK_RC(infinicclGetRank(&v), infinicclSuccess);
  CHECK(v == w.rank, "GetRank %d, MPI says %d", v, w.rank);
  CHECK_RC(infinicclGetSize(&v), infinicclSuccess);
  CHECK(v == w.n, "GetSize %d, MPI says %d", v, w.n);
  CHECK_RC(infinicclCommInitAll(&w.comm, 0, nullptr), infinicclSuccess);
  if (w.comm == nullptr) {
    std::fprintf(stderr, "[rank %d] no communicator: %s\n", w.rank, SafeLastError());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  CHECK_RC(infinicclCommCount(w.comm, &v), infinicclSuccess);
  CHECK(v == w.n, "CommCount %d, MPI says %d", v, w.n);
  CHECK_RC(infinicclCommUserRank(w.comm, &v), infinicclSuccess);
  CHECK(v == w.rank, "CommUserRank %d, MPI says %d", v, w.rank);
  CheckCodecs();
  std::set<std::string> only;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--ring")
      g_ring = true;
    else if (arg == "--bitwise")
      g_bitwise = true;
    else if (arg.rfind("--large-count=", 0) == 0)
      g_counts[3] = std::strtoull(arg.c_str() + 14, nullptr, 10);
    else if (arg.rfind("--mpi-thread=", 0) == 0 || arg.rfind("--host-ranks=", 0) == 0 ||
             arg.rfind("--ranks-on-node=", 0) == 0 ||
             arg.rfind("--expect-hier=", 0) == 0 || arg.rfind("--route-check=", 0) == 0 ||
             arg == "--expect-group-shm" || arg == "--expect-shm")
      continue;
    else if (arg.rfind("--dtypes=", 0) == 0) {
      std::string list = arg.substr(9);
      for (size_t start = 0, end; start <= list.size(); start = end + 1) {
        end = std::min(list.find(',', start), list.size());
        const std::string name = list.substr(start, end - start);
        bool known = false;
        for (const DtypeInfo &d : kDtypes) known = known || name == d.name;
        if (!known) {
          if (w.rank == 0)
            std::fprintf(stderr, "test_collectives: unknown dtype '%s'\n", name.c_str());
          MPI_Abort(MPI_COMM_WORLD, 2);
        }
        g_dtypes.insert(name);
      }
    } else
      only.insert(arg);
  }
  if (!route_check.empty()) {
#ifdef ITEST_DEVICE_MIRROR
    CHECK(route_check == "flat" || route_check == "sharded" || route_check == "leader",
          "--route-check=%s: flat, sharded or leader", route_check.c_str());
    RouteCheck(w, route_check);
#else
    CHECK(false, "--route-check needs the device-buffer build (test_collectives_sim)");
#endif
    only = {"(no matrix)"};
  }

  uint64_t seed = 0;
  for (Coll coll : kAllColls) {
    if (!only.empty() && only.count(CollName(coll)) == 0) continue;
    long before = g_failures;
    double t = MPI_Wtime();
    RunMatrix(w, coll, seed);
    if (w.rank == 0)
      std::printf("[rank 0] %-13s %s (%.2f s)\n", CollName(coll),
                  g_failures == before ? "ok" : "FAILED", MPI_Wtime() - t);
  }

  if (!shm_log.empty()) {
    CHECK(w.n > 1, "--expect-shm needs 2 ranks or more");
    ExpectShmRoute(w, only, shm_log);
    std::remove(shm_log.c_str());
  }
#ifndef ITEST_DEVICE_MIRROR
  CHECK(!expect_group_shm, "--expect-group-shm needs the device-buffer build (test_collectives_sim)");
#endif
  if (!expect_hier.empty()) {
#ifdef ITEST_DEVICE_MIRROR
    const infiniccl::HierStats hs = infiniccl::GetHierStats();
    const uint64_t ran = expect_hier == "sharded" ? hs.sharded
                         : expect_hier == "leader" ? hs.leader
                                                   : hs.sharded + hs.leader + hs.other;
    // "none": a communicator that fell back to the flat paths.
    // Broadcast, Reduce, AllGather and ReduceScatter count as "other".
    bool others = only.empty();
    for (const char *k : {"Broadcast", "Reduce", "AllGather", "ReduceScatter"})
      others = others || only.count(k) > 0;
    CHECK(expect_hier == "none" || !others || hs.other > 0,
          "--expect-hier=%s: no two-level Broadcast, Reduce, AllGather or ReduceScatter ran",
          expect_hier.c_str());
    CHECK(expect_hier == "none" ? ran == 0 : ran > 0,
          "--expect-hier=%s: the two-level form ran %" PRIu64 " times (sharded %" PRIu64
          ", leader %" PRIu64 ", other %" PRIu64 ")", expect_hier.c_str(), ran, hs.sharded,
          hs.leader, hs.other);
    // --expect-group-shm: the steps inside a group of two or more ranks ran
    // on its shared memory (a rank alone in its group has none).
    int group_ranks = 0;
    {
      MPI_Comm node;
      MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, w.rank, MPI_INFO_NULL, &node);
      MPI_Comm_size(node, &group_ranks);
      MPI_Comm_free(&node);
    }
    CHECK(!expect_group_shm || group_ranks < 2 || hs.group_shm > 0,
          "--expect-group-shm: no step inside the group (%d ranks) ran on shared memory",
          group_ranks);
    if (w.rank == 0)
      std::printf("[rank 0] hierarchical calls: sharded %" PRIu64 ", leader %" PRIu64
                  ", other %" PRIu64 "; steps on the group's shared memory %" PRIu64 "\n",
                  hs.sharded, hs.leader, hs.other, hs.group_shm);
#else
    CHECK(false, "--expect-hier needs the device-buffer build (test_collectives_sim)");
#endif
  }
#ifdef ITEST_DEVICE_VENDOR
  {
    // Both paths were taken where expected: the CCL for what it can run,
    // MPI staging for the rest.
    const VendorProbe &p = VendorProbe::Get();
    if (w.rank == 0)
      std::printf("[rank 0] vendor paths: %ld calls through the CCL, %ld staged\n",
                  p.ccl_total, p.staged_total);
    // Two-level: a rank alone on its node has no group CCL.
    const bool want_ccl = p.expect_ccl && !(p.expect_hier && p.node_ranks == 1);
    CHECK(want_ccl ? p.ccl_total > 0 : p.ccl_total == 0,
          "ITEST_EXPECT_PATH=%s but %ld calls went through the CCL (%d ranks on this node)",
          std::getenv("ITEST_EXPECT_PATH"), p.ccl_total, p.node_ranks);
    CHECK(p.expect_ccl || p.staged_total > 0, "no call was staged through host memory");
    // Staged calls went through the progress engine: each queued a gate (a
    // host function) on the caller's stream, unless INFINICCL_ASYNC=0.
    const long gates = p.count(p.host_func);
    if (w.rank == 0)
      std::printf("[rank 0] progress engine: %ld gates (%s); %ld copies or CCL calls on the "
                  "stream waited behind one\n",
                  gates, p.host_func, p.held(nullptr));
    const char *async = std::getenv("INFINICCL_ASYNC");
    const bool engine = async == nullptr || std::string(async) != "0";
    CHECK(!engine || p.staged_total == 0 || gates > 0,
          "%ld staged calls but no gate (%s): the calls were not queued", p.staged_total,
          p.host_func);
    CHECK(engine || gates == 0, "INFINICCL_ASYNC=0 but %ld gates", gates);
  }
#endif
  CHECK_RC(infinicclCommDestroy(w.comm), infinicclSuccess);
  const long total = TotalFailures();
  std::printf("[rank %d/%d] test_collectives: %ld cases, %ld elements checked, %ld failures, "
              "%.2f s\n", w.rank, w.n, g_cases, g_elements, g_failures, MPI_Wtime() - t0);
  if (!g_failed_combos.empty()) {
    std::string list;
    for (const std::string &k : g_failed_combos) list += " " + k;
    std::printf("[rank %d] failed combinations:%s\n", w.rank, list.c_str());
  }
  if (w.rank == 0 && total != 0) std::printf("test_collectives: %ld failures in all ranks\n", total);
  CHECK_RC(infinicclFinalize(), infinicclSuccess);
  if (own_mpi) MPI_Finalize();
  return g_failures == 0 && total == 0 ? 0 : 1;
}
