// Group calls (infinicclGroupStart / infinicclGroupEnd) on the MPI path.
//
// Modes (argv[1]):
//   host - the all-send-first ring with 8 MiB messages in several dtypes
//          (with blocking Send/Recv it would deadlock above the eager limit;
//          the test never runs it that way), an all-to-all by Send/Recv
//          pairs including the rank itself, nested groups, a collective and
//          Sends/Recvs in one group, a bad call inside a group, GroupEnd
//          without Start, an error at completion (a Recv shorter than its
//          message), CommDestroy and Finalize refused inside a group, and
//          zero staging copies for host buffers.
//   host-serialized - the same, with MPI started by the test at
//          MPI_THREAD_SERIALIZED, so the library's serialised path (posting
//          under its lock, polled waits at GroupEnd) is the one exercised.
//   sim  - the same ring on EMULATED device buffers (staged): exact values
//          and exact staging counters (one D2H copy per Send, one H2D per
//          Recv, done by GroupEnd).
//   sim-direct - run with INFINICCL_MPI_DEVICE_DIRECT=1: the device buffers
//          go to MPI as they are, zero staging copies.
// Expected values come from test_util.h (independent of the library).
#include <mpi.h>

#include <cstring>
#include <string>
#include <vector>

#include "device_mirror.h"

using namespace itest;

