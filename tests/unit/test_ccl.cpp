// The native-CCL path without a CCL: how calls map onto NCCL/MCCL types and
// ops, which calls a CCL must not take, result codes, INFINICCL_BACKEND
// parsing, and the route decision as a pure function of (memory space, what
// the communicator has, INFINICCL_BACKEND). Runs on every build.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "backend/ccl/ccl_mapping.h"
#include "backend/ccl/ccl_provider.h"
#include "core/config.h"
#include "route/route_decision.h"

namespace infiniccl {
namespace {

CollArgs Args(CollKind kind, infinicclDataType_t dtype, infinicclRedOp_t op,
              bool in_place = false) {
  CollArgs a{kind, nullptr, nullptr, 5, dtype, op, 0, nullptr, in_place};
  return a;
}

TEST(CclMapping, EveryDataTypeHasAnElementType) {
  struct Row {
    infinicclDataType_t dtype;
    CclType type;
    size_t count;  // for 5 elements
  };
  const Row rows[] = {
      {infinicclInt8, CclType::kInt8, 5},
      {infinicclInt16, CclType::kInt8, 10},
      {infinicclInt32, CclType::kInt32, 5},
      {infinicclInt64, CclType::kInt64, 5},
      {infinicclUInt8, CclType::kUint8, 5},
      {infinicclUInt16, CclType::kInt8, 10},
      {infinicclUInt32, CclType::kUint32, 5},
      {infinicclUInt64, CclType::kUint64, 5},
      {infinicclFloat16, CclType::kFloat16, 5},
      {infinicclBFloat16, CclType::kBfloat16, 5},
      {infinicclFloat32, CclType::kFloat32, 5},
      {infinicclFloat64, CclType::kFloat64, 5},
  };
  ASSERT_EQ(sizeof rows / sizeof rows[0], static_cast<size_t>(infinicclNumTypes));
  for (const Row &r : rows) {
    const CclElements e = MapElements(r.dtype, 5);
    EXPECT_EQ(e.type, r.type) << "dtype " << r.dtype;
    EXPECT_EQ(e.count, r.count) << "dtype " << r.dtype;
  }
}

TEST(CclMapping, Ops) {
  EXPECT_EQ(MapRedOp(infinicclSum), CclOp::kSum);
  EXPECT_EQ(MapRedOp(infinicclProd), CclOp::kProd);
  EXPECT_EQ(MapRedOp(infinicclMax), CclOp::kMax);
  EXPECT_EQ(MapRedOp(infinicclMin), CclOp::kMin);
  EXPECT_EQ(MapRedOp(infinicclAvg), CclOp::kAvg);
}

TEST(CclMapping, SixteenBitIntegersMoveButDoNotReduce) {
  for (infinicclDataType_t t : {infinicclInt16, infinicclUInt16}) {
    for (CollKind k :
         {CollKind::kBroadcast, CollKind::kAllGather, CollKind::kGather,
          CollKind::kScatter, CollKind::kAllToAll, CollKind::kSend, CollKind::kRecv}) {
      EXPECT_EQ(CclUnsupportedReason(Args(k, t, infinicclSum)), nullptr);
    }
    for (CollKind k :
         {CollKind::kAllReduce, CollKind::kReduce, CollKind::kReduceScatter}) {
      const char *why = CclUnsupportedReason(Args(k, t, infinicclSum));
      ASSERT_NE(why, nullptr);
      EXPECT_NE(std::string(why).find("16-bit"), std::string::npos) << why;
    }
  }
}

TEST(CclMapping, AvgOnlyForFloatingTypes) {
  for (int t = 0; t < infinicclNumTypes; ++t) {
    const auto dtype = static_cast<infinicclDataType_t>(t);
    const bool floating = dtype == infinicclFloat16 || dtype == infinicclBFloat16 ||
                          dtype == infinicclFloat32 || dtype == infinicclFloat64;
    const bool int16 = dtype == infinicclInt16 || dtype == infinicclUInt16;
    const char *why =
        CclUnsupportedReason(Args(CollKind::kAllReduce, dtype, infinicclAvg));
    EXPECT_EQ(why == nullptr, floating) << "dtype " << t;
    // Every other op reduces every type but the 16-bit integers.
    for (infinicclRedOp_t op :
         {infinicclSum, infinicclProd, infinicclMax, infinicclMin}) {
      EXPECT_EQ(CclUnsupportedReason(Args(CollKind::kReduce, dtype, op)) == nullptr,
                !int16);
    }
  }
}

// NCCL's ncclRedOp_t has no bitwise op: Band, Bor and Bxor reductions of
// every type are not the CCL's (data movement ignores its op), so the route
// takes the segment or MPI, and INFINICCL_BACKEND=ccl says why not.
TEST(CclMapping, BitwiseReductionsAreNotForTheCcl) {
  for (infinicclRedOp_t op : {infinicclBand, infinicclBor, infinicclBxor}) {
    for (int t = infinicclInt8; t <= infinicclUInt64; ++t) {
      const auto dtype = static_cast<infinicclDataType_t>(t);
      for (CollKind k : {CollKind::kAllReduce, CollKind::kReduce, CollKind::kReduceScatter}) {
        const char *why = CclUnsupportedReason(Args(k, dtype, op));
        ASSERT_NE(why, nullptr) << "dtype " << t << " op " << op;
        EXPECT_NE(std::string(why).find("bitwise"), std::string::npos) << why;
      }
      for (CollKind k : {CollKind::kBroadcast, CollKind::kAllGather, CollKind::kAllToAll}) {
        if (t == infinicclInt16 || t == infinicclUInt16) continue;
        EXPECT_EQ(CclUnsupportedReason(Args(k, dtype, op)), nullptr) << "dtype " << t;
      }
    }
  }
  RouteFacts f;
  f.device_buffers = true;
  f.has_ccl = true;
  f.ccl_name = "NCCL";
  f.ccl_unsupported = CclUnsupportedReason(Args(CollKind::kAllReduce, infinicclInt32,
                                                infinicclBxor));
  Path p = Path::kNone;
  ASSERT_TRUE(DecidePath(BackendChoice::kAuto, f, &p).ok());
  EXPECT_EQ(p, Path::kStagedMpi);
  f.shm = true;  // every rank on one node: the segment reduces it
  ASSERT_TRUE(DecidePath(BackendChoice::kAuto, f, &p).ok());
  EXPECT_EQ(p, Path::kShm);
  f.shm = false;
  f.hierarchical = true;  // two levels: the group's CCL is asked again there
  ASSERT_TRUE(DecidePath(BackendChoice::kAuto, f, &p).ok());
  EXPECT_EQ(p, Path::kHier);
  f.hierarchical = false;
  const Status st = DecidePath(BackendChoice::kCcl, f, &p);
  EXPECT_EQ(st.code(), infinicclNotSupported);
  EXPECT_NE(st.message().find("bitwise"), std::string::npos) << st.message();
  // The same call with Max (what a bool's Or could be) is the CCL's.
  f.ccl_unsupported = CclUnsupportedReason(Args(CollKind::kAllReduce, infinicclInt32,
                                                infinicclMax));
  ASSERT_TRUE(DecidePath(BackendChoice::kAuto, f, &p).ok());
  EXPECT_EQ(p, Path::kCcl);
}

TEST(CclMapping, InPlaceAllToAllIsNotForTheCcl) {
  EXPECT_NE(
      CclUnsupportedReason(Args(CollKind::kAllToAll, infinicclInt32, infinicclSum, true)),
      nullptr);
  EXPECT_EQ(CclUnsupportedReason(Args(CollKind::kAllToAll, infinicclInt32, infinicclSum)),
            nullptr);
  EXPECT_EQ(CclUnsupportedReason(
                Args(CollKind::kAllGather, infinicclInt32, infinicclSum, true)),
            nullptr);
}

// CCLs match Send/Recv by peer and order alone: a tag other than 0 or a
// receive from any source takes MPI; tag 0 with a named peer is the CCL's.
TEST(CclMapping, TaggedAndAnySourceSendRecvAreNotForTheCcl) {
  for (CollKind k : {CollKind::kSend, CollKind::kRecv}) {
    CollArgs a = Args(k, infinicclFloat32, infinicclSum);
    a.root = 1;
    a.tagged = true;
    EXPECT_EQ(CclUnsupportedReason(a), nullptr);
    a.tag = 3;
    const char *why = CclUnsupportedReason(a);
    ASSERT_NE(why, nullptr);
    EXPECT_NE(std::string(why).find("tag"), std::string::npos) << why;
  }
  CollArgs any = Args(CollKind::kRecv, infinicclFloat32, infinicclSum);
  any.root = INFINICCL_ANY_SOURCE;
  any.tagged = true;
  const char *why = CclUnsupportedReason(any);
  ASSERT_NE(why, nullptr);
  EXPECT_NE(std::string(why).find("any source"), std::string::npos) << why;
  // So the route takes MPI, and INFINICCL_BACKEND=ccl says why not.
  RouteFacts f;
  f.device_buffers = true;
  f.has_ccl = true;
  f.ccl_name = "NCCL";
  f.ccl_unsupported = why;
  Path p = Path::kNone;
  ASSERT_TRUE(DecidePath(BackendChoice::kAuto, f, &p).ok());
  EXPECT_EQ(p, Path::kStagedMpi);
  const Status st = DecidePath(BackendChoice::kCcl, f, &p);
  EXPECT_EQ(st.code(), infinicclNotSupported);
  EXPECT_NE(st.message().find("any source"), std::string::npos) << st.message();
}

TEST(CclMapping, ResultCodesShareNcclsNumbering) {
  // ncclSuccess .. ncclInProgress are 0..7, in our order.
  const infinicclResult_t expected[] = {infinicclSuccess,         infinicclUnhandledError,
                                        infinicclSystemError,     infinicclInternalError,
                                        infinicclInvalidArgument, infinicclInvalidUsage,
                                        infinicclRemoteError,     infinicclInProgress};
  for (int r = 0; r < 8; ++r) EXPECT_EQ(CclResultCode(r), expected[r]);
  EXPECT_EQ(CclResultCode(8), infinicclInternalError);
  EXPECT_EQ(CclResultCode(-1), infinicclInternalError);
}

Config ParseBackend(const char *value) {
  return Config::Parse([value](const char *name) -> const char * {
    return std::string(name) == "INFINICCL_BACKEND" ? value : nullptr;
  });
}

TEST(BackendChoice, Names) {
  EXPECT_STREQ(BackendChoiceName(BackendChoice::kAuto), "auto");
  EXPECT_STREQ(BackendChoiceName(BackendChoice::kMpi), "mpi");
  EXPECT_STREQ(BackendChoiceName(BackendChoice::kCcl), "ccl");
}

// Config resolves the variable to the enum once, in any case.
TEST(BackendChoice, ConfigAcceptsAutoMpiCclAnyCase) {
  EXPECT_EQ(ParseBackend(nullptr).backend, BackendChoice::kAuto);
  EXPECT_EQ(ParseBackend("auto").backend, BackendChoice::kAuto);
  EXPECT_EQ(ParseBackend("AUTO").backend, BackendChoice::kAuto);
  EXPECT_EQ(ParseBackend("mpi").backend, BackendChoice::kMpi);
  EXPECT_EQ(ParseBackend("Mpi").backend, BackendChoice::kMpi);
  EXPECT_EQ(ParseBackend("ccl").backend, BackendChoice::kCcl);
  EXPECT_EQ(ParseBackend("CCL").backend, BackendChoice::kCcl);
  for (const char *ok : {"auto", "mpi", "ccl", "CCL"}) {
    EXPECT_TRUE(ParseBackend(ok).warnings.empty()) << ok;
  }
  const std::vector<std::string> lines = ParseBackend("CCL").Describe();
  EXPECT_NE(std::find(lines.begin(), lines.end(), "INFINICCL_BACKEND=ccl"), lines.end());
}

// An invalid value is not an error: one warning naming the variable, the
// value and the accepted ones (logged at WARN by infinicclInit and shown by
// infiniccl-info), and auto is used.
TEST(BackendChoice, InvalidValueWarnsAndUsesAuto) {
  for (const char *bad : {"nccl", "", "mpi ", "cc", "auto,mpi"}) {
    const Config c = ParseBackend(bad);
    EXPECT_EQ(c.backend, BackendChoice::kAuto) << bad;
    ASSERT_EQ(c.warnings.size(), 1u) << bad;
    EXPECT_EQ(c.warnings[0], std::string("INFINICCL_BACKEND='") + bad +
                                 "' is not auto, mpi or ccl; using auto");
  }
}

TEST(RouteDecision, HostBuffersGoToMpiUnlessForcedToTheCcl) {
  Path p;
  for (bool ccl : {false, true}) {
    ASSERT_TRUE(DecidePath(BackendChoice::kAuto, RouteFacts{false, true, ccl}, &p).ok());
    EXPECT_EQ(p, Path::kHostMpi);
    ASSERT_TRUE(DecidePath(BackendChoice::kMpi, RouteFacts{false, true, ccl}, &p).ok());
    EXPECT_EQ(p, Path::kHostMpi);
    const Status st = DecidePath(BackendChoice::kCcl, RouteFacts{false, true, ccl}, &p);
    EXPECT_EQ(st.code(), infinicclInvalidUsage);
    EXPECT_NE(st.message().find("host memory"), std::string::npos) << st.message();
  }
}

// Shared memory among a node's ranks: host buffers, and device buffers that
// no CCL of their device takes; never under INFINICCL_BACKEND=ccl.
TEST(RouteDecision, SharedMemoryTakesWhatNoCclTakes) {
  Path p;
  RouteFacts f;
  f.shm = true;
  for (BackendChoice c : {BackendChoice::kAuto, BackendChoice::kMpi}) {
    f.device_buffers = false;
    f.has_ccl = true;
    ASSERT_TRUE(DecidePath(c, f, &p).ok());
    EXPECT_EQ(p, Path::kShm);
    f.device_buffers = true;
    f.has_ccl = false;
    ASSERT_TRUE(DecidePath(c, f, &p).ok());
    EXPECT_EQ(p, Path::kShm);
  }
  f.has_ccl = true;
  ASSERT_TRUE(DecidePath(BackendChoice::kAuto, f, &p).ok());
  EXPECT_EQ(p, Path::kCcl);
  ASSERT_TRUE(DecidePath(BackendChoice::kMpi, f, &p).ok());
  EXPECT_EQ(p, Path::kShm);
  f.ccl_unsupported = "not this op";
  ASSERT_TRUE(DecidePath(BackendChoice::kAuto, f, &p).ok());
  EXPECT_EQ(p, Path::kShm);
  ASSERT_TRUE(DecidePath(BackendChoice::kCcl, f, &p).ok() == false);
  f.device_buffers = false;
  EXPECT_EQ(DecidePath(BackendChoice::kCcl, f, &p).code(), infinicclInvalidUsage);
  // Two levels come first: every rank of a hierarchical communicator takes them.
  f.hierarchical = true;
  ASSERT_TRUE(DecidePath(BackendChoice::kAuto, f, &p).ok());
  EXPECT_EQ(p, Path::kHier);
}

TEST(RouteDecision, HostBuffersOnACommWithoutMpiAreNotSupported) {
  Path p;
  for (BackendChoice c : {BackendChoice::kAuto, BackendChoice::kMpi}) {
    const Status st = DecidePath(c, RouteFacts{false, false, true}, &p);
    EXPECT_EQ(st.code(), infinicclNotSupported);
    EXPECT_NE(st.message().find("infinicclCommInitRank"), std::string::npos)
        << st.message();
  }
}
TEST(RouteDecision, ANodeCommunicatorWithoutMpiRefusesWhatItsSharedMemoryCannotRun) {
  // Made by infinicclCommInitRank on one node without MPI: a call its
  // shared memory cannot run is NotSupported naming the launchers, on host
  // buffers and on device buffers without a CCL; a CCL that takes the
  // device buffers still runs them.
  RouteFacts f;
  f.has_mpi = false;
  f.node_unsupported = "its shared memory cannot run this call";
  Path p = Path::kNone;
  for (bool device : {false, true}) {
    f.device_buffers = device;
    const Status st = DecidePath(BackendChoice::kAuto, f, &p);
    EXPECT_EQ(st.code(), infinicclNotSupported);
    EXPECT_NE(st.message().find("icclrun, mpirun or srun"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("cannot run this call"), std::string::npos) << st.message();
  }
  f.has_ccl = true;
  ASSERT_TRUE(DecidePath(BackendChoice::kAuto, f, &p).ok());
  EXPECT_EQ(p, Path::kCcl);
}


TEST(RouteDecision, DeviceBuffers) {
  Path p;
  // auto: the CCL when there is one and it can run the call, else MPI.
  ASSERT_TRUE(DecidePath(BackendChoice::kAuto, RouteFacts{true, true, true}, &p).ok());
  EXPECT_EQ(p, Path::kCcl);
  ASSERT_TRUE(DecidePath(BackendChoice::kAuto, RouteFacts{true, true, false}, &p).ok());
  EXPECT_EQ(p, Path::kStagedMpi);
  ASSERT_TRUE(
      DecidePath(BackendChoice::kAuto, RouteFacts{true, true, true, "NCCL", "why"}, &p)
          .ok());
  EXPECT_EQ(p, Path::kStagedMpi);
  // auto without MPI: the CCL or nothing.
  ASSERT_TRUE(DecidePath(BackendChoice::kAuto, RouteFacts{true, false, true}, &p).ok());
  EXPECT_EQ(p, Path::kCcl);
  Status st =
      DecidePath(BackendChoice::kAuto, RouteFacts{true, false, true, "NCCL", "why"}, &p);
  EXPECT_EQ(st.code(), infinicclNotSupported);
  EXPECT_NE(st.message().find("why"), std::string::npos) << st.message();
  // mpi: never the CCL.
  ASSERT_TRUE(DecidePath(BackendChoice::kMpi, RouteFacts{true, true, true}, &p).ok());
  EXPECT_EQ(p, Path::kStagedMpi);
  st = DecidePath(BackendChoice::kMpi, RouteFacts{true, false, true}, &p);
  EXPECT_EQ(st.code(), infinicclNotSupported);
  EXPECT_NE(st.message().find("INFINICCL_BACKEND=mpi"), std::string::npos)
      << st.message();
  // ccl: the CCL or an error, never a fallback.
  ASSERT_TRUE(DecidePath(BackendChoice::kCcl, RouteFacts{true, true, true}, &p).ok());
  EXPECT_EQ(p, Path::kCcl);
  st = DecidePath(BackendChoice::kCcl, RouteFacts{true, true, false}, &p);
  EXPECT_EQ(st.code(), infinicclNotSupported);
  EXPECT_NE(st.message().find("no CCL communicator"), std::string::npos) << st.message();
  st =
      DecidePath(BackendChoice::kCcl, RouteFacts{true, true, true, "NCCL", "16-bit"}, &p);
  EXPECT_EQ(st.code(), infinicclNotSupported);
  EXPECT_NE(st.message().find("NCCL cannot: 16-bit"), std::string::npos) << st.message();
}

// A one-rank reduction of device buffers is a copy whatever the backend
// choice and whether or not a CCL (or MPI) is there.
TEST(RouteDecision, OneRankReductionOfDeviceBuffersIsALocalCopy) {
  Path p;
  for (BackendChoice c : {BackendChoice::kAuto, BackendChoice::kMpi, BackendChoice::kCcl}) {
    for (bool mpi : {false, true}) {
      for (bool ccl : {false, true}) {
        RouteFacts f{true, mpi, ccl};
        f.one_rank_reduction = true;
        ASSERT_TRUE(DecidePath(c, f, &p).ok());
        EXPECT_EQ(p, Path::kLocalCopy);
      }
    }
  }
}

// A hierarchical communicator's call with a two-level form takes kHier on
// every rank, whatever this rank's buffers (a host-only rank of a mixed job
// too), before the one-rank copy and the CCL; only the forced backends keep
// their own rules (no hierarchy is built under them).
TEST(RouteDecision, HierarchicalCallsTakeTheTwoLevelPathOnEveryRank) {
  Path p;
  for (bool device : {false, true}) {
    for (bool ccl : {false, true}) {
      RouteFacts f{device, true, ccl};
      f.hierarchical = true;
      ASSERT_TRUE(DecidePath(BackendChoice::kAuto, f, &p).ok());
      EXPECT_EQ(p, Path::kHier) << device << ccl;
    }
  }
  RouteFacts flat{true, true, false};
  ASSERT_TRUE(DecidePath(BackendChoice::kAuto, flat, &p).ok());
  EXPECT_EQ(p, Path::kStagedMpi);
  RouteFacts forced{true, true, false};
  forced.hierarchical = true;
  ASSERT_TRUE(DecidePath(BackendChoice::kMpi, forced, &p).ok());
  EXPECT_EQ(p, Path::kStagedMpi);
  EXPECT_STREQ(PathName(Path::kHier), "hierarchical");
}

// Device buffers on a capturing stream: the CCL's path is left to the CCL
// (NCCL captures its kernels), a one-rank copy between device buffers is a
// device copy on the stream; every other path is refused, whatever made
// the decision take it, with a message that names the path and the way
// out. Host buffers never ask the stream (the capture flag stays false).
TEST(RouteDecision, CaptureTakesOnlyTheCclPath) {
  struct Case {
    const char *name;
    BackendChoice choice;
    RouteFacts facts;
    Path want;  // kNone: refused with InvalidUsage
  };
  auto facts = [](bool ccl, const char *unsupported, bool one_rank, bool hier, bool shm,
                  bool host_and_device = false) {
    RouteFacts f{true, true, ccl, "NCCL", unsupported};
    f.host_and_device = host_and_device;
    f.one_rank_reduction = one_rank;
    f.hierarchical = hier;
    f.shm = shm;
    f.capturing = true;
    return f;
  };
  const Case cases[] = {
      {"ccl takes it", BackendChoice::kAuto, facts(true, nullptr, false, false, false),
       Path::kCcl},
      {"ccl forced", BackendChoice::kCcl, facts(true, nullptr, false, false, false),
       Path::kCcl},
      {"ccl beside shm", BackendChoice::kAuto, facts(true, nullptr, false, false, true),
       Path::kCcl},
      {"no ccl: staged", BackendChoice::kAuto, facts(false, nullptr, false, false, false),
       Path::kNone},
      {"ccl cannot: staged", BackendChoice::kAuto, facts(true, "16-bit", false, false, false),
       Path::kNone},
      {"mpi forced", BackendChoice::kMpi, facts(true, nullptr, false, false, false),
       Path::kNone},
      {"shm", BackendChoice::kAuto, facts(false, nullptr, false, false, true), Path::kNone},
      {"hier", BackendChoice::kAuto, facts(true, nullptr, false, true, false), Path::kNone},
      {"one-rank copy", BackendChoice::kAuto, facts(true, nullptr, true, false, false),
       Path::kLocalCopy},
      {"one-rank copy, no ccl", BackendChoice::kMpi, facts(false, nullptr, true, false, false),
       Path::kLocalCopy},
      {"one-rank copy to host", BackendChoice::kAuto,
       facts(true, nullptr, true, false, false, true), Path::kNone},
  };
  for (const Case &c : cases) {
    Path p = Path::kNone;
    const Status st = DecidePath(c.choice, c.facts, &p);
    if (c.want == Path::kNone) {
      EXPECT_EQ(st.code(), infinicclInvalidUsage) << c.name;
      EXPECT_NE(st.message().find("cannot be captured"), std::string::npos) << st.message();
      EXPECT_NE(st.message().find("native CCL"), std::string::npos) << st.message();
    } else {
      ASSERT_TRUE(st.ok()) << c.name << ": " << st.message();
      EXPECT_EQ(p, c.want) << c.name;
    }
    // The same facts off capture: a path, never this refusal.
    RouteFacts off = c.facts;
    off.capturing = false;
    EXPECT_TRUE(DecidePath(c.choice, off, &p).ok()) << c.name;
  }
  // Host buffers: the capture flag is not asked for them (it stays false),
  // and set, it changes nothing: the host path does not touch the stream.
  RouteFacts host{false, true, false};
  host.capturing = true;
  Path p = Path::kNone;
  ASSERT_TRUE(DecidePath(BackendChoice::kAuto, host, &p).ok());
  EXPECT_EQ(p, Path::kHostMpi);
}

// The whole plan (DecideRoute): the path, then how route.cpp runs it, as a
// table of facts and the plan each must give.
TEST(RoutePlan, EveryChoiceAsATable) {
  enum Fact : unsigned {
    kDev = 1u << 0,        // device buffers (both)
    kHostDev = 1u << 1,    // one host, one device buffer (with kDev)
    kCcl = 1u << 2,        // a CCL of the buffers' device that takes the call
    kQueues = 1u << 3,     // the engine queues the device's calls
    kGrouped = 1u << 4,    // a Send/Recv inside a group
    kShm = 1u << 5,        // the segment takes the call
    kSmall = 1u << 6,      // small enough for the on-stream shm shape
    kHier = 1u << 7,       // hierarchical
    kOneRank = 1u << 8,    // a one-rank reduction
    kReadsDev = 1u << 9,   // MPI reads device memory
    kUniform = 1u << 10,   // a mixed job
    kMatching = 1u << 11,  // tag or any-source
    kCapturing = 1u << 12,
  };
  struct Case {
    const char *name;
    unsigned facts;
    Path path;
    RouteMode mode;
    // check_matching, uniform, stream_ordered, reserve_hier_scratch,
    // try_land, one_chunk_on_stream
    const char *flags;
  };
  using M = RouteMode;
  const Case cases[] = {
      {"host buffers", 0, Path::kHostMpi, M::kBlocking, "------"},
      {"host, mixed job", kUniform, Path::kHostMpi, M::kBlocking, "-u----"},
      {"host, tagged", kMatching, Path::kHostMpi, M::kBlocking, "m-----"},
      {"host, grouped", kGrouped, Path::kHostMpi, M::kGroupPost, "------"},
      {"host, grouped, mixed job", kGrouped | kUniform, Path::kHostMpi, M::kGroupPost,
       "------"},
      {"host, shm", kShm, Path::kShm, M::kBlocking, "------"},
      {"host, hier", kHier, Path::kHier, M::kBlocking, "------"},
      {"ccl", kDev | kCcl, Path::kCcl, M::kOnStream, "--o---"},
      {"ccl, queues", kDev | kCcl | kQueues, Path::kCcl, M::kOnStream, "--o---"},
      {"ccl, grouped", kDev | kCcl | kGrouped, Path::kCcl, M::kOnStream, "--o---"},
      {"ccl, tagged", kDev | kCcl | kMatching, Path::kCcl, M::kOnStream, "--o---"},
      {"ccl, capturing", kDev | kCcl | kCapturing, Path::kCcl, M::kOnStream, "--o---"},
      {"ccl before shm", kDev | kCcl | kShm, Path::kCcl, M::kOnStream, "--o---"},
      {"staged, blocking", kDev, Path::kStagedMpi, M::kBlocking, "------"},
      {"staged, queued", kDev | kQueues, Path::kStagedMpi, M::kQueued, "-----1"},
      {"staged, queued, mixed job", kDev | kQueues | kUniform, Path::kStagedMpi, M::kQueued,
       "-u----"},
      {"direct, queued", kDev | kQueues | kReadsDev, Path::kDirectMpi, M::kQueued, "------"},
      {"direct, blocking", kDev | kReadsDev, Path::kDirectMpi, M::kBlocking, "------"},
      {"staged, grouped, queues", kDev | kQueues | kGrouped, Path::kStagedMpi, M::kGroupPost,
       "------"},
      {"staged, tagged", kDev | kQueues | kMatching, Path::kStagedMpi, M::kQueued, "m----1"},
      {"shm, queued, small", kDev | kQueues | kShm | kSmall, Path::kShm, M::kQueued,
       "----l1"},
      {"shm, queued, large", kDev | kQueues | kShm, Path::kShm, M::kQueued, "----l-"},
      {"shm, blocking", kDev | kShm | kSmall, Path::kShm, M::kBlocking, "------"},
      // Send/Recv on a communicator without MPI: the segment matches tags
      // and any source itself (no MPI to check), grouped ones too.
      {"shm, tagged", kShm | kMatching, Path::kShm, M::kBlocking, "------"},
      {"shm, tagged, grouped", kShm | kMatching | kGrouped, Path::kShm, M::kGroupPost,
       "------"},
      {"shm, grouped, queues", kDev | kQueues | kShm | kGrouped, Path::kShm, M::kGroupPost,
       "------"},
      {"hier, queued", kDev | kQueues | kHier, Path::kHier, M::kQueued, "---h--"},
      {"hier, blocking", kDev | kHier, Path::kHier, M::kBlocking, "------"},
      {"one-rank copy", kDev | kOneRank, Path::kLocalCopy, M::kOnStream, "------"},
      {"one-rank copy, queues", kDev | kOneRank | kQueues, Path::kLocalCopy, M::kOnStream,
       "--o---"},
      {"one-rank copy, ccl", kDev | kOneRank | kCcl, Path::kLocalCopy, M::kOnStream,
       "--o---"},
      {"one-rank copy to host, ccl", kDev | kHostDev | kOneRank | kCcl, Path::kLocalCopy,
       M::kOnStream, "------"},
      {"one-rank copy, capturing", kDev | kOneRank | kCapturing, Path::kLocalCopy,
       M::kOnStream, "--o---"},
  };
  for (const Case &c : cases) {
    RouteFacts f;
    f.device_buffers = c.facts & kDev;
    f.host_and_device = c.facts & kHostDev;
    f.both_device = f.device_buffers && !f.host_and_device;
    f.has_ccl = c.facts & kCcl;
    f.queues = c.facts & kQueues;
    f.grouped = c.facts & kGrouped;
    f.shm = c.facts & kShm;
    f.fits_on_stream_shm = c.facts & kSmall;
    f.hierarchical = c.facts & kHier;
    f.one_rank_reduction = c.facts & kOneRank;
    f.mpi_reads_device = c.facts & kReadsDev;
    f.uniform_staging = c.facts & kUniform;
    f.needs_mpi_matching = c.facts & kMatching;
    f.capturing = c.facts & kCapturing;
    RoutePlan plan;
    const Status st = DecideRoute(BackendChoice::kAuto, f, &plan);
    ASSERT_TRUE(st.ok()) << c.name << ": " << st.message();
    EXPECT_EQ(plan.path, c.path) << c.name;
    EXPECT_EQ(plan.mode, c.mode) << c.name;
    const std::string flags = {plan.check_matching ? 'm' : '-', plan.uniform ? 'u' : '-',
                               plan.stream_ordered ? 'o' : '-',
                               plan.reserve_hier_scratch ? 'h' : '-',
                               plan.try_land ? 'l' : '-',
                               plan.one_chunk_on_stream ? '1' : '-'};
    EXPECT_EQ(flags, c.flags) << c.name;
  }
  // A refusal is the decision's too: no plan for device buffers on a
  // capturing stream off the CCL.
  RouteFacts f;
  f.device_buffers = f.both_device = f.queues = f.capturing = true;
  RoutePlan plan;
  EXPECT_EQ(DecideRoute(BackendChoice::kAuto, f, &plan).code(), infinicclInvalidUsage);
}

TEST(CclProvider, NoneWithoutADeviceOfItsKind) {
  // No GPU here (or no CCL in this build): nothing to bootstrap with, and the
  // reason says which. Only meaningful where no device is present.
  std::string why;
  CclProvider *p = FirstUsableCcl(&why);
  if (p != nullptr) GTEST_SKIP() << p->Name() << " is usable on this machine";
  EXPECT_FALSE(why.empty());
  EXPECT_NE(why.find("NCCL"), std::string::npos) << why;
  // Group hooks with no CCL communicator in the process: nothing to do.
  EXPECT_TRUE(CclGroupStart().ok());
  EXPECT_TRUE(CclGroupEnd().ok());
}

}  // namespace
}  // namespace infiniccl
