// Bad input and lifecycle misuse over a real MPI run. Every rejected call must
// come back as a result code (never abort), leave a message naming the call
// in infinicclGetLastError, and leave the process able to run a correct
// collective afterwards.
//
// Every invalid call here is rejected by local argument checks, before any
// communication, so a rank may make one alone (e.g. a NULL recvbuff at the
// root of a Reduce) without the others joining; a library that communicated
// first would hang and hit the test's timeout.
#include <mpi.h>

#include <cstdint>
#include <set>
#include <string>

#include "test_util.h"

using namespace itest;

// test_errors_raw.c: the API called from C, where int dtype/op values
// outside the enums are well defined.
extern "C" {
infinicclResult_t itest_AllReduce(const void *, void *, size_t, int, int, infinicclComm_t);
infinicclResult_t itest_Broadcast(const void *, void *, size_t, int, int, infinicclComm_t);
infinicclResult_t itest_Bcast(void *, size_t, int, int, infinicclComm_t);
infinicclResult_t itest_Reduce(const void *, void *, size_t, int, int, int, infinicclComm_t);
infinicclResult_t itest_AllGather(const void *, void *, size_t, int, infinicclComm_t);
infinicclResult_t itest_Gather(const void *, void *, size_t, int, int, infinicclComm_t);
infinicclResult_t itest_Scatter(const void *, void *, size_t, int, int, infinicclComm_t);
infinicclResult_t itest_ReduceScatter(const void *, void *, size_t, int, int, infinicclComm_t);
infinicclResult_t itest_AllToAll(const void *, void *, size_t, int, infinicclComm_t);
infinicclResult_t itest_Send(const void *, size_t, int, int, infinicclComm_t);
infinicclResult_t itest_Recv(void *, size_t, int, int, infinicclComm_t);
const char *itest_GetErrorString(int);
}