namespace {

constexpr size_t kRingBytes = size_t{8} << 20;
int g_n = 0;

// Every rank sends to its right before it receives from its left, 8 MiB.
void TestRing(infinicclComm_t comm, int rank) {
  const int right = (rank + 1) % g_n, left = (rank + g_n - 1) % g_n;
  const infinicclStagingStats before = StagingStats();
  for (infinicclDataType_t dt :
       {infinicclInt32, infinicclFloat64, infinicclBFloat16, infinicclUInt8}) {
    const size_t count = kRingBytes / Info(dt).size;
    const std::vector<unsigned char> send = Pattern(dt, 11, rank, count);
    std::vector<unsigned char> recv(send.size(), 0xee);
    CHECK_RC(infinicclGroupStart(), infinicclSuccess);
    CHECK_RC(infinicclSend(send.data(), count, dt, right, comm, nullptr),
             infinicclSuccess);
    CHECK_RC(infinicclRecv(recv.data(), count, dt, left, comm, nullptr),
             infinicclSuccess);
    CHECK_RC(infinicclGroupEnd(), infinicclSuccess);
    const size_t wrong = Wrong(dt, 11, left, recv.data(), count);
    CHECK(wrong == 0, "ring %s: %zu of %zu elements wrong", Info(dt).name, wrong, count);
  }
  // Host buffers: zero copies, nothing staged.
  const infinicclStagingStats after = StagingStats();
  CHECK(after.staged_calls == before.staged_calls &&
            after.d2h_copies == before.d2h_copies &&
            after.h2d_copies == before.h2d_copies &&
            after.allocations == before.allocations,
        "host ring staged something");
}

// All-to-all by Send/Recv pairs, the rank itself included, receives posted
// in the reverse order of the sends.
void TestAllToAll(infinicclComm_t comm, int rank) {
  const infinicclDataType_t dt = infinicclInt64;
  const size_t count = 4099;
  std::vector<std::vector<unsigned char>> send(g_n), recv(g_n);
  CHECK_RC(infinicclGroupStart(), infinicclSuccess);
  for (int p = 0; p < g_n; ++p) {
    send[p] = Pattern(dt, 100 + p, rank, count);  // seed names the destination
    CHECK_RC(infinicclSend(send[p].data(), count, dt, p, comm, nullptr),
             infinicclSuccess);
  }
  for (int p = g_n - 1; p >= 0; --p) {
    recv[p].assign(count * 8, 0xee);
    CHECK_RC(infinicclRecv(recv[p].data(), count, dt, p, comm, nullptr),
             infinicclSuccess);
  }
  CHECK_RC(infinicclGroupEnd(), infinicclSuccess);
  for (int p = 0; p < g_n; ++p) {
    CHECK(Wrong(dt, 100 + rank, p, recv[p].data(), count) == 0, "alltoall block from %d",
          p);
  }
}

// Nested groups: only the outermost End completes; a collective inside the
// group runs in call order while the ring's 8 MiB Send is pending.
void TestNestedWithCollective(infinicclComm_t comm, int rank) {
  const int right = (rank + 1) % g_n, left = (rank + g_n - 1) % g_n;
  const infinicclDataType_t dt = infinicclFloat32;
  const size_t count = kRingBytes / 4;
  const std::vector<unsigned char> send = Pattern(dt, 7, rank, count);
  std::vector<unsigned char> recv(send.size(), 0xee);
  int sum = 0;
  const int mine = rank + 1;
  CHECK_RC(infinicclGroupStart(), infinicclSuccess);
  CHECK_RC(infinicclGroupStart(), infinicclSuccess);
  CHECK_RC(infinicclSend(send.data(), count, dt, right, comm, nullptr), infinicclSuccess);
  CHECK_RC(infinicclGroupEnd(), infinicclSuccess);  // inner: nothing completes yet
  CHECK_RC(
      infinicclAllReduce(&mine, &sum, 1, infinicclInt32, infinicclSum, comm, nullptr),
      infinicclSuccess);
  CHECK(sum == g_n * (g_n + 1) / 2, "AllReduce in a group: %d", sum);
  CHECK_RC(infinicclGroupStart(), infinicclSuccess);
  CHECK_RC(infinicclRecv(recv.data(), count, dt, left, comm, nullptr), infinicclSuccess);
  CHECK_RC(infinicclGroupEnd(), infinicclSuccess);
  CHECK_RC(infinicclGroupEnd(), infinicclSuccess);  // outermost: completes both
  CHECK(Wrong(dt, 7, left, recv.data(), count) == 0, "nested ring values");
}

// A bad call inside a group returns InvalidArgument and is left out; the
// valid operations still complete at GroupEnd, which reports the failure as
// NCCL does; the next group is clean.
void TestErrorInsideGroup(infinicclComm_t comm, int rank) {
  const int right = (rank + 1) % g_n, left = (rank + g_n - 1) % g_n;
  const infinicclDataType_t dt = infinicclInt16;
  const size_t count = 1000;
  const std::vector<unsigned char> send = Pattern(dt, 3, rank, count);
  std::vector<unsigned char> recv(send.size(), 0xee);
  CHECK_RC(infinicclGroupStart(), infinicclSuccess);
  CHECK_RC(infinicclSend(send.data(), count, dt, g_n, comm, nullptr),
           infinicclInvalidArgument);
  CHECK(std::strstr(SafeLastError(), "peer") != nullptr, "message: %s", SafeLastError());
  CHECK_RC(infinicclSend(send.data(), count, dt, right, comm, nullptr), infinicclSuccess);
  CHECK_RC(infinicclRecv(recv.data(), count, dt, left, comm, nullptr), infinicclSuccess);
  CHECK_RC(infinicclGroupEnd(), infinicclInvalidArgument);
  const char *msg = infinicclGetLastError(nullptr);
  CHECK(NamesCall(msg, "GroupEnd") && std::strstr(msg, "1 call in this group failed") &&
            NamesCall(msg, "Send"),
        "GroupEnd message: %s", msg);
  CHECK(Wrong(dt, 3, left, recv.data(), count) == 0, "valid ops of a failed group");

  std::vector<unsigned char> again(send.size(), 0xee);
  CHECK_RC(infinicclGroupStart(), infinicclSuccess);
  CHECK_RC(infinicclRecv(again.data(), count, dt, left, comm, nullptr), infinicclSuccess);
  CHECK_RC(infinicclSend(send.data(), count, dt, right, comm, nullptr), infinicclSuccess);
  CHECK_RC(infinicclGroupEnd(), infinicclSuccess);
  CHECK(Wrong(dt, 3, left, again.data(), count) == 0, "group after a failed one");
}

void TestUsageErrors(int rank) {
  CHECK_RC(infinicclGroupEnd(), infinicclInvalidUsage);
  CHECK(NamesCall(SafeLastError(), "GroupEnd") &&
            std::strstr(SafeLastError(), "GroupStart"),
        "message: %s", SafeLastError());
  // Outside a group a rank cannot send to itself (it would block forever).
  int x = 1;
  infinicclComm_t comm = nullptr;
  CHECK_RC(infinicclCommInitAll(&comm, 0, nullptr), infinicclSuccess);
  CHECK_RC(infinicclSend(&x, 1, infinicclInt32, rank, comm, nullptr),
           infinicclInvalidArgument);
  // CommDestroy of a communicator with pending group operations.
  const int right = (rank + 1) % g_n, left = (rank + g_n - 1) % g_n;
  int in = 0, out = 40 + rank;
  CHECK_RC(infinicclGroupStart(), infinicclSuccess);
  CHECK_RC(infinicclSend(&out, 1, infinicclInt32, right, comm, nullptr),
           infinicclSuccess);
  CHECK_RC(infinicclRecv(&in, 1, infinicclInt32, left, comm, nullptr), infinicclSuccess);
  CHECK_RC(infinicclCommDestroy(comm), infinicclInvalidUsage);
  CHECK_RC(infinicclFinalize(), infinicclInvalidUsage);
  CHECK_RC(infinicclGroupEnd(), infinicclSuccess);
  CHECK(in == 40 + left, "pending ops after refused destroy: %d", in);
  CHECK_RC(infinicclCommDestroy(comm), infinicclSuccess);
}

// Rank r sends 2n to its right, which receives only n: MPI truncates, and
// GroupEnd returns the error with a message for GetLastError(comm).
void TestCompletionError(infinicclComm_t comm, int rank) {
  const int right = (rank + 1) % g_n, left = (rank + g_n - 1) % g_n;
  std::vector<int> send(64, rank), recv(32, -1);
  CHECK_RC(infinicclGroupStart(), infinicclSuccess);
  CHECK_RC(infinicclSend(send.data(), 64, infinicclInt32, right, comm, nullptr),
           infinicclSuccess);
  CHECK_RC(infinicclRecv(recv.data(), 32, infinicclInt32, left, comm, nullptr),
           infinicclSuccess);
  const infinicclResult_t r = infinicclGroupEnd();
  CHECK(r == infinicclRemoteError || r == infinicclSystemError, "truncation: %s",
        ResultName(r));
  const char *msg = infinicclGetLastError(comm);
  CHECK(std::strstr(msg, "completing Recv of 32 elements") != nullptr &&
            NamesCall(msg, "GroupEnd"),
        "comm message: %s", msg);
  // The communicator stays usable.
  int one = 1, n = 0;
  CHECK_RC(infinicclAllReduce(&one, &n, 1, infinicclInt32, infinicclSum, comm, nullptr),
           infinicclSuccess);
  CHECK(n == g_n);
}

// The ring on emulated device buffers, staged (or direct).
void TestSimRing(infinicclComm_t comm, int rank, bool direct) {
  const int right = (rank + 1) % g_n, left = (rank + g_n - 1) % g_n;
  for (infinicclDataType_t dt : {infinicclInt32, infinicclFloat16}) {
    const size_t count = kRingBytes / Info(dt).size;
    const std::vector<unsigned char> send = Pattern(dt, 5, rank, count);
    DeviceBuffer dsend(kRingBytes), drecv(kRingBytes);
    void *stream = nullptr;
    CHECK(g_sim->StreamCreate(&stream).ok());
    // The upload is queued on the stream the Send names: staging must wait for it.
    dsend.UploadAsync(send, stream);
    const infinicclStagingStats before = StagingStats();
    CHECK_RC(infinicclGroupStart(), infinicclSuccess);
    CHECK_RC(infinicclSend(dsend.ptr, count, dt, right, comm, stream), infinicclSuccess);
    CHECK_RC(infinicclRecv(drecv.ptr, count, dt, left, comm, stream), infinicclSuccess);
    CHECK_RC(infinicclGroupEnd(), infinicclSuccess);
    // As for NCCL: done once the stream reaches GroupEnd (the progress
    // engine queues the group as one operation, test_async checks that).
    CHECK(g_sim->StreamSynchronize(stream).ok());
    const infinicclStagingStats after = StagingStats();
    CHECK(Wrong(dt, 5, left, drecv.Download().data(), count) == 0, "sim ring %s",
          Info(dt).name);
    const unsigned long long staged = direct ? 0 : 2, copied = direct ? 0 : 1;
    CHECK(after.staged_calls - before.staged_calls == staged &&
              after.pipelined_calls == before.pipelined_calls &&
              after.direct_calls - before.direct_calls == (direct ? 2 : 0),
          "sim ring calls: staged +%llu, direct +%llu",
          after.staged_calls - before.staged_calls,
          after.direct_calls - before.direct_calls);
    CHECK(after.d2h_copies - before.d2h_copies == copied &&
              after.d2h_bytes - before.d2h_bytes == copied * kRingBytes &&
              after.h2d_copies - before.h2d_copies == copied &&
              after.h2d_bytes - before.h2d_bytes == copied * kRingBytes,
          "sim ring copies: d2h +%llu (%llu B), h2d +%llu (%llu B)",
          after.d2h_copies - before.d2h_copies, after.d2h_bytes - before.d2h_bytes,
          after.h2d_copies - before.h2d_copies, after.h2d_bytes - before.h2d_bytes);
    g_sim->StreamDestroy(stream);
  }
}

}  // namespace

