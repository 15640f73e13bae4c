// A program written the way upstream InfiniCCL's own examples are
// (examples/mpi/*.cc there): Init, GetRank, GetSize,
// CommInitAll(&comm, size, nullptr), each collective on buffers allocated
// through a small runtime shim, results copied back and checked, Destroy,
// Finalize. Nothing here is written the way we would call the library: it is
// the call sequence existing upstream programs make, which must run
// unchanged.
//
// usage: test_upstream_style host|sim
//   host: plain host buffers;
//   sim:  buffers of the EMULATED device (INFINICCL_DEVICE=sim), so the
//         device binding and the staged path see upstream's calls too.
#include <infiniccl/infiniccl.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "device/registry.h"

namespace {

#define CHECK_INFINI(call)                                                        \
  do {                                                                            \
    const infinicclResult_t rc_ = (call);                                         \
    if (rc_ != infinicclSuccess) {                                                \
      std::fprintf(stderr, "FAIL %s:%d %s: %s (%s)\n", __FILE__, __LINE__, #call, \
                   infinicclGetErrorString(rc_), infinicclGetLastError(nullptr)); \
      std::exit(1);                                                               \
    }                                                                             \
  } while (0)

// Upstream's Runtime<kDevType>: Malloc, Memcpy, Free. Host or the emulated
// device, chosen on the command line.
struct Rt {
  infiniccl::DeviceRuntime *dev = nullptr;  // nullptr: host memory
  void *Malloc(size_t bytes) {
    void *p = nullptr;
    if (dev == nullptr) return std::malloc(bytes);
    if (!dev->Malloc(&p, bytes).ok()) std::exit(2);
    return p;
  }
  void Free(void *p) {
    if (dev == nullptr) return std::free(p);
    (void)dev->Free(p);
  }
  void ToDevice(void *d, const float *h, size_t n) {
    if (dev == nullptr) return (void)std::memcpy(d, h, n * sizeof(float));
    using infiniccl::CopyKind;
    if (!dev->MemcpyAsync(d, h, n * sizeof(float), CopyKind::kHostToDevice, nullptr).ok() ||
        !dev->StreamSynchronize(nullptr).ok())
      std::exit(2);
  }
  std::vector<float> ToHost(const void *d, size_t n) {
    std::vector<float> h(n);
    if (dev == nullptr) {
      std::memcpy(h.data(), d, n * sizeof(float));
      return h;
    }
    using infiniccl::CopyKind;
    if (!dev->MemcpyAsync(h.data(), d, n * sizeof(float), CopyKind::kDeviceToHost, nullptr)
             .ok() ||
        !dev->StreamSynchronize(nullptr).ok())
      std::exit(2);
    return h;
  }
};

int g_failures = 0;

// Element i of rank r's contribution: small integers, exact in float.
float Value(int r, size_t i) { return static_cast<float>((r + 1) * 10 + static_cast<int>(i % 7)); }

void Expect(const char *what, int rank, const std::vector<float> &got,
            const std::vector<float> &want) {
  for (size_t i = 0; i < want.size(); ++i) {
    if (got[i] != want[i]) {
      std::fprintf(stderr, "FAIL rank %d %s: element %zu is %g, expected %g\n", rank, what, i,
                   static_cast<double>(got[i]), static_cast<double>(want[i]));
      ++g_failures;
      return;
    }
  }
}

}  // namespace

