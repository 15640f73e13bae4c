// The shared-memory transport's contract with ranks that disagree, leave or
// fork (INFINICCL_SHM=1, INFINICCL_CHECK=0: the segment's own checks, not
// the MPI cross-check).
//
//   mismatch  each rank's call differs from the others' in one field: the
//             count (one chunk and several), the operation (AllReduce on
//             rank 0, Broadcast elsewhere), the root (each rank its own) or
//             the dtype. Every rank gets InvalidUsage naming the field and
//             the ranks with each value, its receive buffer untouched; the
//             AllReduce after each is exact in several dtypes, one chunk
//             and several. The same for AllGather, ReduceScatter,
//             Broadcast, Gather, Scatter and AllToAll (count; Scatter's
//             root too). Three rounds in a row.
//   abort     the last rank calls infinicclCommAbort while the others wait
//             for it in an AllReduce: they get RemoteError naming it well
//             within a second, destroy their communicator, and a new one
//             gives exact sums on every rank.
//   destroy   the same with infinicclCommDestroy.
//   settings  INFINICCL_SHM or INFINICCL_SHM_MAX_BYTES unlike on the last
//             rank: infinicclCommInitAll fails with InvalidUsage naming the
//             setting and each rank's value; INFINICCL_ASYNC unlike is
//             accepted; alike again, the communicator is made and exact.
//   fork      a child of fork() calling on its parent's communicator gets
//             InvalidUsage; the parents' next calls are exact.
//   fork_device  the same on EMULATED device buffers (the call queued to
//             the progress engine in the parent): the child's AllReduce of
//             device buffers and its destroy are refused, the parents'
//             next device AllReduces (int32 and float32, one chunk and
//             several) are exact, and so are their host ones.
#include <mpi.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/config.h"
#include "device_mirror.h"

using namespace itest;