namespace {

struct Args {
  const void *send;
  void *recv;
  size_t count;
  int dt;
  int op;
  int root;  // root, or peer for Send/Recv
  infinicclComm_t comm;
};

enum Significance { kNone, kAll, kRootOnly };

// One collective: how to call it, and which arguments it has.
struct Coll {
  const char *name;
  infinicclResult_t (*call)(const Args &);
  bool has_op;
  bool has_root;
  Significance send_sig;
  Significance recv_sig;
  Significance blocks_sig;  // where a buffer of nranks*count elements matters
  bool p2p;
};

// clang-format off
const Coll kColls[] = {
    {"AllReduce", [](const Args &a) { return itest_AllReduce(a.send, a.recv, a.count, a.dt, a.op, a.comm); },
     true, false, kAll, kAll, kNone, false},
    {"Broadcast", [](const Args &a) { return itest_Broadcast(a.send, a.recv, a.count, a.dt, a.root, a.comm); },
     false, true, kRootOnly, kAll, kNone, false},
    {"Bcast", [](const Args &a) { return itest_Bcast(a.recv, a.count, a.dt, a.root, a.comm); },
     false, true, kNone, kAll, kNone, false},
    {"Reduce", [](const Args &a) { return itest_Reduce(a.send, a.recv, a.count, a.dt, a.op, a.root, a.comm); },
     true, true, kAll, kRootOnly, kNone, false},
    {"AllGather", [](const Args &a) { return itest_AllGather(a.send, a.recv, a.count, a.dt, a.comm); },
     false, false, kAll, kAll, kAll, false},
    {"Gather", [](const Args &a) { return itest_Gather(a.send, a.recv, a.count, a.dt, a.root, a.comm); },
     false, true, kAll, kRootOnly, kRootOnly, false},
    {"Scatter", [](const Args &a) { return itest_Scatter(a.send, a.recv, a.count, a.dt, a.root, a.comm); },
     false, true, kRootOnly, kAll, kRootOnly, false},
    {"ReduceScatter", [](const Args &a) { return itest_ReduceScatter(a.send, a.recv, a.count, a.dt, a.op, a.comm); },
     true, false, kAll, kAll, kAll, false},
    {"AllToAll", [](const Args &a) { return itest_AllToAll(a.send, a.recv, a.count, a.dt, a.comm); },
     false, false, kAll, kAll, kAll, false},
    {"Send", [](const Args &a) { return itest_Send(a.send, a.count, a.dt, a.root, a.comm); },
     false, true, kAll, kNone, kNone, true},
    {"Recv", [](const Args &a) { return itest_Recv(a.recv, a.count, a.dt, a.root, a.comm); },
     false, true, kNone, kAll, kNone, true},
};
// clang-format on

int g_n = 1;
long g_checked = 0;

// The call failed with one of the allowed codes and left a message naming it,
// in the thread's last error and, when comm is a live communicator, in comm's.
void ExpectFailure(const char *what, const char *call, infinicclResult_t rc,
                   std::initializer_list<infinicclResult_t> allowed,
                   infinicclComm_t live_comm = nullptr) {
  ++g_checked;
  bool ok = false;
  for (auto a : allowed) ok |= rc == a;
  CHECK(ok, "%s %s: got %d (%s), expected %s", call, what, int(rc), ResultName(rc),
        ResultName(*allowed.begin()));
  const char *msg = infinicclGetLastError(nullptr);
  CHECK(msg != nullptr && msg[0] != '\0', "%s %s: empty GetLastError(NULL)", call, what);
  CHECK(NamesCall(msg, call), "%s %s: GetLastError(NULL) does not name the call: \"%s\"", call,
        what, msg ? msg : "(null)");
  if (live_comm == nullptr) return;
  msg = infinicclGetLastError(live_comm);
  CHECK(NamesCall(msg, call), "%s %s: GetLastError(comm) does not name the call: \"%s\"", call,
        what, msg ? msg : "(null)");
}

void ExpectInvalid(const char *what, const char *call, infinicclResult_t rc,
                   infinicclComm_t live_comm) {
  ExpectFailure(what, call, rc, {infinicclInvalidArgument}, live_comm);
}

// A correct AllReduce after errors: the process and the communicator still work.
void ExpectWorks(infinicclComm_t comm, const char *after) {
  int64_t v = g_rank + 1;
  CHECK_RC(infinicclAllReduce(&v, &v, 1, infinicclInt64, infinicclSum, comm, nullptr),
           infinicclSuccess);
  CHECK(v == int64_t(g_n) * (g_n + 1) / 2, "AllReduce after %s gave %lld", after, (long long)v);
}

// Before Init only the version, error strings and last error work.
void CheckBeforeInit() {
  int v = 0;
  CHECK_RC(infinicclGetVersion(&v), infinicclSuccess);
  CHECK(v == INFINICCL_VERSION_CODE, "version %d", v);
  CHECK(infinicclGetErrorString(infinicclInvalidUsage) != nullptr);
  CHECK(infinicclGetLastError(nullptr) != nullptr);
  unsigned char junk[64] = {};
  infinicclComm_t fake = junk;
  infinicclComm_t out = nullptr;
  infinicclUniqueId id{};
  const auto usage = {infinicclInvalidUsage};
  ExpectFailure("before Init", "GetRank", infinicclGetRank(&v), usage);
  ExpectFailure("before Init", "GetSize", infinicclGetSize(&v), usage);
  ExpectFailure("before Init", "CommInitAll", infinicclCommInitAll(&out, 0, nullptr), usage);
  // The bootstrap needs no Init: the id is made, and one rank meets
  // itself at once. Without MPI and without a native CCL it can make no
  // communicator, and says how to launch.
  CHECK_RC(infinicclGetUniqueId(&id), infinicclSuccess);
  ExpectFailure("before Init", "CommInitRank", infinicclCommInitRank(&out, 1, id, 0),
                {infinicclInvalidUsage});
  CHECK(std::string(infinicclGetLastError(nullptr)).find("icclrun") != std::string::npos,
        "CommInitRank's message names no launcher: %s", infinicclGetLastError(nullptr));
  ExpectFailure("before Init", "CommCount", infinicclCommCount(fake, &v), usage);
  ExpectFailure("before Init", "CommUserRank", infinicclCommUserRank(fake, &v), usage);
  infinicclResult_t async = infinicclSuccess;
  ExpectFailure("before Init", "CommGetAsyncError", infinicclCommGetAsyncError(fake, &async),
                usage);
  ExpectFailure("before Init", "CommDestroy", infinicclCommDestroy(fake), usage);
  ExpectFailure("before Init", "Finalize", infinicclFinalize(), usage);
  for (const Coll &c : kColls)
    ExpectFailure("before Init", c.name,
                  c.call(Args{junk, junk, 1, infinicclInt8, infinicclSum, 1, fake}), usage);
}

void CheckResultStrings() {
  std::set<std::string> seen;
  for (int r = 0; r <= 9; ++r) {
    const char *s = itest_GetErrorString(r);
    CHECK(s != nullptr && s[0] != '\0', "GetErrorString(%d)", r);
    if (s != nullptr) CHECK(seen.insert(s).second, "GetErrorString(%d) repeats \"%s\"", r, s);
  }
  for (int r : {10, 12345, -1}) CHECK(itest_GetErrorString(r) != nullptr, "GetErrorString(%d)", r);
}

void CheckCommAndQueryArgs(infinicclComm_t comm) {
  infinicclComm_t out = nullptr;
  ExpectInvalid("NULL comm out", "CommInitAll", infinicclCommInitAll(nullptr, 0, nullptr), nullptr);
  ExpectInvalid("ndev=-1", "CommInitAll", infinicclCommInitAll(&out, -1, nullptr), nullptr);
  ExpectInvalid("NULL out", "CommCount", infinicclCommCount(comm, nullptr), comm);
  ExpectInvalid("NULL out", "CommUserRank", infinicclCommUserRank(comm, nullptr), comm);
  ExpectInvalid("NULL out", "GetRank", infinicclGetRank(nullptr), nullptr);
  ExpectInvalid("NULL out", "GetSize", infinicclGetSize(nullptr), nullptr);
  ExpectInvalid("NULL out", "GetVersion", infinicclGetVersion(nullptr), nullptr);
  int v = -1;
  ExpectInvalid("NULL comm", "CommCount", infinicclCommCount(nullptr, &v), nullptr);
  ExpectInvalid("NULL comm", "CommUserRank", infinicclCommUserRank(nullptr, &v), nullptr);
  // Async errors: none on the MPI path (every call has finished when it
  // returns); the argument checks as for the other queries.
  infinicclResult_t async = infinicclInternalError;
  CHECK_RC(infinicclCommGetAsyncError(comm, &async), infinicclSuccess);
  CHECK(async == infinicclSuccess, "async error %d on an MPI communicator", async);
  ExpectInvalid("NULL out", "CommGetAsyncError", infinicclCommGetAsyncError(comm, nullptr),
                comm);
  ExpectInvalid("NULL comm", "CommGetAsyncError", infinicclCommGetAsyncError(nullptr, &async),
                nullptr);

  // An id that infinicclGetUniqueId did not make is refused at once.
  infinicclUniqueId id{};
  ExpectFailure("a zeroed id", "CommInitRank", infinicclCommInitRank(&out, g_n, id, g_rank),
                {infinicclInvalidArgument});
  CHECK_RC(infinicclGetUniqueId(&id), infinicclSuccess);
}

// Handles are not small integers nor guessable from a live one: small values,
// neighbours of a live handle and its counter part alone are all refused,
// and GetLastError on them says "unknown communicator" rather than the
// thread's last (unrelated) message.
void CheckForgedHandles(infinicclComm_t comm) {
  const uintptr_t live = reinterpret_cast<uintptr_t>(comm);
  CHECK(live > 0xffff, "handle %#zx is a small integer", size_t(live));
  std::vector<uintptr_t> forged;
  for (uintptr_t h = 1; h <= 64; ++h) forged.push_back(h);
  forged.push_back(live + 1000);                  // never issued (live + 1 may be)
  forged.push_back(live & 0xffffffffu);           // the counter part alone
  forged.push_back(live ^ (uintptr_t{1} << 40));  // another salt
  for (uintptr_t h : forged) {
    if (h == live) continue;
    infinicclComm_t f = reinterpret_cast<infinicclComm_t>(h);
    int v = -1;
    // Something else fails first on this thread, so its message is there.
    (void)infinicclGetRank(nullptr);
    const infinicclResult_t rc = infinicclCommCount(f, &v);
    CHECK(rc == infinicclInvalidArgument, "forged handle %#zx: CommCount gave %s",
          size_t(h), ResultName(rc));
    (void)infinicclGetRank(nullptr);
    const std::string msg = infinicclGetLastError(f);
    CHECK(msg == "unknown communicator", "GetLastError(%#zx) = \"%s\"", size_t(h),
          msg.c_str());
  }
}

// Every argument error of one collective, on a live communicator.
void CheckCollectiveArgs(const Coll &c, infinicclComm_t comm, infinicclComm_t destroyed) {
  constexpr size_t kCount = 16;
  std::vector<int64_t> sbuf(g_n * kCount + 4), rbuf(g_n * kCount + 4);
  const int peer = (g_rank + 1) % g_n;
  // A valid call; each case below breaks one thing in it.
  const Args good{sbuf.data(), rbuf.data(), kCount, infinicclInt32, infinicclSum,
                  c.p2p ? peer : 0, comm};
  const bool root = g_rank == good.root;
  auto significant = [&](Significance s) { return s == kAll || (s == kRootOnly && root); };
  auto expect = [&](const char *what, Args a) { ExpectInvalid(what, c.name, c.call(a), comm); };
  const auto lifecycle = {infinicclInvalidArgument, infinicclInvalidUsage};

  Args a = good;
  a.comm = nullptr;
  ExpectInvalid("NULL comm", c.name, c.call(a), nullptr);
  a.comm = destroyed;
  ExpectFailure("destroyed comm", c.name, c.call(a), lifecycle);
  alignas(64) unsigned char junk[512];
  std::memset(junk, 0x5c, sizeof junk);
  a.comm = junk;
  ExpectFailure("garbage comm", c.name, c.call(a), lifecycle);

  for (int dt : {int(infinicclNumTypes), -1}) {
    a = good;
    a.dt = dt;
    expect(dt < 0 ? "dtype -1" : "dtype 12", a);
  }
  if (c.has_op) {
    for (int op : {int(infinicclNumOps), -1}) {
      a = good;
      a.op = op;
      expect(op < 0 ? "op -1" : "op NumOps", a);
    }
  }
  if (c.has_root) {
    for (int r : {-1, g_n}) {
      a = good;
      a.root = r;
      expect(r < 0 ? "root/peer -1" : "root/peer nranks", a);
    }
    if (c.p2p) {
      a = good;
      a.root = g_rank;
      expect("peer == self", a);
    }
  }
  // count * sizeof(int32) does not fit size_t.
  a = good;
  a.count = SIZE_MAX / 2 + 1;
  expect("count*typesize overflows size_t", a);
  if (significant(c.blocks_sig) && g_n > 1) {  // count fits, nranks*count does not
    a = good;
    a.dt = infinicclUInt8;
    a.count = SIZE_MAX / g_n + 1;
    expect("nranks*count overflows size_t", a);
  }
  // NULL buffer with count > 0, where the buffer matters on this rank.
  if (significant(c.send_sig)) {
    a = good;
    a.send = nullptr;
    expect("NULL sendbuff", a);
  }
  if (significant(c.recv_sig)) {
    a = good;
    a.recv = nullptr;
    expect("NULL recvbuff", a);
  }
  // Overlap other than NCCL's in-place layout: shifted by one element.
  if (significant(c.send_sig) && significant(c.recv_sig)) {
    a = good;
    int32_t *base = reinterpret_cast<int32_t *>(rbuf.data());
    std::string n = c.name;
    if (n == "ReduceScatter" || n == "Scatter") {  // recvbuff inside sendbuff
      a.send = base;
      a.recv = base + good.root * kCount + 1 + (n == "ReduceScatter" ? g_rank * kCount : 0);
    } else if (n == "AllGather" || n == "Gather") {  // sendbuff inside recvbuff
      a.recv = base;
      a.send = base + (n == "Gather" ? good.root : g_rank) * kCount + 1;
    } else {
      a.recv = base;
      a.send = base + 1;
    }
    expect("overlapping buffers", a);
  }
}

// Count 0 succeeds with NULL buffers and does not communicate, so even an
// unmatched Send/Recv of 0 elements returns at once.
void CheckZeroCount(infinicclComm_t comm) {
  for (const Coll &c : kColls) {
    if (c.p2p && g_n < 2) continue;
    Args a{nullptr, nullptr, 0, infinicclFloat32, infinicclSum, c.p2p ? (g_rank + 1) % g_n : 0,
           comm};
    infinicclResult_t rc = c.call(a);
    CHECK(rc == infinicclSuccess, "%s count=0 NULL buffers: %s: %s", c.name, ResultName(rc),
          SafeLastError());
  }
}

void CheckAfterFinalize(infinicclComm_t old_comm) {
  int v = 0;
  int64_t x = 1;
  infinicclComm_t out = nullptr;
  const auto usage = {infinicclInvalidUsage};
  ExpectFailure("after Finalize", "GetRank", infinicclGetRank(&v), usage);
  ExpectFailure("after Finalize", "GetSize", infinicclGetSize(&v), usage);
  ExpectFailure("after Finalize", "CommInitAll", infinicclCommInitAll(&out, 0, nullptr), usage);
  ExpectFailure("after Finalize", "CommCount", infinicclCommCount(old_comm, &v), usage);
  infinicclResult_t async = infinicclSuccess;
  ExpectFailure("after Finalize", "CommGetAsyncError",
                infinicclCommGetAsyncError(old_comm, &async), usage);
  ExpectFailure("after Finalize", "CommDestroy", infinicclCommDestroy(old_comm), usage);
  ExpectFailure("after Finalize", "AllReduce",
                infinicclAllReduce(&x, &x, 1, infinicclInt64, infinicclSum, old_comm, nullptr), usage);
  ExpectFailure("after Finalize", "Finalize", infinicclFinalize(), usage);
  infinicclStagingStats stats{};
  ExpectFailure("after Finalize", "GetStagingStats", infinicclGetStagingStats(&stats),
                usage);
  CHECK_RC(infinicclGetVersion(&v), infinicclSuccess);
  CHECK(infinicclGetErrorString(infinicclSuccess) != nullptr);
}

}  // namespace