int main(int argc, char **argv) {
  const std::string mode = argc > 1 ? argv[1] : "host";
  const bool own_mpi = mode == "host-serialized";
  if (own_mpi) {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  }
  if (infinicclInit(&argc, &argv) != infinicclSuccess) return 2;
  if (mode == "sim" || mode == "sim-direct") {
    EnableSim();
  }
  infinicclComm_t comm = nullptr;
  if (infinicclCommInitAll(&comm, 0, nullptr) != infinicclSuccess) return 2;
  int rank = 0;
  infinicclCommUserRank(comm, &rank);
  infinicclCommCount(comm, &g_n);
  g_rank = rank;

  if (g_sim != nullptr) {
    TestSimRing(comm, rank, mode == "sim-direct");
  } else {
    TestRing(comm, rank);
    TestAllToAll(comm, rank);
    TestNestedWithCollective(comm, rank);
    TestErrorInsideGroup(comm, rank);
    TestUsageErrors(rank);
    TestCompletionError(comm, rank);
  }
  CHECK_RC(infinicclCommDestroy(comm), infinicclSuccess);
  const long total = TotalFailures();
  if (rank == 0) std::printf("test_group %s: %ld failures\n", mode.c_str(), total);
  if (infinicclFinalize() != infinicclSuccess) return 1;
  if (own_mpi) MPI_Finalize();
  return total == 0 ? 0 : 1;
}
