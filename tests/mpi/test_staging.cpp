// The staging engine on the EMULATED device (sim): device buffers that MPI
// must not read directly, staged through the pool and the pipeline.
//
// Modes (argv[1]):
//   pool    - reuse (1000 AllReduces allocate only on the first), the cap
//             bounds what is held during and after a large operation, MemTrim,
//             CommDestroy releases what only that comm used, pinned
//             unavailable -> pageable fallback, injected copy failure ->
//             error, nothing held, next call fine; stream ordering; mixed
//             host/device buffers; threads on two communicators.
//   overlap - a pipelined AllReduce of 64 MiB (through MPI, or through
//             shared memory with INFINICCL_SHM=1) at slow emulated copies
//             (1 GB/s, set by the test's registration):
//             the copies in and out ran on streams of one direction each
//             (the emulator counts the streams that carried copies over the
//             host link), so they can overlap, and the result is exact.
//   overlap_abort - shared memory, 0.1 GB/s copies: the last rank aborts
//             the communicator (infinicclCommAbort from another thread)
//             60 ms into a 16 MiB AllReduce whose copies take 160 ms each
//             way. Every rank's call returns an error, and when it returns
//             every copy it queued has ended (the emulator counts those
//             that ended): none writes the receive buffer or reads a stage
//             afterwards.
//   direct  - run with INFINICCL_MPI_DEVICE_DIRECT=1: device buffers go to MPI
//             as they are, zero staging copies; the backend's own copies
//             (Broadcast's root copy, Avg's division in 1 MiB pieces) go
//             through the runtime.
// Expected values come from test_util.h (independent of the library).
#include <mpi.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "device_mirror.h"

using namespace itest;