namespace {

int g_n = 1;
int g_last = 0;

// Every rank but the last, as the library lists them ("0", "0,1", "0-2").
std::string Others() {
  if (g_n == 2) return "0";
  if (g_n == 3) return "0,1";
  return "0-" + std::to_string(g_n - 2);
}

bool Says(const char *msg, const std::string &what) {
  return msg != nullptr && std::strstr(msg, what.c_str()) != nullptr;
}

// An AllReduce of small integers ((rank + 1) * (i % 5 + 1)) whose sums every
// dtype holds exactly.
void ExpectExact(infinicclComm_t comm, infinicclDataType_t dt, size_t count,
                 const char *after) {
  const size_t elem = Info(dt).size;
  std::vector<unsigned char> send(count * elem), recv(count * elem, 0xee);
  for (size_t i = 0; i < count; ++i) Encode(dt, send.data(), i, (g_rank + 1) * (i % 5 + 1.0));
  CHECK_RC(infinicclAllReduce(send.data(), recv.data(), count, dt, infinicclSum, comm, nullptr),
           infinicclSuccess);
  size_t wrong = 0, first = 0;
  for (size_t i = 0; i < count; ++i) {
    const double want = g_n * (g_n + 1) / 2.0 * (i % 5 + 1.0);
    if (Decode(dt, recv.data(), i) != want && wrong++ == 0) first = i;
  }
  CHECK(wrong == 0, "after %s: AllReduce %s x %zu: %zu wrong, first [%zu] = %g", after,
        Info(dt).name, count, wrong, first, wrong ? Decode(dt, recv.data(), first) : 0.0);
}

void ExpectAllExact(infinicclComm_t comm, const char *after) {
  for (infinicclDataType_t dt : {infinicclInt8, infinicclUInt8, infinicclInt32, infinicclInt64,
                                 infinicclFloat16, infinicclBFloat16, infinicclFloat32,
                                 infinicclFloat64}) {
    ExpectExact(comm, dt, 1000, after);
  }
  ExpectExact(comm, infinicclFloat32, 300000, after);  // two chunks of 1 MiB
}

// `rc` refused on this rank with `words` in the message.
void ExpectRefused(const char *what, infinicclResult_t rc, const std::string &words) {
  CHECK(rc == infinicclInvalidUsage, "%s: returned %d (%s)", what, int(rc), SafeLastError());
  CHECK(Says(SafeLastError(), words), "%s: expected '%s' in '%s'", what, words.c_str(),
        SafeLastError());
}

int Mismatch() {
  infinicclComm_t comm = nullptr;
  CHECK_RC(infinicclCommInitAll(&comm, 0, nullptr), infinicclSuccess);
  ExpectAllExact(comm, "creation");
  const bool last = g_rank == g_last;
  const std::string L = std::to_string(g_last);
  for (int round = 0; round < 3; ++round) {
    // Count, one chunk: nothing is written to the receive buffer.
    std::vector<int32_t> send(8, g_rank + 1), recv(8, -7);
    infinicclResult_t rc = infinicclAllReduce(send.data(), recv.data(), last ? 8 : 4,
                                              infinicclInt32, infinicclSum, comm, nullptr);
    ExpectRefused("count", rc,
                  "count differs: rank " + Others() + " count=4, rank " + L + " count=8");
    CHECK(Says(SafeLastError(), "shared memory"), "'%s'", SafeLastError());
    for (int32_t v : recv) CHECK(v == -7, "count: the refused call wrote %d", v);
    ExpectAllExact(comm, "a count mismatch");

    // Count, several chunks on one side (2 and 3 chunks of 1 MiB).
    std::vector<float> big(600000, 1.0f), big_out(600000, -7.0f);
    rc = infinicclAllReduce(big.data(), big_out.data(), last ? 600000 : 300000,
                            infinicclFloat32, infinicclSum, comm, nullptr);
    ExpectRefused("count, several chunks", rc,
                  "count differs: rank " + Others() + " count=300000, rank " + L +
                      " count=600000");
    CHECK(big_out[0] == -7.0f && big_out[599999] == -7.0f, "several chunks: written");
    ExpectAllExact(comm, "a count mismatch of several chunks");

    // Operation: AllReduce on rank 0, Broadcast from rank 0 elsewhere.
    std::fill(recv.begin(), recv.end(), -7);
    rc = g_rank == 0 ? infinicclAllReduce(send.data(), recv.data(), 4, infinicclInt32,
                                          infinicclSum, comm, nullptr)
                     : infinicclBroadcast(send.data(), recv.data(), 4, infinicclInt32, 0,
                                          comm, nullptr);
    ExpectRefused("operation", rc, "operation differs: rank 0 AllReduce #");
    const std::string others_bcast =
        ", rank " + (g_n == 2 ? std::string("1") : g_n == 3 ? "1,2" : "1-" + L) +
        " Broadcast #";
    CHECK(Says(SafeLastError(), others_bcast), "expected '%s' in '%s'", others_bcast.c_str(),
          SafeLastError());
    for (int32_t v : recv) CHECK(v == -7, "operation: the refused call wrote %d", v);
    ExpectAllExact(comm, "an operation mismatch");

    // Root: every rank names itself.
    std::fill(recv.begin(), recv.end(), -7);
    rc = infinicclReduce(send.data(), recv.data(), 4, infinicclInt32, infinicclSum, g_rank,
                         comm, nullptr);
    std::string roots = "root differs:";
    for (int r = 0; r < g_n; ++r) {
      roots += (r ? ", rank " : " rank ") + std::to_string(r) + " root=" + std::to_string(r);
    }
    ExpectRefused("root", rc, roots);
    for (int32_t v : recv) CHECK(v == -7, "root: the refused call wrote %d", v);
    ExpectAllExact(comm, "a root mismatch");

    // Datatype.
    std::fill(recv.begin(), recv.end(), -7);
    rc = infinicclAllReduce(send.data(), recv.data(), 4, last ? infinicclFloat32 : infinicclInt32,
                            infinicclSum, comm, nullptr);
    ExpectRefused("datatype", rc, "datatype differs: rank " + Others() + " datatype=");
    for (int32_t v : recv) CHECK(v == -7, "datatype: the refused call wrote %d", v);
    ExpectAllExact(comm, "a datatype mismatch");

    // The same on AllGather, ReduceScatter and Broadcast of unlike counts,
    // then each exact.
    std::vector<int32_t> gathered(8 * g_n, -7);
    rc = infinicclAllGather(send.data(), gathered.data(), last ? 2 : 1, infinicclInt32, comm,
                            nullptr);
    ExpectRefused("AllGather count", rc, "count differs: rank " + Others() + " count=1");
    CHECK(gathered[0] == -7 && gathered[g_rank] == -7, "AllGather: the refused call wrote");
    CHECK_RC(infinicclAllGather(send.data(), gathered.data(), 1, infinicclInt32, comm, nullptr),
             infinicclSuccess);
    for (int r = 0; r < g_n; ++r) CHECK(gathered[r] == r + 1, "AllGather [%d] %d", r, gathered[r]);
    int32_t block = -7;
    std::vector<int32_t> blocks(2 * g_n, g_rank + 1);
    rc = infinicclReduceScatter(blocks.data(), &block, last ? 2 : 1, infinicclInt32,
                                infinicclSum, comm, nullptr);
    ExpectRefused("ReduceScatter count", rc, "count differs: rank " + Others() + " count=1");
    CHECK(block == -7, "ReduceScatter: the refused call wrote %d", block);
    CHECK_RC(infinicclReduceScatter(blocks.data(), &block, 1, infinicclInt32, infinicclSum, comm,
                                    nullptr),
             infinicclSuccess);
    CHECK(block == g_n * (g_n + 1) / 2, "ReduceScatter %d", block);
    int32_t b = g_rank == 0 ? 4242 : -7;
    rc = infinicclBroadcast(&b, &b, last ? 2 : 1, infinicclInt32, 0, comm, nullptr);
    ExpectRefused("Broadcast count", rc, "count differs: rank " + Others() + " count=1");
    CHECK(b == (g_rank == 0 ? 4242 : -7), "Broadcast: the refused call wrote %d", b);
    CHECK_RC(infinicclBroadcast(&b, &b, 1, infinicclInt32, 0, comm, nullptr), infinicclSuccess);
    CHECK(b == 4242, "Broadcast %d", b);

    // Gather, Scatter and AllToAll of unlike counts (and Scatter of unlike
    // roots), then each exact.
    std::vector<int32_t> at_root(2 * g_n, -7);
    rc = infinicclGather(send.data(), at_root.data(), last ? 2 : 1, infinicclInt32, 0, comm,
                         nullptr);
    ExpectRefused("Gather count", rc, "count differs: rank " + Others() + " count=1");
    for (int32_t v : at_root) CHECK(v == -7, "Gather: the refused call wrote %d", v);
    CHECK_RC(infinicclGather(send.data(), at_root.data(), 1, infinicclInt32, 0, comm, nullptr),
             infinicclSuccess);
    for (int r = 0; r < g_n; ++r) {
      const int32_t want = g_rank == 0 ? r + 1 : -7;  // a non-root's recvbuff is not written
      CHECK(at_root[static_cast<size_t>(r)] == want, "Gather [%d] %d", r,
            at_root[static_cast<size_t>(r)]);
    }
    std::vector<int32_t> spread(2 * g_n);
    for (size_t i = 0; i < spread.size(); ++i) spread[i] = 1000 + static_cast<int32_t>(i);
    int32_t part[2] = {-7, -7};
    rc = infinicclScatter(spread.data(), part, last ? 2 : 1, infinicclInt32, 0, comm, nullptr);
    ExpectRefused("Scatter count", rc, "count differs: rank " + Others() + " count=1");
    CHECK(part[0] == -7 && part[1] == -7, "Scatter: the refused call wrote %d %d", part[0],
          part[1]);
    rc = infinicclScatter(spread.data(), part, 1, infinicclInt32, g_rank, comm, nullptr);
    ExpectRefused("Scatter root", rc, roots);
    CHECK(part[0] == -7, "Scatter root: the refused call wrote %d", part[0]);
    CHECK_RC(infinicclScatter(spread.data(), part, 1, infinicclInt32, 0, comm, nullptr),
             infinicclSuccess);
    CHECK(part[0] == 1000 + g_rank && part[1] == -7, "Scatter %d %d", part[0], part[1]);
    std::vector<int32_t> mixed(2 * g_n), mixed_out(2 * g_n, -7);
    for (size_t i = 0; i < mixed.size(); ++i) mixed[i] = 100 * g_rank + static_cast<int32_t>(i);
    rc = infinicclAllToAll(mixed.data(), mixed_out.data(), last ? 2 : 1, infinicclInt32, comm,
                           nullptr);
    ExpectRefused("AllToAll count", rc, "count differs: rank " + Others() + " count=1");
    for (int32_t v : mixed_out) CHECK(v == -7, "AllToAll: the refused call wrote %d", v);
    CHECK_RC(infinicclAllToAll(mixed.data(), mixed_out.data(), 1, infinicclInt32, comm, nullptr),
             infinicclSuccess);
    for (int r = 0; r < g_n; ++r) {
      CHECK(mixed_out[static_cast<size_t>(r)] == 100 * r + g_rank, "AllToAll [%d] %d", r,
            mixed_out[static_cast<size_t>(r)]);
    }
    ExpectAllExact(comm, "the other collectives' mismatches");
  }
  CHECK_RC(infinicclCommDestroy(comm), infinicclSuccess);
  return 0;
}

// The last rank leaves (CommAbort or CommDestroy) while the others wait for
// it in an AllReduce.
int Leave(bool abort) {
  infinicclComm_t comm = nullptr;
  CHECK_RC(infinicclCommInitAll(&comm, 0, nullptr), infinicclSuccess);
  ExpectExact(comm, infinicclInt64, 16, "creation");
  MPI_Barrier(MPI_COMM_WORLD);
  if (g_rank == g_last) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    CHECK_RC(abort ? infinicclCommAbort(comm) : infinicclCommDestroy(comm), infinicclSuccess);
  } else {
    int64_t v = 1;
    const auto t0 = std::chrono::steady_clock::now();
    const infinicclResult_t rc =
        infinicclAllReduce(&v, &v, 1, infinicclInt64, infinicclSum, comm, nullptr);
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    CHECK(rc == infinicclRemoteError, "returned %d (%s)", int(rc), SafeLastError());
    const std::string words = "rank " + std::to_string(g_last) + " left the communicator (" +
                              (abort ? "infinicclCommAbort" : "infinicclCommDestroy") + ")";
    CHECK(Says(SafeLastError(), words), "expected '%s' in '%s'", words.c_str(), SafeLastError());
    // The error names the peer's leaving, so the wait ended after it; only
    // a hang fails the bound.
    CHECK(took < 30.0, "the wait ended %.2f s after the call began", took);
    std::printf("[rank %d] the AllReduce returned %.3f s after it began: %s\n", g_rank, took,
                SafeLastError());
    CHECK_RC(infinicclCommDestroy(comm), infinicclSuccess);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  infinicclComm_t next = nullptr;
  CHECK_RC(infinicclCommInitAll(&next, 0, nullptr), infinicclSuccess);
  ExpectAllExact(next, "a new communicator");
  CHECK_RC(infinicclCommDestroy(next), infinicclSuccess);
  return 0;
}

void SetAndReload(const char *name, const char *value) {
  if (value != nullptr) {
    setenv(name, value, 1);
  } else {
    unsetenv(name);
  }
  infiniccl::ReloadGlobalConfig();
}

int Settings() {
  const bool last = g_rank == g_last;
  const std::string L = std::to_string(g_last);
  struct Case {
    const char *name, *mine, *lasts, *words;
  };
  const std::string shm_words = "INFINICCL_SHM differs between the ranks of the new "
                                "communicator: rank " +
                                Others() + " INFINICCL_SHM=1, rank " + L + " INFINICCL_SHM=auto";
  const std::string max_words = "INFINICCL_SHM_MAX_BYTES differs between the ranks of the new "
                                "communicator: rank " +
                                Others() + " INFINICCL_SHM_MAX_BYTES=auto, rank " + L +
                                " INFINICCL_SHM_MAX_BYTES=4096";
  const Case cases[] = {{"INFINICCL_SHM", "1", "auto", shm_words.c_str()},
                        {"INFINICCL_SHM_MAX_BYTES", nullptr, "4K", max_words.c_str()}};
  for (const Case &c : cases) {
    const char *before = std::getenv(c.name);
    const std::string saved = before != nullptr ? before : "";
    SetAndReload(c.name, last ? c.lasts : c.mine);
    infinicclComm_t comm = nullptr;
    ExpectRefused(c.name, infinicclCommInitAll(&comm, 0, nullptr), c.words);
    CHECK(comm == nullptr, "%s: a communicator was made", c.name);
    SetAndReload(c.name, before != nullptr ? saved.c_str() : nullptr);
  }
  // INFINICCL_ASYNC chooses whether a call is queued, not its path.
  SetAndReload("INFINICCL_ASYNC", last ? "0" : "auto");
  infinicclComm_t comm = nullptr;
  CHECK_RC(infinicclCommInitAll(&comm, 0, nullptr), infinicclSuccess);
  ExpectAllExact(comm, "INFINICCL_ASYNC unlike");
  CHECK_RC(infinicclCommDestroy(comm), infinicclSuccess);
  SetAndReload("INFINICCL_ASYNC", nullptr);
  CHECK_RC(infinicclCommInitAll(&comm, 0, nullptr), infinicclSuccess);
  ExpectAllExact(comm, "settings alike");
  CHECK_RC(infinicclCommDestroy(comm), infinicclSuccess);
  return 0;
}

// An AllReduce of device buffers of small integers ((rank + 1) * (i % 5 +
// 1)) on the default stream, downloaded and compared exactly.
void ExpectDeviceExact(infinicclComm_t comm, infinicclDataType_t dt, size_t count,
                       const char *after) {
  const size_t elem = Info(dt).size;
  std::vector<unsigned char> send(count * elem);
  for (size_t i = 0; i < count; ++i) Encode(dt, send.data(), i, (g_rank + 1) * (i % 5 + 1.0));
  DeviceBuffer in(send.size()), out(send.size());
  in.Upload(send);
  CHECK_RC(infinicclAllReduce(in.ptr, out.ptr, count, dt, infinicclSum, comm, nullptr),
           infinicclSuccess);
  const std::vector<unsigned char> got = out.Download();
  size_t wrong = 0, first = 0;
  for (size_t i = 0; i < count; ++i) {
    const double want = g_n * (g_n + 1) / 2.0 * (i % 5 + 1.0);
    if (Decode(dt, got.data(), i) != want && wrong++ == 0) first = i;
  }
  CHECK(wrong == 0, "after %s: device AllReduce %s x %zu: %zu wrong, first [%zu] = %g", after,
        Info(dt).name, count, wrong, first, wrong ? Decode(dt, got.data(), first) : 0.0);
}

int Fork(bool device) {
  infinicclComm_t comm = nullptr;
  if (device) EnableSim();
  CHECK_RC(infinicclCommInitAll(&comm, device ? 1 : 0, nullptr), infinicclSuccess);
  ExpectExact(comm, infinicclInt32, 64, "creation");
  std::unique_ptr<DeviceBuffer> dev;
  if (device) {
    ExpectDeviceExact(comm, infinicclInt32, 64, "creation");
    dev = std::make_unique<DeviceBuffer>(sizeof(int64_t));
    dev->Upload(std::vector<unsigned char>(sizeof(int64_t), 1));
  }
  const pid_t child = fork();
  if (child == 0) {
    int64_t v = 1;
    int failures = 0;
    void *buf = device ? dev->ptr : static_cast<void *>(&v);
    const infinicclResult_t rc =
        infinicclAllReduce(buf, buf, 1, infinicclInt64, infinicclSum, comm, nullptr);
    if (rc != infinicclInvalidUsage || !Says(infinicclGetLastError(comm), "child of fork()")) {
      std::fprintf(stderr, "[rank %d child] FAIL: AllReduce returned %d: %s\n", g_rank,
                   int(rc), infinicclGetLastError(comm));
      ++failures;
    }
    // Its destroy is refused too: it would mark the parent as gone.
    if (infinicclCommDestroy(comm) != infinicclInvalidUsage) {
      std::fprintf(stderr, "[rank %d child] FAIL: CommDestroy accepted\n", g_rank);
      ++failures;
    }
    std::_Exit(failures == 0 ? 0 : 1);
  }
  CHECK(child > 0, "fork failed");
  int status = -1;
  CHECK(waitpid(child, &status, 0) == child, "waitpid");
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child: status %d", status);
  if (device) {
    ExpectDeviceExact(comm, infinicclInt32, 1000, "a child's refused call");
    ExpectDeviceExact(comm, infinicclFloat32, 300000, "a child's refused call");
    dev.reset();
  }
  ExpectAllExact(comm, "a child's refused call");
  CHECK_RC(infinicclCommDestroy(comm), infinicclSuccess);
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  CHECK_RC(infinicclInit(&argc, &argv), infinicclSuccess);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_n);
  g_last = g_n - 1;
  const std::string mode = argc > 1 ? argv[1] : "mismatch";
  if (mode == "mismatch") {
    Mismatch();
  } else if (mode == "abort" || mode == "destroy") {
    Leave(mode == "abort");
  } else if (mode == "settings") {
    Settings();
  } else if (mode == "fork" || mode == "fork_device") {
    Fork(mode == "fork_device");
  } else {
    CHECK(false, "unknown mode %s", mode.c_str());
  }
  const long total = TotalFailures();
  std::printf("[rank %d/%d] test_shm_contract %s: %ld failures\n", g_rank, g_n, mode.c_str(),
              g_failures);
  CHECK_RC(infinicclFinalize(), infinicclSuccess);
  return g_failures == 0 && total == 0 ? 0 : 1;
}