int main(int argc, char **argv) {
  CheckBeforeInit();
  long before_init_failures = g_failures;
  if (infinicclInit(&argc, &argv) != infinicclSuccess) {
    std::fprintf(stderr, "infinicclInit failed: %s\n", SafeLastError());
    return 2;
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_n);
  if (before_init_failures)
    std::fprintf(stderr, "[rank %d] %ld failures before Init (printed with rank -1)\n", g_rank,
                 before_init_failures);

  infinicclComm_t comm = nullptr, doomed = nullptr;
  CHECK_RC(infinicclCommInitAll(&comm, 0, nullptr), infinicclSuccess);
  CHECK_RC(infinicclCommInitAll(&doomed, 0, nullptr), infinicclSuccess);
  if (comm == nullptr || doomed == nullptr) MPI_Abort(MPI_COMM_WORLD, 2);
  ExpectWorks(doomed, "CommInitAll");
  CHECK_RC(infinicclCommDestroy(doomed), infinicclSuccess);
  ExpectFailure("twice", "CommDestroy", infinicclCommDestroy(doomed),
                {infinicclInvalidArgument, infinicclInvalidUsage});
  infinicclResult_t rc = infinicclCommDestroy(nullptr);  // NCCL treats NULL as a no-op
  CHECK(rc == infinicclSuccess || rc == infinicclInvalidArgument, "CommDestroy(NULL): %s",
        ResultName(rc));

  CheckResultStrings();
  CheckCommAndQueryArgs(comm);
  CheckForgedHandles(comm);
  ExpectWorks(comm, "query errors");
  for (const Coll &c : kColls) {
    CheckCollectiveArgs(c, comm, doomed);
    ExpectWorks(comm, c.name);
  }
  CheckZeroCount(comm);
  ExpectWorks(comm, "count 0");
  MPI_Barrier(MPI_COMM_WORLD);  // every rank is done with comm before it goes

  CHECK_RC(infinicclCommDestroy(comm), infinicclSuccess);
  const long total = TotalFailures();
  CHECK_RC(infinicclFinalize(), infinicclSuccess);
  CheckAfterFinalize(comm);
  std::printf("[rank %d/%d] test_errors: %ld error cases, %ld failures\n", g_rank, g_n, g_checked,
              g_failures);
  return g_failures == 0 && total == 0 ? 0 : 1;
}
