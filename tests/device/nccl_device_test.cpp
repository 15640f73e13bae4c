// Device collectives through NCCL at 1 rank (one GPU cannot hold two NCCL
// ranks), built with WITH_NCCL:
//   nccl_device_test bootstrap  GetUniqueId + CommInitRank, no MPI (and a
//                               split of that communicator by NCCL alone)
//   nccl_device_test mpi        Init + CommInitAll (rank 0 makes the id),
//                               under mpirun -np 1
//   nccl_device_test capture    stream capture (cudaStreamBeginCapture, as
//                               torch.cuda.graph) through NCCL: recorded,
//                               each launch exact; under mpirun -np 1
//   nccl_device_test capture_refused  the same call kept off NCCL
//                               (INFINICCL_BACKEND=mpi): refused with
//                               infinicclInvalidUsage, nothing recorded
//   nccl_device_test revoke     a Broadcast through NCCL, exact; then
//                               infinicclCommRevoke aborts the NCCL
//                               communicator: the next Broadcast and
//                               GetAsyncError say RemoteError "revoked",
//                               and CommDestroy returns; under mpirun -np 1
//   (the capture and revoke modes need a GPU: tests/device/cuda_checks.sh
//   runs them; without one they print so and pass)
// Every collective and data type on cudaMalloc'ed buffers, each input
// produced by an async copy on the same stream just before the call and the
// result read back on that stream (stream order, no host sync in between),
// recvbuff pre-filled and guarded so a short or long copy shows. Without a
// GPU (no driver) it checks that NCCL is never reached: the bootstrap
// returns NotSupported with its reason, CommInitAll still works on host
// buffers.
#include <cuda_runtime_api.h>
#include <mpi.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "test_util.h"

using namespace itest;