int main(int argc, char **argv) {
  const std::string mode = argc > 1 ? argv[1] : "host";
  CHECK_INFINI(infinicclInit(&argc, &argv));
  int rank, size;
  CHECK_INFINI(infinicclGetRank(&rank));
  CHECK_INFINI(infinicclGetSize(&size));

  Rt rt;
  if (mode == "sim") {
    rt.dev = infiniccl::DeviceRegistry::Get(infiniccl::DeviceKind::kSim);
    if (rt.dev == nullptr) {
      std::fprintf(stderr, "FAIL: sim mode needs INFINICCL_DEVICE=sim\n");
      return 1;
    }
  }

  // Exactly upstream's call: ndev is the world size, no device list.
  infinicclComm_t comm = nullptr;
  CHECK_INFINI(infinicclCommInitAll(&comm, size, nullptr));

  const size_t n = 1000;  // per rank, not a multiple of anything in particular
  const size_t total = n * static_cast<size_t>(size);
  float *d_send = static_cast<float *>(rt.Malloc(total * sizeof(float)));
  float *d_recv = static_cast<float *>(rt.Malloc(total * sizeof(float)));
  std::vector<float> h_send(total), want(total);
  auto upload_mine = [&](size_t count) {
    for (size_t i = 0; i < count; ++i) h_send[i] = Value(rank, i);
    rt.ToDevice(d_send, h_send.data(), count);
  };

  // AllReduce (sum), as upstream's all_reduce.cc.
  upload_mine(n);
  CHECK_INFINI(infinicclAllReduce(d_send, d_recv, n, infinicclFloat32, infinicclSum, comm,
                                  nullptr));
  want.assign(n, 0.0f);
  for (int r = 0; r < size; ++r)
    for (size_t i = 0; i < n; ++i) want[i] += Value(r, i);
  Expect("AllReduce", rank, rt.ToHost(d_recv, n), want);

  // Broadcast from the last rank, out of place.
  const int root = size - 1;
  upload_mine(n);
  CHECK_INFINI(
      infinicclBroadcast(d_send, d_recv, n, infinicclFloat32, root, comm, nullptr));
  for (size_t i = 0; i < n; ++i) want[i] = Value(root, i);
  Expect("Broadcast", rank, rt.ToHost(d_recv, n), want);

  // Reduce (max) to rank 0.
  upload_mine(n);
  CHECK_INFINI(infinicclReduce(d_send, d_recv, n, infinicclFloat32, infinicclMax, 0, comm,
                               nullptr));
  if (rank == 0) {
    for (size_t i = 0; i < n; ++i) want[i] = Value(size - 1, i);
    Expect("Reduce", rank, rt.ToHost(d_recv, n), want);
  }

  // AllGather: rank r's block at r*n.
  upload_mine(n);
  CHECK_INFINI(infinicclAllGather(d_send, d_recv, n, infinicclFloat32, comm, nullptr));
  want.assign(total, 0.0f);
  for (int r = 0; r < size; ++r)
    for (size_t i = 0; i < n; ++i) want[r * n + i] = Value(r, i);
  Expect("AllGather", rank, rt.ToHost(d_recv, total), want);

  // ReduceScatter (sum): each rank sends size*n, receives its n.
  upload_mine(total);
  CHECK_INFINI(infinicclReduceScatter(d_send, d_recv, n, infinicclFloat32, infinicclSum,
                                      comm, nullptr));
  {
    std::vector<float> mine(n, 0.0f);
    for (int r = 0; r < size; ++r)
      for (size_t i = 0; i < n; ++i) mine[i] += Value(r, rank * n + i);
    Expect("ReduceScatter", rank, rt.ToHost(d_recv, n), mine);
  }

  // AllToAll: block j of rank r goes to rank j.
  upload_mine(total);
  CHECK_INFINI(infinicclAllToAll(d_send, d_recv, n, infinicclFloat32, comm, nullptr));
  for (int r = 0; r < size; ++r)
    for (size_t i = 0; i < n; ++i) want[r * n + i] = Value(r, rank * n + i);
  Expect("AllToAll", rank, rt.ToHost(d_recv, total), want);

  // Gather to rank 0, Scatter from rank 0.
  upload_mine(n);
  CHECK_INFINI(infinicclGather(d_send, d_recv, n, infinicclFloat32, 0, comm, nullptr));
  if (rank == 0) {
    for (int r = 0; r < size; ++r)
      for (size_t i = 0; i < n; ++i) want[r * n + i] = Value(r, i);
    Expect("Gather", rank, rt.ToHost(d_recv, total), want);
  }
  upload_mine(total);
  CHECK_INFINI(infinicclScatter(d_send, d_recv, n, infinicclFloat32, 0, comm, nullptr));
  {
    std::vector<float> mine(n);
    for (size_t i = 0; i < n; ++i) mine[i] = Value(0, rank * n + i);
    Expect("Scatter", rank, rt.ToHost(d_recv, n), mine);
  }

  // Send/Recv between pairs (0->1, 2->3), as upstream's send_recv.cc.
  if (size > 1 && !(size % 2 == 1 && rank == size - 1)) {
    upload_mine(n);
    if (rank % 2 == 0) {
      CHECK_INFINI(infinicclSend(d_send, n, infinicclFloat32, rank + 1, comm, nullptr));
    } else {
      CHECK_INFINI(infinicclRecv(d_recv, n, infinicclFloat32, rank - 1, comm, nullptr));
      std::vector<float> theirs(n);
      for (size_t i = 0; i < n; ++i) theirs[i] = Value(rank - 1, i);
      Expect("Send/Recv", rank, rt.ToHost(d_recv, n), theirs);
    }
  }

  rt.Free(d_send);
  rt.Free(d_recv);
  CHECK_INFINI(infinicclCommDestroy(comm));
  CHECK_INFINI(infinicclFinalize());
  if (g_failures == 0) std::printf("rank %d of %d (%s): upstream-style program OK\n", rank, size, mode.c_str());
  return g_failures == 0 ? 0 : 1;
}
