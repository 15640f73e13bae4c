// The public C API in a process that never calls infinicclInit (no MPI
// launch): error strings, version, and InvalidUsage with a last-error message
// naming the call for everything that needs an initialised library.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>
#include <infiniccl/infiniccl.h>

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "backend/ccl/ccl_provider.h"
#include "c_caller.h"

namespace {

std::string LastErrorOnFreshThread() {
  std::string out = "<not run>";
  std::thread([&] { out = infinicclGetLastError(nullptr); }).join();
  return out;
}

TEST(ErrorString, DistinctForEveryResultCode) {
  std::set<std::string> seen;
  for (int r = 0; r < infinicclNumResults; ++r) {
    const char *s = infinicclGetErrorString(static_cast<infinicclResult_t>(r));
    ASSERT_NE(s, nullptr) << r;
    EXPECT_GT(std::strlen(s), 0u) << r;
    EXPECT_TRUE(seen.insert(s).second) << r << ": \"" << s << "\" is not distinct";
  }
  EXPECT_EQ(seen.size(), 9u);
}

TEST(ErrorString, NeverNullForUnknownCodes) {
  for (int r : {9, 10, -1, 1000, -1000}) {
    const char *s = c_caller::CallAsC(&infinicclGetErrorString, r);
    ASSERT_NE(s, nullptr) << r;
    EXPECT_GT(std::strlen(s), 0u) << r;
    for (int known = 0; known < infinicclNumResults; ++known) {
      EXPECT_STRNE(s, infinicclGetErrorString(static_cast<infinicclResult_t>(known)))
          << r << " reads like known code " << known;
    }
  }
}

TEST(Version, WorksBeforeInit) {
  int version = -1;
  ASSERT_EQ(infinicclGetVersion(&version), infinicclSuccess);
  EXPECT_EQ(version, INFINICCL_VERSION_CODE);
  EXPECT_EQ(version, 100);  // 0.1.0
}

TEST(Version, NullPointerIsInvalidArgument) {
  std::string message;
  infinicclResult_t r = infinicclSuccess;
  std::thread([&] {
    r = infinicclGetVersion(nullptr);
    message = infinicclGetLastError(nullptr);
  }).join();
  EXPECT_EQ(r, infinicclInvalidArgument);
  EXPECT_EQ(message.rfind("infinicclGetVersion: ", 0), 0u) << message;
  EXPECT_NE(message.find("version"), std::string::npos) << message;
}

// The list this build must give: from the INFINICCL_WITH_<VENDOR> definitions
// CMake passes for the runtimes it compiles in, in the registry's order.
std::string ExpectedRuntimes() {
  std::string s = "cpu";
#ifdef INFINICCL_WITH_NVIDIA
  s += ",cuda";
#endif
#ifdef INFINICCL_WITH_METAX
  s += ",metax";
#endif
#ifdef INFINICCL_WITH_ILUVATAR
  s += ",iluvatar";
#endif
#ifdef INFINICCL_WITH_MOORE
  s += ",moore";
#endif
#ifdef INFINICCL_WITH_HIP
  s += ",hip";
#endif
#ifdef INFINICCL_WITH_ASCEND
  s += ",ascend";
#endif
#ifdef INFINICCL_WITH_CAMBRICON
  s += ",cambricon";
#endif
  return s + ",sim";
}

TEST(DeviceRuntimes, NamesTheRuntimesBuiltBeforeInit) {
  char names[INFINICCL_DEVICE_RUNTIMES_BYTES];
  std::memset(names, 'x', sizeof names);
  ASSERT_EQ(infinicclGetDeviceRuntimes(names, sizeof names), infinicclSuccess);
  EXPECT_EQ(std::string(names), ExpectedRuntimes());
  const std::string list = std::string(",") + names + ",";
  EXPECT_NE(list.find(",cpu,"), std::string::npos) << names;
  EXPECT_NE(list.find(",sim,"), std::string::npos) << names;
#ifndef INFINICCL_WITH_NVIDIA
  EXPECT_EQ(list.find(",cuda,"), std::string::npos) << names;
#endif
  // Exactly the size of the list with its NUL is enough.
  std::vector<char> exact(ExpectedRuntimes().size() + 1, 'x');
  ASSERT_EQ(infinicclGetDeviceRuntimes(exact.data(), exact.size()), infinicclSuccess);
  EXPECT_EQ(std::string(exact.data()), ExpectedRuntimes());
}

TEST(DeviceRuntimes, BadArgumentsAreInvalidArgumentWithAMessage) {
  struct Case {
    char *names;
    size_t bytes;
    const char *says;
  };
  char small[4] = {'a', 'b', 'c', '\0'};
  const std::string needs = std::to_string(ExpectedRuntimes().size() + 1);
  for (const Case &c : {Case{nullptr, 64, "names is NULL"}, Case{small, sizeof small, "needs"},
                        Case{small, 0, "needs"}}) {
    std::string message;
    infinicclResult_t r = infinicclSuccess;
    std::thread([&] {
      r = infinicclGetDeviceRuntimes(c.names, c.bytes);
      message = infinicclGetLastError(nullptr);
    }).join();
    EXPECT_EQ(r, infinicclInvalidArgument) << c.says;
    EXPECT_EQ(message.rfind("infinicclGetDeviceRuntimes: ", 0), 0u) << message;
    EXPECT_NE(message.find(c.says), std::string::npos) << message;
    if (c.names != nullptr) {
      EXPECT_NE(message.find("needs " + needs), std::string::npos) << message;
    }
  }
  EXPECT_STREQ(small, "abc");  // left as it was
}

TEST(LastError, EmptyOnAThreadWithoutFailures) {
  EXPECT_EQ(LastErrorOnFreshThread(), "");
}

// Every entry point that needs infinicclInit, called before it. Each runs on
// its own thread so that the message read back can only come from it.
TEST(BeforeInit, EveryCallReturnsInvalidUsageAndNamesItself) {
  alignas(8) char buf[64] = {};
  infinicclComm_t fake_comm = reinterpret_cast<infinicclComm_t>(0x1234);
  infinicclResult_t async = infinicclSuccess;
  struct Call {
    const char *name;
    std::function<infinicclResult_t()> fn;
  };
  int out = -7;
  char text[64];
  infinicclComm_t comm_out = fake_comm;
  const std::vector<Call> calls = {
      {"infinicclAllReduce",
       [&] {
         return infinicclAllReduce(buf, buf + 32, 2, infinicclFloat, infinicclSum,
                                   nullptr, nullptr);
       }},
      {"infinicclBroadcast",
       [&] {
         return infinicclBroadcast(buf, buf + 32, 2, infinicclFloat, 0, nullptr, nullptr);
       }},
      {"infinicclBcast",
       [&] { return infinicclBcast(buf, 2, infinicclFloat, 0, fake_comm, nullptr); }},
      {"infinicclReduce",
       [&] {
         return infinicclReduce(buf, buf + 32, 2, infinicclFloat, infinicclMax, 0,
                                nullptr, nullptr);
       }},
      {"infinicclAllGather",
       [&] {
         return infinicclAllGather(buf, buf + 32, 2, infinicclInt8, nullptr, nullptr);
       }},
      {"infinicclGather",
       [&] {
         return infinicclGather(buf, buf + 32, 2, infinicclInt8, 0, nullptr, nullptr);
       }},
      {"infinicclScatter",
       [&] {
         return infinicclScatter(buf, buf + 32, 2, infinicclInt8, 0, nullptr, nullptr);
       }},
      {"infinicclReduceScatter",
       [&] {
         return infinicclReduceScatter(buf, buf + 32, 2, infinicclHalf, infinicclSum,
                                       nullptr, nullptr);
       }},
      {"infinicclAllToAll",
       [&] {
         return infinicclAllToAll(buf, buf + 32, 2, infinicclDouble, nullptr, nullptr);
       }},
      {"infinicclSend",
       [&] { return infinicclSend(buf, 2, infinicclInt, 1, nullptr, nullptr); }},
      {"infinicclRecv",
       [&] { return infinicclRecv(buf, 2, infinicclInt, 1, nullptr, nullptr); }},
      {"infinicclSendTagged",
       [&] { return infinicclSendTagged(buf, 2, infinicclInt, 1, -5, nullptr, nullptr); }},
      {"infinicclRecvTagged",
       [&] {
         return infinicclRecvTagged(buf, 2, infinicclInt, INFINICCL_ANY_SOURCE, 3, &out,
                                    nullptr, nullptr);
       }},
      // Valid-looking arguments everywhere else: only the missing Init is wrong.
      {"infinicclAllReduce",
       [&] {
         return infinicclAllReduce(buf, buf, 0, infinicclFloat, infinicclAvg, fake_comm,
                                   nullptr);
       }},
      {"infinicclCommInitAll",
       [&] { return infinicclCommInitAll(&comm_out, 0, nullptr); }},
      {"infinicclCommInitMpi", [&] { return infinicclCommInitMpi(&comm_out, 0); }},
      {"infinicclCommDestroy", [&] { return infinicclCommDestroy(fake_comm); }},
      {"infinicclCommCount", [&] { return infinicclCommCount(fake_comm, &out); }},
      {"infinicclCommUserRank", [&] { return infinicclCommUserRank(fake_comm, &out); }},
      {"infinicclCommGetAsyncError",
       [&] { return infinicclCommGetAsyncError(fake_comm, &async); }},
      {"infinicclCommDescribeWait",
       [&] { return infinicclCommDescribeWait(fake_comm, text, sizeof text); }},
      {"infinicclCommRevoke", [&] { return infinicclCommRevoke(fake_comm, 0); }},
      {"infinicclCommGetFailedRanks",
       [&] { return infinicclCommGetFailedRanks(fake_comm, &out, &out); }},
      {"infinicclCommShrink",
       [&] { return infinicclCommShrink(fake_comm, &out, 1, &comm_out, 0); }},
      {"infinicclCommGrow",
       [&] { return infinicclCommGrow(fake_comm, 1, "true", nullptr, &comm_out); }},
      {"infinicclCommGrow", [&] { return infinicclCommGrow(nullptr, 0, nullptr, nullptr, &comm_out); }},
      {"infinicclGetRank", [&] { return infinicclGetRank(&out); }},
      {"infinicclGetSize", [&] { return infinicclGetSize(&out); }},
      {"infinicclFinalize", [&] { return infinicclFinalize(); }},
  };
  for (const Call &c : calls) {
    infinicclResult_t r = infinicclSuccess;
    std::string thread_error, comm_error;
    std::thread([&] {
      r = c.fn();
      thread_error = infinicclGetLastError(nullptr);
    }).join();
    EXPECT_EQ(r, infinicclInvalidUsage) << c.name << ": " << thread_error;
    EXPECT_EQ(thread_error.rfind(std::string(c.name) + ": ", 0), 0u)
        << c.name << ": \"" << thread_error << "\"";
    EXPECT_GT(thread_error.size(), std::strlen(c.name) + 2) << c.name;
  }
  EXPECT_EQ(out, -7) << "an output was written by a failed call";
  for (char c : buf) EXPECT_EQ(c, 0) << "a failed call wrote to a buffer";
}

TEST(BeforeInit, LastErrorIsPerThreadAndOnTheCallingThread) {
  infinicclComm_t comm = nullptr;
  ASSERT_EQ(infinicclCommInitAll(&comm, 0, nullptr), infinicclInvalidUsage);
  const std::string here = infinicclGetLastError(nullptr);
  EXPECT_EQ(here.rfind("infinicclCommInitAll: ", 0), 0u) << here;
  EXPECT_EQ(LastErrorOnFreshThread(), "");
  // A successful call leaves the message of the last failure in place.
  int version = 0;
  ASSERT_EQ(infinicclGetVersion(&version), infinicclSuccess);
  EXPECT_EQ(std::string(infinicclGetLastError(nullptr)), here);
  // The next failure replaces it.
  ASSERT_EQ(infinicclFinalize(), infinicclInvalidUsage);
  EXPECT_EQ(std::string(infinicclGetLastError(nullptr)).rfind("infinicclFinalize: ", 0),
            0u);
}

// Rank `rank` of 2 through `id`: a host AllReduce, AllGather and
// Broadcast of exact small integers, then Destroy; the first failure's code.
int NodeRank(const infinicclUniqueId &id, int rank, std::string *msg) {
  infinicclComm_t c = nullptr;
  infinicclResult_t r = infinicclCommInitRank(&c, 2, id, rank);
  if (r != infinicclSuccess) {
    *msg = infinicclGetLastError(nullptr);
    return static_cast<int>(r);
  }
  int32_t in[3] = {rank + 1, 10 * (rank + 1), -7}, sum[3] = {0, 0, 0};
  int32_t gathered[6] = {0}, b[2] = {rank == 1 ? 5 : 0, rank == 1 ? -9 : 0};
  const auto fail = [&](infinicclResult_t rr) {
    *msg = infinicclGetLastError(c);
    return static_cast<int>(rr);
  };
  if ((r = infinicclAllReduce(in, sum, 3, infinicclInt32, infinicclSum, c, nullptr)) != 0)
    return fail(r);
  if ((r = infinicclAllGather(in, gathered, 3, infinicclInt32, c, nullptr)) != 0) return fail(r);
  if ((r = infinicclBroadcast(b, b, 2, infinicclInt32, 1, c, nullptr)) != 0) return fail(r);
  const int32_t want_gathered[6] = {1, 10, -7, 2, 20, -7};
  if (sum[0] != 3 || sum[1] != 30 || sum[2] != -14 ||
      std::memcmp(gathered, want_gathered, sizeof gathered) != 0 || b[0] != 5 || b[1] != -9) {
    *msg = "wrong results";
    return 100;
  }
  // Send/Recv through the same shared memory: blocking (rank 0 first),
  // then both ways in one group, receives posted first.
  int32_t got[3] = {0, 0, 0};
  r = rank == 0 ? infinicclSend(in, 3, infinicclInt32, 1, c, nullptr)
                : infinicclRecv(got, 3, infinicclInt32, 0, c, nullptr);
  if (r != 0) return fail(r);
  if (rank == 1 && (got[0] != 1 || got[1] != 10 || got[2] != -7)) {
    *msg = "Recv: wrong data";
    return 101;
  }
  if ((r = infinicclGroupStart()) != 0) return fail(r);
  if ((r = infinicclRecv(got, 3, infinicclInt32, 1 - rank, c, nullptr)) != 0) return fail(r);
  if ((r = infinicclSend(in, 3, infinicclInt32, 1 - rank, c, nullptr)) != 0) return fail(r);
  if ((r = infinicclGroupEnd()) != 0) return fail(r);
  if (got[0] != 2 - rank || got[1] != 10 * (2 - rank) || got[2] != -7) {
    *msg = "grouped Recv: wrong data";
    return 102;
  }
  if ((r = infinicclCommDestroy(c)) != 0) return fail(r);
  return 0;
}

TEST(BeforeInit, UniqueIdWithoutMpiMakesANodeCommunicator) {
  // No MPI, no infinicclInit, two processes of this node: the ranks meet
  // through the id and every call goes through the node's shared memory.
  infinicclUniqueId id;
  ASSERT_EQ(infinicclGetUniqueId(&id), infinicclSuccess) << infinicclGetLastError(nullptr);
  const pid_t child = fork();
  if (child == 0) {
    std::string msg;
    const int rc = NodeRank(id, 1, &msg);
    if (rc != 0) std::fprintf(stderr, "rank 1: %d %s\n", rc, msg.c_str());
    _exit(rc);
  }
  std::string msg;
  EXPECT_EQ(NodeRank(id, 0, &msg), 0) << msg;
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  int initialised = 1;
  MPI_Initialized(&initialised);
  EXPECT_EQ(initialised, 0) << "MPI was initialised";
}

TEST(BeforeInit, UniqueIdArgumentsAreChecked) {
  infinicclUniqueId id;
  std::memset(&id, 0, sizeof id);
  infinicclComm_t comm = nullptr;
  EXPECT_EQ(infinicclCommInitRank(&comm, 2, id, 0), infinicclInvalidArgument);
  EXPECT_NE(std::string(infinicclGetLastError(nullptr)).find("infinicclGetUniqueId"),
            std::string::npos);
  EXPECT_EQ(infinicclCommInitRank(&comm, 0, id, 0), infinicclInvalidArgument);
  EXPECT_EQ(infinicclCommInitRank(nullptr, 2, id, 0), infinicclInvalidArgument);
  EXPECT_EQ(infinicclGetUniqueId(nullptr), infinicclInvalidArgument);
}

}  // namespace