namespace {

constexpr size_t kGuard = 64;
constexpr unsigned char kFill = 0xA5;

#define CUDA_OK(call)                                                  \
  do {                                                                 \
    cudaError_t e_ = (call);                                           \
    CHECK(e_ == cudaSuccess, "%s: %s", #call, cudaGetErrorString(e_)); \
  } while (0)

struct DeviceBuf {
  void *p = nullptr;
  explicit DeviceBuf(size_t bytes) { CUDA_OK(cudaMalloc(&p, bytes)); }
  ~DeviceBuf() { cudaFree(p); }
  DeviceBuf(const DeviceBuf &) = delete;
  DeviceBuf &operator=(const DeviceBuf &) = delete;
};

struct PinnedBuf {
  void *p = nullptr;
  explicit PinnedBuf(size_t bytes) { CUDA_OK(cudaMallocHost(&p, bytes)); }
  ~PinnedBuf() { cudaFreeHost(p); }
  PinnedBuf(const PinnedBuf &) = delete;
  PinnedBuf &operator=(const PinnedBuf &) = delete;
};

const char *KindName(int k) {
  static const char *const kNames[] = {"AllReduce", "Broadcast",     "Bcast",
                                       "Reduce",    "AllGather",     "Gather",
                                       "Scatter",   "ReduceScatter", "AllToAll"};
  return kNames[k];
}
constexpr int kNumKinds = 9;

infinicclResult_t Call(int kind, const void *s, void *r, size_t n, infinicclDataType_t t,
                       infinicclRedOp_t op, infinicclComm_t c, cudaStream_t st) {
  switch (kind) {
    case 0: return infinicclAllReduce(s, r, n, t, op, c, st);
    case 1: return infinicclBroadcast(s, r, n, t, 0, c, st);
    case 2: return infinicclBcast(r, n, t, 0, c, st);
    case 3: return infinicclReduce(s, r, n, t, op, 0, c, st);
    case 4: return infinicclAllGather(s, r, n, t, c, st);
    case 5: return infinicclGather(s, r, n, t, 0, c, st);
    case 6: return infinicclScatter(s, r, n, t, 0, c, st);
    case 7: return infinicclReduceScatter(s, r, n, t, op, c, st);
    default: return infinicclAllToAll(s, r, n, t, c, st);
  }
}
bool Reduces(int kind) {
  return kind == 0 || kind == 3 || kind == 7;
}

// One call at 1 rank, where every collective's result is its input. Returns
// the call's result code; checks the data when it succeeded.
infinicclResult_t RunOne(infinicclComm_t comm, cudaStream_t st, int kind,
                         infinicclDataType_t dt, infinicclRedOp_t op, size_t n) {
  const size_t bytes = n * Info(dt).size;
  std::vector<unsigned char> in(bytes), out(bytes + kGuard);
  for (size_t i = 0; i < n; ++i)
    Encode(dt, in.data(), i,
           Reduces(kind) ? ReduceValue(dt, op, 7, 0, i) : DataValue(dt, 7, 0, i));
  DeviceBuf send(bytes), recv(bytes + kGuard);
  CUDA_OK(cudaMemset(send.p, 0, bytes));  // stale data a misordered call would read
  CUDA_OK(cudaMemset(recv.p, kFill, bytes + kGuard));
  // Bcast works in place on recvbuff: its input goes there.
  void *input = kind == 2 ? recv.p : send.p;
  CUDA_OK(cudaMemcpyAsync(input, in.data(), bytes, cudaMemcpyHostToDevice, st));
  const infinicclResult_t rc = Call(kind, send.p, recv.p, n, dt, op, comm, st);
  CUDA_OK(
      cudaMemcpyAsync(out.data(), recv.p, bytes + kGuard, cudaMemcpyDeviceToHost, st));
  CUDA_OK(cudaStreamSynchronize(st));
  if (rc != infinicclSuccess) return rc;
  size_t wrong = 0, first = 0;
  for (size_t i = 0; i < n; ++i) {
    const double want = Decode(dt, in.data(), i);
    if (!Matches(dt, op, Decode(dt, out.data(), i), want) && wrong++ == 0) first = i;
  }
  CHECK(wrong == 0, "%s %s %s: %zu of %zu wrong, first at %zu", KindName(kind),
        Info(dt).name, OpName(op), wrong, n, first);
  for (size_t i = bytes; i < bytes + kGuard; ++i) {
    if (out[i] != kFill) {
      CHECK(out[i] == kFill, "%s %s: wrote past recvbuff (byte %zu)", KindName(kind),
            Info(dt).name, i - bytes);
      break;
    }
  }
  return rc;
}

// Every collective, data type and op the CCL takes; `fallback`: whether
// calls the CCL cannot take (16-bit integer and integer Avg reductions)
// succeed another way (MPI under CommInitAll, the node's shared memory
// under CommInitRank without MPI) or fail NotSupported.
// On one rank every reduction succeeds: it is a device copy, never the CCL.
void RunAll(infinicclComm_t comm, bool fallback) {
  int nranks = 0;
  CHECK_RC(infinicclCommCount(comm, &nranks), infinicclSuccess);
  cudaStream_t st = nullptr;
  CUDA_OK(cudaStreamCreate(&st));
  const size_t n = 1021;  // odd: no element size divides every block evenly
  for (int kind = 0; kind < kNumKinds; ++kind) {
    for (int t = 0; t < infinicclNumTypes; ++t) {
      const auto dt = static_cast<infinicclDataType_t>(t);
      const bool int16 = dt == infinicclInt16 || dt == infinicclUInt16;
      if (!Reduces(kind)) {
        CHECK_RC(RunOne(comm, st, kind, dt, infinicclSum, n), infinicclSuccess);
        continue;
      }
      for (int o = 0; o < infinicclNumOps; ++o) {
        const auto op = static_cast<infinicclRedOp_t>(o);
        if (IsBitwise(op) && Info(dt).is_float) {  // integer types only, on every path
          CHECK_RC(RunOne(comm, st, kind, dt, op, n), infinicclInvalidArgument);
          continue;
        }
        // NCCL has no bitwise op: those take MPI (or fail under INFINICCL_BACKEND=ccl).
        const bool ccl_can = !int16 && !IsBitwise(op) && (op != infinicclAvg || Info(dt).is_float);
        CHECK_RC(RunOne(comm, st, kind, dt, op, n),
                 ccl_can || fallback || nranks == 1 ? infinicclSuccess
                                                    : infinicclNotSupported);
      }
    }
  }
  CUDA_OK(cudaStreamDestroy(st));
}

// The stream-ordered case at a size where the copy takes a while: a pinned
// 64 MiB async copy produces sendbuff, the AllReduce is queued behind it on
// the same stream and returns once enqueued, the result is copied back on
// the stream; only then does the host wait.
void StreamOrdered(infinicclComm_t comm) {
  const size_t n = size_t{16} << 20;  // float32: 64 MiB
  PinnedBuf in(n * 4), out(n * 4);
  float *fin = static_cast<float *>(in.p), *fout = static_cast<float *>(out.p);
  DeviceBuf send(n * 4), recv(n * 4);
  CUDA_OK(cudaMemset(send.p, 0, n * 4));
  CUDA_OK(cudaMemset(recv.p, 0, n * 4));
  cudaStream_t st = nullptr;
  CUDA_OK(cudaStreamCreate(&st));
  for (int round = 0; round < 3; ++round) {
    // Each round's input differs, so last round's result cannot pass.
    for (size_t i = 0; i < n; ++i) fin[i] = static_cast<float>((i + round) % 1000);
    for (size_t i = 0; i < n; ++i) fout[i] = -1;
    CUDA_OK(cudaMemcpyAsync(send.p, in.p, n * 4, cudaMemcpyHostToDevice, st));
    CHECK_RC(
        infinicclAllReduce(send.p, recv.p, n, infinicclFloat32, infinicclSum, comm, st),
        infinicclSuccess);
    CUDA_OK(cudaMemcpyAsync(out.p, recv.p, n * 4, cudaMemcpyDeviceToHost, st));
    CUDA_OK(cudaStreamSynchronize(st));
    size_t wrong = 0;
    for (size_t i = 0; i < n; ++i)
      wrong += fout[i] != static_cast<float>((i + round) % 1000);
    CHECK(wrong == 0, "stream-ordered round %d: %zu of %zu wrong", round, wrong, n);
  }
  CUDA_OK(cudaStreamDestroy(st));
}

int DeviceCount() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

int Bootstrap() {
  g_rank = 0;
  infinicclUniqueId id;
  std::memset(&id, 0, sizeof id);
  if (DeviceCount() == 0) {
    // The id is the bootstrap's; without a device NCCL is not usable, and
    // without MPI the communicator is the node's shared memory alone.
    CHECK_RC(infinicclGetUniqueId(&id), infinicclSuccess);
    infinicclComm_t comm = nullptr;
    CHECK_RC(infinicclCommInitRank(&comm, 1, id, 0), infinicclSuccess);
    if (comm == nullptr) return 1;
    int h_in = 5, h_out = 0;
    CHECK_RC(
        infinicclAllReduce(&h_in, &h_out, 1, infinicclInt32, infinicclSum, comm, nullptr),
        infinicclSuccess);
    CHECK(h_out == 5, "host AllReduce gave %d", h_out);
    CHECK_RC(infinicclCommDestroy(comm), infinicclSuccess);
    std::printf("no GPU: a communicator of shared memory, without NCCL (%ld failures)\n",
                g_failures);
    return g_failures == 0 ? 0 : 1;
  }
  CUDA_OK(cudaSetDevice(0));
  CHECK_RC(infinicclGetUniqueId(&id), infinicclSuccess);
  infinicclComm_t comm = nullptr;
  CHECK_RC(infinicclCommInitRank(&comm, 1, id, 0), infinicclSuccess);
  if (comm == nullptr) return 1;
  int count = 0, rank = -1;
  CHECK_RC(infinicclCommCount(comm, &count), infinicclSuccess);
  CHECK_RC(infinicclCommUserRank(comm, &rank), infinicclSuccess);
  CHECK(count == 1 && rank == 0, "count %d rank %d", count, rank);
  RunAll(comm, true);
  StreamOrdered(comm);
  // Host buffers on a communicator without MPI on one node: the node's
  // shared memory beside NCCL.
  int h_in = 1, h_out = 0;
  CHECK_RC(
      infinicclAllReduce(&h_in, &h_out, 1, infinicclInt32, infinicclSum, comm, nullptr),
      infinicclSuccess);
  CHECK(h_out == 1, "host AllReduce gave %d", h_out);
  // Split without MPI: over the node's shared memory, with ncclCommSplit.
  infinicclComm_t child = nullptr, none = nullptr;
  CHECK_RC(infinicclCommSplit(comm, 5, 0, &child), infinicclSuccess);
  if (child != nullptr) {
    CHECK_RC(infinicclCommCount(child, &count), infinicclSuccess);
    CHECK_RC(infinicclCommUserRank(child, &rank), infinicclSuccess);
    CHECK(count == 1 && rank == 0, "split: count %d rank %d", count, rank);
    RunAll(child, true);
    CHECK_RC(infinicclCommDestroy(child), infinicclSuccess);
  }
  CHECK_RC(infinicclCommSplit(comm, INFINICCL_SPLIT_NOCOLOR, 0, &none), infinicclSuccess);
  CHECK(none == nullptr, "NOCOLOR gave a communicator");
  CHECK_RC(infinicclCommDestroy(comm), infinicclSuccess);
  std::printf("nccl_device_test bootstrap: %ld failures\n", g_failures);
  return g_failures == 0 ? 0 : 1;
}

int UnderMpi(int argc, char **argv) {
  if (infinicclInit(&argc, &argv) != infinicclSuccess) return 2;
  g_rank = 0;
  infinicclComm_t comm = nullptr;
  CHECK_RC(infinicclCommInitAll(&comm, 0, nullptr), infinicclSuccess);
  if (comm == nullptr) return 2;
  int h_in = 3, h_out = 0;
  CHECK_RC(
      infinicclAllReduce(&h_in, &h_out, 1, infinicclInt32, infinicclSum, comm, nullptr),
      infinicclSuccess);
  CHECK(h_out == 3, "host AllReduce gave %d", h_out);
  if (DeviceCount() > 0) {
    infinicclStagingStats before, after;
    infinicclGetStagingStats(&before);
    RunAll(comm, true);
    StreamOrdered(comm);
    infinicclGetStagingStats(&after);
    // Nothing is staged on one rank: the calls NCCL cannot take are all
    // reductions (16-bit integers, integer Avg), and a one-rank reduction is
    // a device copy; everything else went to NCCL.
    const unsigned long long staged = after.staged_calls - before.staged_calls;
    CHECK(staged + (after.direct_calls - before.direct_calls) == 0,
          "%llu staged calls: device calls did not go to NCCL or a copy", staged);
    // A split keeps NCCL (ncclCommSplit): the child's device calls go to
    // NCCL as well, with the same exact values.
    infinicclComm_t child = nullptr;
    CHECK_RC(infinicclCommSplit(comm, 0, 0, &child), infinicclSuccess);
    if (child != nullptr) {
      infinicclGetStagingStats(&before);
      RunAll(child, true);
      infinicclGetStagingStats(&after);
      const unsigned long long split_staged = after.staged_calls - before.staged_calls;
      CHECK(split_staged + (after.direct_calls - before.direct_calls) == 0,
            "%llu staged calls on the split communicator: device calls did not go to NCCL",
            split_staged);
      CHECK_RC(infinicclCommDestroy(child), infinicclSuccess);
    }
  } else {
    std::printf("no GPU: CommInitAll made no NCCL communicator, host buffers over MPI\n");
  }
  CHECK_RC(infinicclCommDestroy(comm), infinicclSuccess);
  std::printf("nccl_device_test mpi: %ld failures\n", g_failures);
  const long failures = g_failures;
  if (infinicclFinalize() != infinicclSuccess) return 1;
  return failures == 0 ? 0 : 1;
}

// Stream capture. Through NCCL, a Broadcast and a one-rank AllReduce (a
// device copy) are recorded, and each launch of the graph gives the input
// of that launch exactly, nothing staged. Kept off NCCL (`refused`), the
// Broadcast is infinicclInvalidUsage saying why, the graph holds no node,
// and the communicator then runs the same call exactly.
int Capture(int argc, char **argv, bool refused) {
  if (refused) setenv("INFINICCL_BACKEND", "mpi", 1);
  if (infinicclInit(&argc, &argv) != infinicclSuccess) return 2;
  g_rank = 0;
  if (DeviceCount() == 0) {
    std::printf("no GPU: nothing to capture\n");
    return infinicclFinalize() == infinicclSuccess ? 0 : 1;
  }
  CUDA_OK(cudaSetDevice(0));
  infinicclComm_t comm = nullptr;
  CHECK_RC(infinicclCommInitAll(&comm, 0, nullptr), infinicclSuccess);
  if (comm == nullptr) return 2;
  const size_t n = size_t{1} << 20;
  PinnedBuf in(n * 4), out(n * 4), out_sum(n * 4);
  DeviceBuf send(n * 4), recv(n * 4), sum(n * 4);
  auto *hin = static_cast<int32_t *>(in.p);
  auto *hout = static_cast<int32_t *>(out.p), *hsum = static_cast<int32_t *>(out_sum.p);
  CUDA_OK(cudaMemset(recv.p, 0, n * 4));
  CUDA_OK(cudaMemset(sum.p, 0, n * 4));
  CUDA_OK(cudaDeviceSynchronize());
  cudaStream_t st = nullptr;
  CUDA_OK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  infinicclStagingStats before{}, after{};
  infinicclGetStagingStats(&before);
  CUDA_OK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
  const infinicclResult_t bcast =
      infinicclBroadcast(send.p, recv.p, n, infinicclInt32, 0, comm, st);
  const std::string why = SafeLastError();
  infinicclResult_t reduce = infinicclSuccess;
  if (!refused) {
    reduce = infinicclAllReduce(send.p, sum.p, n, infinicclInt32, infinicclSum, comm, st);
  }
  cudaGraph_t graph = nullptr;
  CUDA_OK(cudaStreamEndCapture(st, &graph));
  size_t nodes = 0;
  if (graph != nullptr) CUDA_OK(cudaGraphGetNodes(graph, nullptr, &nodes));
  if (refused) {
    CHECK(bcast == infinicclInvalidUsage, "Broadcast under capture off NCCL returned %d",
          static_cast<int>(bcast));
    CHECK(why.find("cannot be captured") != std::string::npos, "message: %s", why.c_str());
    CHECK(nodes == 0, "the refused call left %zu nodes in the graph", nodes);
  } else {
    CHECK(bcast == infinicclSuccess && reduce == infinicclSuccess,
          "under capture through NCCL: Broadcast %d, AllReduce %d (%s)",
          static_cast<int>(bcast), static_cast<int>(reduce), why.c_str());
    CHECK(nodes > 0, "nothing captured");
    cudaGraphExec_t exec = nullptr;
    CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
    for (int launch = 0; launch < 2 && exec != nullptr; ++launch) {
      for (size_t i = 0; i < n; ++i) hin[i] = static_cast<int32_t>((i * 7 + launch * 131) % 100003);
      CUDA_OK(cudaMemcpyAsync(send.p, in.p, n * 4, cudaMemcpyHostToDevice, st));
      CUDA_OK(cudaGraphLaunch(exec, st));
      CUDA_OK(cudaMemcpyAsync(out.p, recv.p, n * 4, cudaMemcpyDeviceToHost, st));
      CUDA_OK(cudaMemcpyAsync(out_sum.p, sum.p, n * 4, cudaMemcpyDeviceToHost, st));
      CUDA_OK(cudaStreamSynchronize(st));
      size_t wrong = 0;
      for (size_t i = 0; i < n; ++i) wrong += hout[i] != hin[i] || hsum[i] != hin[i];
      CHECK(wrong == 0, "launch %d: %zu of %zu wrong", launch, wrong, n);
    }
    if (exec != nullptr) CUDA_OK(cudaGraphExecDestroy(exec));
  }
  if (graph != nullptr) CUDA_OK(cudaGraphDestroy(graph));
  infinicclGetStagingStats(&after);
  CHECK(after.staged_calls == before.staged_calls, "a call under capture was staged");
  // Off capture, the same call: exact.
  for (size_t i = 0; i < n; ++i) hin[i] = static_cast<int32_t>(i % 1000) - 500;
  CUDA_OK(cudaMemcpyAsync(send.p, in.p, n * 4, cudaMemcpyHostToDevice, st));
  CHECK_RC(infinicclBroadcast(send.p, recv.p, n, infinicclInt32, 0, comm, st),
           infinicclSuccess);
  CUDA_OK(cudaMemcpyAsync(out.p, recv.p, n * 4, cudaMemcpyDeviceToHost, st));
  CUDA_OK(cudaStreamSynchronize(st));
  size_t wrong = 0;
  for (size_t i = 0; i < n; ++i) wrong += hout[i] != hin[i];
  CHECK(wrong == 0, "after the capture: %zu of %zu wrong", wrong, n);
  CUDA_OK(cudaStreamDestroy(st));
  CHECK_RC(infinicclCommDestroy(comm), infinicclSuccess);
  std::printf("nccl_device_test %s: %ld failures\n", refused ? "capture_refused" : "capture",
              g_failures);
  const long failures = g_failures;
  if (infinicclFinalize() != infinicclSuccess) return 1;
  return failures == 0 ? 0 : 1;
}

}  // namespace

int Revoke(int argc, char **argv) {
  if (infinicclInit(&argc, &argv) != infinicclSuccess) return 2;
  g_rank = 0;
  if (DeviceCount() == 0) {
    std::printf("no GPU: no NCCL communicator to revoke\n");
    return infinicclFinalize() == infinicclSuccess ? 0 : 1;
  }
  CUDA_OK(cudaSetDevice(0));
  infinicclComm_t comm = nullptr;
  CHECK_RC(infinicclCommInitAll(&comm, 0, nullptr), infinicclSuccess);
  if (comm == nullptr) return 2;
  cudaStream_t st = nullptr;
  CUDA_OK(cudaStreamCreate(&st));
  // A Broadcast at one rank goes to NCCL (a reduction would be a copy).
  CHECK_RC(RunOne(comm, st, 1, infinicclInt32, infinicclSum, 1021), infinicclSuccess);
  CHECK_RC(infinicclCommRevoke(comm, 0), infinicclSuccess);
  DeviceBuf buf(4096);
  CHECK_RC(infinicclBroadcast(buf.p, buf.p, 1021, infinicclInt32, 0, comm, st),
           infinicclRemoteError);
  CHECK(std::strstr(SafeLastError(), "revoked") != nullptr, "%s", SafeLastError());
  infinicclResult_t async = infinicclSuccess;
  CHECK_RC(infinicclCommGetAsyncError(comm, &async), infinicclSuccess);
  CHECK(async == infinicclRemoteError, "GetAsyncError after the revoke gave %d", int(async));
  CUDA_OK(cudaStreamSynchronize(st));
  CHECK_RC(infinicclCommDestroy(comm), infinicclSuccess);
  CUDA_OK(cudaStreamDestroy(st));
  std::printf("nccl_device_test revoke: %ld failures\n", g_failures);
  const long failures = g_failures;
  if (infinicclFinalize() != infinicclSuccess) return 1;
  return failures == 0 ? 0 : 1;
}

int main(int argc, char **argv) {
  setenv("INFINICCL_ABORT_ON_ERROR", "0", 0);
  const std::string mode = argc > 1 ? argv[1] : "bootstrap";
  if (mode == "capture" || mode == "capture_refused") {
    return Capture(argc, argv, mode == "capture_refused");
  }
  if (mode == "revoke") return Revoke(argc, argv);
  return mode == "mpi" ? UnderMpi(argc, argv) : Bootstrap();
}
