// A recording stand-in for a native CCL (no NCCL, no device), shared by
// the unit tests of CclBackend<Api> and of the API's CCL paths: every call a
// backend issues is logged on the FakeComm with its offset, type, count and
// peer; failures, asynchronous errors and splits are set up per test.
#pragma once

#include <cstdio>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "backend/ccl/ccl_backend.h"

namespace infiniccl {

struct Issued {
  std::string call;
  const void *buf;
  size_t count;
  CclType type;
  int peer;  // root or peer; -1 where none
};

struct FakeComm {
  std::vector<Issued> log;
  int fail_call = -1;   // index in log of the call that fails, -1 none
  int fail_result = 5;  // what it returns (5: invalid usage)
  int async_error = 0;
  bool destroyed = false;
  bool aborted = false;
  int aborts = 0;  // CommAbort calls
  int split_color = -2, split_key = -2;  // the last CommSplit's arguments
  FakeComm *split_child = nullptr;       // what CommSplit returns
  int split_result = 0;
  int user_rank = 0, count = 1;  // what CommUserRank / CommCount report
  int rank_result = 0;
};

inline int g_group_depth = 0;

struct FakeApi {
  static constexpr const char *kName = "FAKE";
  static constexpr const char *kPrefix = "fake";
  static constexpr DeviceKind kDeviceKind = DeviceKind::kSim;
  static constexpr bool kNativeAllToAllGatherScatter = false;
  using Result = int;
  using Comm = FakeComm *;
  using UniqueId = struct { char bytes[64]; };
  using DataType = CclType;
  using RedOp = CclOp;
  using Stream = void *;
  static constexpr Result kSuccess = 0;
  static constexpr Result kInProgress = 7;

  static DataType Type(CclType t) { return t; }
  static RedOp Op(CclOp op) { return op; }
  static const char *GetErrorString(Result) { return "fake error"; }
  static const char *GetLastError(Comm c) { return c ? "fake detail" : ""; }
  static Result CommGetAsyncError(Comm c, Result *r) {
    *r = c->async_error;
    return kSuccess;
  }
  static Result CommDestroy(Comm c) {
    c->destroyed = true;
    return kSuccess;
  }
  static Result CommAbort(Comm c) {
    c->aborted = true;
    ++c->aborts;
    return kSuccess;
  }
  static constexpr bool kHasSplit = true;
  static Result CommSplit(Comm c, int color, int key, Comm *out) {
    c->split_color = color;
    c->split_key = key;
    // A child made here (none set up by the test) is one rank: the parent's
    // ranks of one color are all this process in these tests.
    *out = color < 0 ? nullptr : c->split_child ? c->split_child : NewComm(0, 1);
    return c->split_result;
  }
  static Result CommUserRank(Comm c, int *rank) {
    *rank = c->user_rank;
    return c->rank_result;
  }
  static Result CommCount(Comm c, int *count) {
    *count = c->count;
    return kSuccess;
  }
  // What CclProviderImpl<FakeApi> needs: a version, the id, a communicator.
  static inline int version = 22803;  // NCCL's numbering: 2.28.3
  static Result GetVersion(int *v) {
    *v = version;
    return kSuccess;
  }
  static void FormatVersion(int v, char *buf, size_t size) {
    std::snprintf(buf, size, "fake %d", v);
  }
  // The ids the fake makes are id_byte repeated; CommInitRank keeps the id
  // it was given, so a test can see that another process's id arrived.
  static inline char id_byte = 7;
  static inline UniqueId last_id{};
  static Result GetUniqueId(UniqueId *id) {
    std::memset(id->bytes, id_byte, sizeof id->bytes);
    return kSuccess;
  }
  static Result CommInitRank(Comm *c, int n, UniqueId id, int rank) {
    last_id = id;
    *c = NewComm(rank, n);
    return kSuccess;
  }
  // Communicators the fake made itself live to the end of the process.
  static FakeComm *NewComm(int rank, int count) {
    static std::deque<FakeComm> made;
    made.emplace_back();
    made.back().user_rank = rank;
    made.back().count = count;
    last_made = &made.back();
    return last_made;
  }
  static inline FakeComm *last_made = nullptr;
  static Result GroupStart() {
    ++g_group_depth;
    return kSuccess;
  }
  static inline Result group_end_result = kSuccess;  // what GroupEnd returns
  static Result GroupEnd() {
    --g_group_depth;
    return group_end_result;
  }
  static Result Log(Comm c, const char *call, const void *buf, size_t n, DataType t,
                    int peer) {
    c->log.push_back({call, buf, n, t, peer});
    return static_cast<int>(c->log.size()) - 1 == c->fail_call ? c->fail_result
                                                               : kSuccess;
  }
  static Result AllReduce(const void *s, void *, size_t n, DataType t, RedOp, Comm c,
                          Stream) {
    return Log(c, "AllReduce", s, n, t, -1);
  }
  static Result Broadcast(const void *s, void *, size_t n, DataType t, int root, Comm c,
                          Stream) {
    return Log(c, "Broadcast", s, n, t, root);
  }
  static Result Reduce(const void *s, void *, size_t n, DataType t, RedOp, int root,
                       Comm c, Stream) {
    return Log(c, "Reduce", s, n, t, root);
  }
  static Result AllGather(const void *s, void *, size_t n, DataType t, Comm c, Stream) {
    return Log(c, "AllGather", s, n, t, -1);
  }
  static Result ReduceScatter(const void *s, void *, size_t n, DataType t, RedOp, Comm c,
                              Stream) {
    return Log(c, "ReduceScatter", s, n, t, -1);
  }
  static Result Send(const void *s, size_t n, DataType t, int peer, Comm c, Stream) {
    return Log(c, "Send", s, n, t, peer);
  }
  static Result Recv(void *r, size_t n, DataType t, int peer, Comm c, Stream) {
    return Log(c, "Recv", r, n, t, peer);
  }
};

struct FakeNativeApi : FakeApi {
  static constexpr bool kNativeAllToAllGatherScatter = true;
  // Whether the "loaded library" has them (NCCL's are weak references).
  static inline bool loaded = true;
  static bool NativeAllToAllGatherScatterLoaded() { return loaded; }
  static Result AlltoAll(const void *s, void *, size_t n, DataType t, Comm c, Stream) {
    return Log(c, "AlltoAll", s, n, t, -1);
  }
  static Result Gather(const void *s, void *, size_t n, DataType t, int root, Comm c,
                       Stream) {
    return Log(c, "Gather", s, n, t, root);
  }
  static Result Scatter(const void *s, void *, size_t n, DataType t, int root, Comm c,
                        Stream) {
    return Log(c, "Scatter", s, n, t, root);
  }
};

}  // namespace infiniccl