namespace {

int g_n = 0;

// One AllReduce on device buffers, checked; returns the call's result.
// An AllReduce of `count` elements through `send` and `recv` (at least
// count elements each), checked exactly.
infinicclResult_t AllReduceIn(DeviceBuffer &send, DeviceBuffer &recv, infinicclComm_t comm,
                              int rank, size_t count, infinicclDataType_t dt,
                              infinicclRedOp_t op, uint64_t seed) {
  send.Upload(ReduceInput(dt, op, seed, rank, count));
  const infinicclResult_t rc = infinicclAllReduce(send.ptr, recv.ptr, count, dt, op, comm, nullptr);
  if (rc == infinicclSuccess) {
    std::vector<unsigned char> got = recv.Download();
    got.resize(count * Info(dt).size);
    const long wrong = CountWrongReduce(g_n, dt, op, seed, got, count);
    CHECK(wrong == 0, "AllReduce count=%zu dtype=%s op=%s: %ld wrong", count, Info(dt).name,
          OpName(op), wrong);
  }
  return rc;
}

infinicclResult_t DeviceAllReduce(infinicclComm_t comm, int rank, size_t count,
                                  infinicclDataType_t dt, infinicclRedOp_t op, uint64_t seed) {
  const size_t bytes = count * Info(dt).size;
  DeviceBuffer send(bytes), recv(bytes);
  return AllReduceIn(send, recv, comm, rank, count, dt, op, seed);
}

void TestReuse(infinicclComm_t comm, int rank) {
  // 1000 calls of one (single-chunk) size, then 20 of a pipelined size: after
  // each size's first call, no call allocates. (Kept small in MPI calls: an
  // oversubscribed MPICH takes milliseconds per call.)
  for (const auto &[count, calls] : {std::pair<size_t, int>{4096, 1000}, {300000, 20}}) {
    CHECK(DeviceAllReduce(comm, rank, count, infinicclFloat32, infinicclSum, 1) ==
          infinicclSuccess);
    const infinicclStagingStats first = StagingStats();
    const size_t bytes = count * 4;
    DeviceBuffer send(bytes), recv(bytes);
    send.Upload(ReduceInput(infinicclFloat32, infinicclSum, 2, rank, count));
    for (int i = 0; i < calls; ++i) {
      CHECK(infinicclAllReduce(send.ptr, recv.ptr, count, infinicclFloat32, infinicclSum,
                               comm, nullptr) == infinicclSuccess);
    }
    const infinicclStagingStats after = StagingStats();
    CHECK(after.allocations == first.allocations,
          "%d AllReduces of %zu elements allocated %llu staging buffers after the first call",
          calls, count, after.allocations - first.allocations);
    CHECK(after.staged_calls == first.staged_calls + calls);
    CHECK(after.d2h_bytes >= first.d2h_bytes + calls * bytes);
    const long wrong =
        CountWrongReduce(g_n, infinicclFloat32, infinicclSum, 2, recv.Download(), count);
    CHECK(wrong == 0, "after %d calls: %ld wrong", calls, wrong);
  }
}

void TestCapAndTrim(infinicclComm_t comm, int rank, size_t cap) {
  // 4x the cap in one operation: must run in pieces and stay under the cap.
  const size_t count = cap;  // float32: 4 * cap bytes per buffer
  CHECK(DeviceAllReduce(comm, rank, count, infinicclFloat32, infinicclSum, 3) == infinicclSuccess);
  const infinicclStagingStats s = StagingStats();
  CHECK(s.peak_bytes_held <= cap, "peak %llu > cap %zu", s.peak_bytes_held, cap);
  CHECK(s.bytes_held <= cap, "held %llu > cap %zu after the call", s.bytes_held, cap);
  CHECK(s.pipelined_calls > 0);
  CHECK(infinicclMemTrim() == infinicclSuccess);
  CHECK(StagingStats().bytes_held == 0, "MemTrim left %llu bytes", StagingStats().bytes_held);
}

void TestCommDestroyReleases(int rank) {
  CHECK(infinicclMemTrim() == infinicclSuccess);
  infinicclComm_t a = nullptr, b = nullptr;
  CHECK(infinicclCommInitAll(&a, 0, nullptr) == infinicclSuccess);
  CHECK(infinicclCommInitAll(&b, 0, nullptr) == infinicclSuccess);
  CHECK(DeviceAllReduce(a, rank, 5000, infinicclInt32, infinicclMax, 4) == infinicclSuccess);
  CHECK(StagingStats().bytes_held > 0);
  CHECK(infinicclCommDestroy(a) == infinicclSuccess);
  CHECK(StagingStats().bytes_held == 0, "CommDestroy left %llu bytes only it used",
        StagingStats().bytes_held);
  // A buffer used by b stays cached after a is gone.
  CHECK(DeviceAllReduce(b, rank, 5000, infinicclInt32, infinicclMax, 5) == infinicclSuccess);
  CHECK(StagingStats().bytes_held > 0);
  CHECK(infinicclCommDestroy(b) == infinicclSuccess);
}

void TestPageableFallback(infinicclComm_t comm, int rank) {
  CHECK(infinicclMemTrim() == infinicclSuccess);
  g_sim->SetPinnedAvailable(false);
  CHECK(DeviceAllReduce(comm, rank, 70001, infinicclFloat16, infinicclSum, 6) == infinicclSuccess);
  CHECK(StagingStats().pinned == 0, "staging says pinned with pinned memory unavailable");
  g_sim->SetPinnedAvailable(true);
  CHECK(infinicclMemTrim() == infinicclSuccess);
  CHECK(DeviceAllReduce(comm, rank, 70001, infinicclFloat16, infinicclSum, 7) == infinicclSuccess);
  CHECK(StagingStats().pinned == 1);
}

void TestCopyFailure(infinicclComm_t comm, int rank) {
  const size_t count = 100000;
  DeviceBuffer send(count * 8), recv(count * 8);
  send.Upload(ReduceInput(infinicclFloat64, infinicclSum, 8, rank, count));
  // Every rank fails its first staging copy, so no rank is left waiting in MPI.
  g_sim->FailNextCopies(1);
  const infinicclResult_t rc = infinicclAllReduce(send.ptr, recv.ptr, count, infinicclFloat64,
                                                  infinicclSum, comm, nullptr);
  CHECK(rc == infinicclSystemError, "injected copy failure returned %s", ResultName(rc));
  CHECK(NamesCall(infinicclGetLastError(comm), "infinicclAllReduce"), "message: %s",
        infinicclGetLastError(comm));
  // Every lease went back: trimming frees everything.
  CHECK(infinicclMemTrim() == infinicclSuccess);
  CHECK(StagingStats().bytes_held == 0, "a failed call kept %llu bytes leased",
        StagingStats().bytes_held);
  CHECK(DeviceAllReduce(comm, rank, 100000, infinicclFloat64, infinicclSum, 9) == infinicclSuccess);
}

void TestStreamOrdering(infinicclComm_t comm, int rank) {
  // The input is produced by a slow asynchronous copy queued on the stream
  // just before the call; the call must wait for it.
  const size_t count = 1 << 20;
  void *stream = nullptr;
  CHECK(g_sim->StreamCreate(&stream).ok());
  DeviceBuffer send(count * 4), recv(count * 4);
  send.Upload(std::vector<unsigned char>(count * 4, 0));  // stale data: zeros
  const std::vector<unsigned char> fresh =
      ReduceInput(infinicclInt32, infinicclSum, 10, rank, count);
  g_sim->SetCopyGbps(0.5);  // 4 MiB at 0.5 GB/s: about 8 ms
  send.UploadAsync(fresh, stream);
  CHECK(infinicclAllReduce(send.ptr, recv.ptr, count, infinicclInt32, infinicclSum, comm,
                           stream) == infinicclSuccess);
  g_sim->SetCopyGbps(0);
  const long wrong =
      CountWrongReduce(g_n, infinicclInt32, infinicclSum, 10, recv.Download(), count);
  CHECK(wrong == 0, "%ld elements read before the producing copy finished", wrong);
  CHECK(g_sim->StreamDestroy(stream).ok());
}

void TestMixedHostDevice(infinicclComm_t comm, int rank) {
  // Host send, device recv (AllGather) and device send, host recv (Reduce).
  const size_t count = 12345;
  std::vector<int32_t> host_send(count), host_recv(count * g_n);
  for (size_t i = 0; i < count; ++i) host_send[i] = int32_t(rank * 100000 + i);
  DeviceBuffer dev_recv(count * g_n * 4);
  CHECK(infinicclAllGather(host_send.data(), dev_recv.ptr, count, infinicclInt32, comm,
                           nullptr) == infinicclSuccess);
  std::vector<unsigned char> got = dev_recv.Download();
  long wrong = 0;
  for (int r = 0; r < g_n; ++r) {
    for (size_t i = 0; i < count; ++i) {
      int32_t v;
      std::memcpy(&v, got.data() + (r * count + i) * 4, 4);
      wrong += v != int32_t(r * 100000 + i);
    }
  }
  CHECK(wrong == 0, "mixed AllGather: %ld wrong", wrong);

  DeviceBuffer dev_send(count * 4);
  dev_send.Upload(ReduceInput(infinicclInt64, infinicclSum, 11, rank, count / 2));
  std::vector<unsigned char> out(count / 2 * 8);
  CHECK(infinicclReduce(dev_send.ptr, out.data(), count / 2, infinicclInt64, infinicclSum,
                        g_n - 1, comm, nullptr) == infinicclSuccess);
  if (rank == g_n - 1) {
    CHECK(CountWrongReduce(g_n, infinicclInt64, infinicclSum, 11, out, count / 2) == 0);
  }
}

void TestThreads(int rank) {
  int provided = 0;
  MPI_Query_thread(&provided);
  if (provided < MPI_THREAD_MULTIPLE) {
    if (rank == 0) std::printf("threads: skipped (MPI thread level %d)\n", provided);
    return;
  }
  infinicclComm_t comms[2] = {nullptr, nullptr};
  for (auto &c : comms) CHECK(infinicclCommInitAll(&c, 0, nullptr) == infinicclSuccess);
  // Each thread's buffers are allocated before either thread calls: a device
  // allocation or free synchronises the whole device (cudaMalloc and
  // cudaFree may; the emulated device always does), so it would wait for the
  // other thread's queued call, and across ranks those waits can close a
  // cycle (rank 0 allocating behind comm 0's call, rank 1 behind comm 1's).
  const size_t bytes = 41000 * 4;
  DeviceBuffer sends[2] = {DeviceBuffer(bytes), DeviceBuffer(bytes)};
  DeviceBuffer recvs[2] = {DeviceBuffer(bytes), DeviceBuffer(bytes)};
  std::thread workers[2];
  for (int t = 0; t < 2; ++t) {
    workers[t] = std::thread([&, t] {
      for (int i = 0; i < 20; ++i) {
        CHECK(AllReduceIn(sends[t], recvs[t], comms[t], rank, 40000 + 1000 * t, infinicclFloat32,
                          infinicclMax, 100 + t * 50 + i) == infinicclSuccess);
      }
    });
  }
  for (auto &w : workers) w.join();
  for (auto &c : comms) CHECK(infinicclCommDestroy(c) == infinicclSuccess);
}

void TestDirect(infinicclComm_t comm, int rank) {
  const infinicclStagingStats before = StagingStats();
  for (infinicclDataType_t dt : {infinicclFloat32, infinicclBFloat16, infinicclUInt8}) {
    CHECK(DeviceAllReduce(comm, rank, 65537, dt, infinicclSum, 20 + dt) == infinicclSuccess);
  }
  const infinicclStagingStats after = StagingStats();
  CHECK(after.d2h_copies == before.d2h_copies && after.h2d_copies == before.h2d_copies,
        "direct path made %llu staging copies", after.d2h_copies - before.d2h_copies);
  CHECK(after.direct_calls == before.direct_calls + 3);
  CHECK(after.staged_calls == before.staged_calls);
}

// On the direct path the backend's own copies must go through the device
// runtime, never touch device memory on the CPU: counted by the emulated
// device, around the library call only.
void TestDirectLocalCopies(infinicclComm_t comm, int rank) {
  const int root = g_n - 1;
  // Below and above the size where Broadcast overlaps the root's copy.
  for (size_t count : {size_t{1000}, size_t{100000}}) {
    const size_t bytes = count * sizeof(float);
    std::vector<unsigned char> in(bytes), zero(bytes, 0);
    for (size_t i = 0; i < count; ++i) {
      const float v = static_cast<float>(root * 1000 + i % 977);
      std::memcpy(in.data() + i * sizeof v, &v, sizeof v);
    }
    DeviceBuffer send(bytes), recv(bytes);
    send.Upload(rank == root ? in : zero);
    recv.Upload(zero);
    const infiniccl::SimStats s0 = g_sim->stats();
    CHECK(infinicclBroadcast(send.ptr, recv.ptr, count, infinicclFloat32, root, comm,
                             nullptr) == infinicclSuccess);
    const infiniccl::SimStats s1 = g_sim->stats();
    CHECK(s1.d2d_copies - s0.d2d_copies == (rank == root ? 1u : 0u),
          "Broadcast of %zu: %llu device-to-device copies", count,
          static_cast<unsigned long long>(s1.d2d_copies - s0.d2d_copies));
    CHECK(s1.d2h_copies == s0.d2h_copies && s1.h2d_copies == s0.h2d_copies);
    CHECK(recv.Download() == in, "Broadcast of %zu: wrong result", count);
  }
  // Avg: the division runs on the host, one copy each way per 1 MiB piece
  // (the scratch the communicator keeps stays that small).
  for (size_t count : {size_t{5000}, size_t{300000}}) {
    const unsigned long long pieces = (count * 4 + (1u << 20) - 1) >> 20;
    DeviceBuffer send(count * 4), recv(count * 4);
    send.Upload(ReduceInput(infinicclInt32, infinicclAvg, 31, rank, count));
    const infiniccl::SimStats s0 = g_sim->stats();
    CHECK(infinicclAllReduce(send.ptr, recv.ptr, count, infinicclInt32, infinicclAvg, comm,
                             nullptr) == infinicclSuccess);
    const infiniccl::SimStats s1 = g_sim->stats();
    CHECK(s1.d2h_copies - s0.d2h_copies == pieces && s1.h2d_copies - s0.h2d_copies == pieces,
          "Avg of %zu on the direct path: %llu/%llu copies, expected %llu", count,
          static_cast<unsigned long long>(s1.d2h_copies - s0.d2h_copies),
          static_cast<unsigned long long>(s1.h2d_copies - s0.h2d_copies), pieces);
    CHECK(CountWrongReduce(g_n, infinicclInt32, infinicclAvg, 31, recv.Download(), count) == 0,
          "Avg of %zu on the direct path: wrong result", count);
  }
}

// A pipelined call's copies into and out of the host are on two streams,
// one direction each, so they can run at once (on one stream they could
// not).
void TestOverlap(infinicclComm_t comm, int rank) {
  // With shared memory, the communicator (bound to the emulated device)
  // page-locked its segment when it was made, before any device call.
  const char *shm = std::getenv("INFINICCL_SHM");
  const bool segment = shm != nullptr && std::strcmp(shm, "1") == 0;
  const uint64_t registered = g_sim->stats().registered_bytes;
  CHECK((registered >= (size_t{3} << 20)) == segment,
        "before any device call, %llu bytes page-locked (shared memory %s)",
        static_cast<unsigned long long>(registered), segment ? "on" : "off");
  const size_t count = size_t{16} << 20;  // 64 MiB of float32: 16 chunks
  DeviceBuffer send(count * 4), recv(count * 4);
  send.Upload(ReduceInput(infinicclFloat32, infinicclSum, 60, rank, count));
  g_sim->ResetStats();
  CHECK(infinicclAllReduce(send.ptr, recv.ptr, count, infinicclFloat32, infinicclSum, comm,
                           nullptr) == infinicclSuccess);
  const infiniccl::SimStats s = g_sim->stats();
  // The copies in and out are on streams of one direction each, so a chunk's
  // copy in can run beside the copy out of the one before it (whether they
  // did depends on timing: the peak is printed, not checked).
  CHECK(s.d2h_copies >= 16 && s.h2d_copies >= 16 && s.link_streams >= 2 &&
            s.link_streams_both_ways == 0,
        "AllReduce of 64 MiB: %llu copies in, %llu out, on %llu streams, %llu of them both "
        "ways: the copies in and out cannot overlap",
        static_cast<unsigned long long>(s.d2h_copies),
        static_cast<unsigned long long>(s.h2d_copies),
        static_cast<unsigned long long>(s.link_streams),
        static_cast<unsigned long long>(s.link_streams_both_ways));
  std::printf("[rank %d] overlap: %llu copies in, %llu out, on %llu streams (%llu both ways), "
              "at most %llu at a time\n",
              rank, static_cast<unsigned long long>(s.d2h_copies),
              static_cast<unsigned long long>(s.h2d_copies),
              static_cast<unsigned long long>(s.link_streams),
              static_cast<unsigned long long>(s.link_streams_both_ways),
              static_cast<unsigned long long>(s.peak_link_copies));
  CHECK(CountWrongReduce(g_n, infinicclFloat32, infinicclSum, 60, recv.Download(), count) == 0,
        "AllReduce of 64 MiB: wrong result");
}

// A peer leaves in the middle of a staged call: the call's copies have all
// ended when it returns. Aborts the communicator on the last rank and
// destroys it elsewhere; *comm is then null.
void TestAbortMidCall(infinicclComm_t *comm, int rank) {
  const size_t count = size_t{4} << 20;  // 16 MiB of float32: 4 chunks of 4 MiB
  DeviceBuffer send(count * 4), recv(count * 4);
  send.Upload(ReduceInput(infinicclFloat32, infinicclSum, 60, rank, count));
  MPI_Barrier(MPI_COMM_WORLD);
  g_sim->ResetStats();
  infinicclResult_t rc = infinicclSuccess;
  infiniccl::SimStats s{};
  double took = 0;
  auto call = [&] {
    const auto t0 = std::chrono::steady_clock::now();
    rc = infinicclAllReduce(send.ptr, recv.ptr, count, infinicclFloat32, infinicclSum, *comm,
                            nullptr);
    s = g_sim->stats();  // right when the call has returned
    took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  if (rank == g_n - 1) {
    std::thread t(call);
    std::this_thread::sleep_for(std::chrono::milliseconds(60));
    CHECK(infinicclCommAbort(*comm) == infinicclSuccess);
    t.join();
  } else {
    call();
    CHECK(infinicclCommDestroy(*comm) == infinicclSuccess);
  }
  *comm = nullptr;
  CHECK(rc != infinicclSuccess, "AllReduce of 16 MiB with the last rank aborting 60 ms in: "
        "returned success (the copies alone take 160 ms)");
  const unsigned long long queued = s.d2h_copies + s.h2d_copies;
  CHECK(s.link_copies_done == queued,
        "the AllReduce returned (%s) with %llu of its %llu copies ended: the others still "
        "write the receive buffer or read a stage",
        infinicclGetErrorString(rc), static_cast<unsigned long long>(s.link_copies_done), queued);
  std::printf("[rank %d] returned %s after %.3f s with %llu of %llu copies ended\n", rank,
              infinicclGetErrorString(rc), took,
              static_cast<unsigned long long>(s.link_copies_done), queued);
}

// On one rank a reduction of device buffers is one copy on the stream: no
// staging, no MPI; every op, in and out of place, and device to host.
void TestOneRank(infinicclComm_t comm, int rank) {
  const size_t count = 65537;
  const infinicclRedOp_t ops[] = {infinicclSum, infinicclProd, infinicclMax, infinicclMin,
                                  infinicclAvg};
  for (infinicclRedOp_t op : ops) {
    DeviceBuffer send(count * 8), recv(count * 8);
    const std::vector<unsigned char> in = ReduceInput(infinicclFloat64, op, 40 + op, rank, count);
    send.Upload(in);
    const infinicclStagingStats before = StagingStats();
    const infiniccl::SimStats s0 = g_sim->stats();
    CHECK(infinicclAllReduce(send.ptr, recv.ptr, count, infinicclFloat64, op, comm,
                             nullptr) == infinicclSuccess);
    CHECK(infinicclReduce(send.ptr, send.ptr, count, infinicclFloat64, op, 0, comm,
                          nullptr) == infinicclSuccess);  // in place: nothing to do
    CHECK(infinicclReduceScatter(send.ptr, recv.ptr, count, infinicclFloat64, op, comm,
                                 nullptr) == infinicclSuccess);
    const infiniccl::SimStats s1 = g_sim->stats();
    const infinicclStagingStats after = StagingStats();
    CHECK(s1.d2d_copies - s0.d2d_copies == 2 && s1.d2h_copies == s0.d2h_copies &&
              s1.h2d_copies == s0.h2d_copies,
          "op %s: %llu d2d, %llu d2h, %llu h2d copies (expected 2 d2d)", OpName(op),
          static_cast<unsigned long long>(s1.d2d_copies - s0.d2d_copies),
          static_cast<unsigned long long>(s1.d2h_copies - s0.d2h_copies),
          static_cast<unsigned long long>(s1.h2d_copies - s0.h2d_copies));
    CHECK(after.staged_calls == before.staged_calls, "a one-rank reduction was staged");
    CHECK(recv.Download() == in, "op %s: result differs from the input", OpName(op));
    CHECK(send.Download() == in, "op %s: in-place Reduce changed the buffer", OpName(op));
  }
  // Device to host memory: one device-to-host copy.
  DeviceBuffer send(count * 4);
  const std::vector<unsigned char> in = ReduceInput(infinicclInt32, infinicclMax, 50, rank, count);
  send.Upload(in);
  std::vector<unsigned char> out(count * 4, 0);
  CHECK(infinicclAllReduce(send.ptr, out.data(), count, infinicclInt32, infinicclMax, comm,
                           nullptr) == infinicclSuccess);
  CHECK(out == in, "one-rank AllReduce into host memory: wrong result");
}

}  // namespace

int main(int argc, char **argv) {
  const std::string mode = argc > 1 ? argv[1] : "pool";
  // A small cap so the "larger than the cap" case stays small.
  const size_t cap = 1 << 20;
  if (mode == "pool") setenv("INFINICCL_STAGING_CACHE_BYTES", "1M", 1);
  setenv("INFINICCL_PIPELINE_CHUNK_BYTES", mode.rfind("overlap", 0) == 0 ? "1M" : "65539", 0);
  // The pool and the pipeline, call by call: each check reads statistics and
  // injected failures right after the call that made them, so the calls
  // return with their results (the progress engine runs the same pipeline;
  // its own semantics are test_async's).
  setenv("INFINICCL_ASYNC", "0", 0);
  if (infinicclInit(&argc, &argv) != infinicclSuccess) return 2;
  EnableSim();
  infinicclComm_t comm = nullptr;
  if (infinicclCommInitAll(&comm, 0, nullptr) != infinicclSuccess) return 2;
  int rank = 0;
  infinicclCommUserRank(comm, &rank);
  infinicclCommCount(comm, &g_n);
  g_rank = rank;

  if (mode == "direct") {
    TestDirect(comm, rank);
    TestDirectLocalCopies(comm, rank);
  } else if (mode == "overlap") {
    TestOverlap(comm, rank);
  } else if (mode == "overlap_abort") {
    TestAbortMidCall(&comm, rank);
  } else if (mode == "onerank") {
    TestOneRank(comm, rank);
  } else {
    TestReuse(comm, rank);
    TestCapAndTrim(comm, rank, cap);
    TestCommDestroyReleases(rank);
    TestPageableFallback(comm, rank);
    TestCopyFailure(comm, rank);
    TestStreamOrdering(comm, rank);
    TestMixedHostDevice(comm, rank);
    TestThreads(rank);
  }
  if (comm != nullptr) CHECK(infinicclCommDestroy(comm) == infinicclSuccess);
  const long total = TotalFailures();
  if (rank == 0) std::printf("test_staging %s: %ld failures\n", mode.c_str(), total);
  if (infinicclFinalize() != infinicclSuccess) return 1;
  return total == 0 ? 0 : 1;
}
