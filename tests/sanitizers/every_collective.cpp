// Every collective once at 2+ ranks, on host buffers and on EMULATED device
// buffers (staged, pipelined with a small chunk), results checked; plus a
// second communicator created and destroyed. Small on purpose: it is the
// program scripts/valgrind.sh runs under memcheck, where every call costs
// tens of times its native time.
#include <infiniccl/infiniccl.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "device/registry.h"

namespace {

constexpr size_t kCount = 3000;  // > one 4 KiB pipeline chunk of int32
int g_rank = 0, g_n = 1, g_failures = 0;
infiniccl::DeviceRuntime *g_dev = nullptr;

void Expect(bool ok, const char *what) {
  if (ok) return;
  ++g_failures;
  std::fprintf(stderr, "[rank %d] FAIL %s: %s\n", g_rank, what,
               infinicclGetLastError(nullptr));
}

// Host vectors mirrored in device memory when `device` is set.
struct Buf {
  std::vector<int> host;
  void *dev = nullptr;
  bool device;
  Buf(size_t n, bool d) : host(n, -1), device(d) {
    if (device && !g_dev->Malloc(&dev, n * sizeof(int)).ok()) dev = nullptr;
  }
  ~Buf() {
    if (dev != nullptr) g_dev->Free(dev);
  }
  void *ptr() { return device ? dev : host.data(); }
  void Up() {
    if (device)
      g_dev->MemcpyAsync(dev, host.data(), host.size() * sizeof(int),
                         infiniccl::CopyKind::kHostToDevice, nullptr);
    if (device) g_dev->StreamSynchronize(nullptr);
  }
  void Down() {
    if (device)
      g_dev->MemcpyAsync(host.data(), dev, host.size() * sizeof(int),
                         infiniccl::CopyKind::kDeviceToHost, nullptr);
    if (device) g_dev->StreamSynchronize(nullptr);
  }
};

int V(int rank, size_t i) {
  return rank * 100000 + static_cast<int>(i);
}

void All(infinicclComm_t comm, bool device) {
  const int me = g_rank, n = g_n;
  const size_t N = kCount * n;
  const infinicclDataType_t I32 = infinicclInt32;
  Buf s(N, device), r(N, device);
  auto fill = [&](size_t elems) {
    for (size_t i = 0; i < elems; ++i) s.host[i] = V(me, i);
    s.Up();
  };
  // AllReduce / Reduce / ReduceScatter: sum over ranks of V(rank, i).
  auto sum = [&](size_t i) {
    long t = 0;
    for (int k = 0; k < n; ++k) t += V(k, i);
    return static_cast<int>(t);
  };
  fill(kCount);
  Expect(
      infinicclAllReduce(s.ptr(), r.ptr(), kCount, I32, infinicclSum, comm, nullptr) == 0,
      "AllReduce");
  r.Down();
  for (size_t i = 0; i < kCount; ++i) Expect(r.host[i] == sum(i), "AllReduce value");

  Expect(infinicclReduce(s.ptr(), r.ptr(), kCount, I32, infinicclSum, n - 1, comm,
                         nullptr) == 0,
         "Reduce");
  r.Down();
  if (me == n - 1)
    for (size_t i = 0; i < kCount; ++i) Expect(r.host[i] == sum(i), "Reduce value");

  fill(N);
  Expect(infinicclReduceScatter(s.ptr(), r.ptr(), kCount, I32, infinicclSum, comm,
                                nullptr) == 0,
         "ReduceScatter");
  r.Down();
  for (size_t i = 0; i < kCount; ++i)
    Expect(r.host[i] == sum(me * kCount + i), "RS value");

  fill(kCount);
  Expect(infinicclBroadcast(s.ptr(), r.ptr(), kCount, I32, 0, comm, nullptr) == 0,
         "Broadcast");
  r.Down();
  for (size_t i = 0; i < kCount; ++i) Expect(r.host[i] == V(0, i), "Broadcast value");

  Expect(infinicclBcast(s.ptr(), kCount, I32, n - 1, comm, nullptr) == 0, "Bcast");
  s.Down();
  for (size_t i = 0; i < kCount; ++i) Expect(s.host[i] == V(n - 1, i), "Bcast value");

  fill(kCount);
  Expect(infinicclAllGather(s.ptr(), r.ptr(), kCount, I32, comm, nullptr) == 0,
         "AllGather");
  r.Down();
  for (size_t i = 0; i < N; ++i)
    Expect(r.host[i] == V(int(i / kCount), i % kCount), "AG value");

  Expect(infinicclGather(s.ptr(), r.ptr(), kCount, I32, 0, comm, nullptr) == 0, "Gather");
  r.Down();
  if (me == 0)
    for (size_t i = 0; i < N; ++i)
      Expect(r.host[i] == V(int(i / kCount), i % kCount), "Gather value");

  fill(N);
  Expect(infinicclScatter(s.ptr(), r.ptr(), kCount, I32, 0, comm, nullptr) == 0,
         "Scatter");
  r.Down();
  for (size_t i = 0; i < kCount; ++i)
    Expect(r.host[i] == V(0, me * kCount + i), "Scatter value");

  Expect(infinicclAllToAll(s.ptr(), r.ptr(), kCount, I32, comm, nullptr) == 0,
         "AllToAll");
  r.Down();
  for (size_t i = 0; i < N; ++i)
    Expect(r.host[i] == V(int(i / kCount), me * kCount + i % kCount), "AllToAll value");

  if (n >= 2 && me < 2) {
    const int peer = 1 - me;
    fill(kCount);
    if (me == 0) {
      Expect(infinicclSend(s.ptr(), kCount, I32, peer, comm, nullptr) == 0, "Send");
    } else {
      Expect(infinicclRecv(r.ptr(), kCount, I32, peer, comm, nullptr) == 0, "Recv");
      r.Down();
      for (size_t i = 0; i < kCount; ++i) Expect(r.host[i] == V(0, i), "Recv value");
    }
  }
}

}  // namespace

int main(int argc, char **argv) {
  if (infinicclInit(&argc, &argv) != infinicclSuccess) return 2;
  infinicclComm_t comm = nullptr, extra = nullptr;
  Expect(infinicclCommInitAll(&comm, 0, nullptr) == 0, "CommInitAll");
  infinicclCommUserRank(comm, &g_rank);
  infinicclCommCount(comm, &g_n);
  g_dev = &infiniccl::DeviceRegistry::EnableSim();
  All(comm, false);
  All(comm, true);
  Expect(infinicclCommInitAll(&extra, 0, nullptr) == 0, "second CommInitAll");
  All(extra, false);
  Expect(infinicclCommDestroy(extra) == 0, "CommDestroy");
  infinicclStagingStats st{};
  Expect(infinicclGetStagingStats(&st) == 0 && st.staged_calls > 0,
         "staged calls counted");
  Expect(infinicclMemTrim() == 0, "MemTrim");
  Expect(infinicclCommDestroy(comm) == 0, "CommDestroy");
  Expect(infinicclFinalize() == 0, "Finalize");
  if (g_rank == 0) std::printf("%s\n", g_failures ? "FAILED" : "PASS");
  return g_failures ? 1 : 0;
}
