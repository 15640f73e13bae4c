// The CUDA DeviceRuntime (CudaLikeRuntime over the CUDA runtime API) against
// the real libcudart. Without a GPU (CI, build machines with no driver) it
// must report no device, call every pointer host memory and fail device work
// with a status; with a GPU it must classify each kind of memory, allocate,
// copy exactly and order streams with events. Each half skips on the other
// kind of machine. Built only when the CUDA runtime is (WITH_NVIDIA).
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <unistd.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "device/device_runtime.h"
#include "device/registry.h"

namespace infiniccl {
namespace {

// What the CUDA runtime itself says, asked directly: the expected answer.
int DirectDeviceCount() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

// A byte pattern that differs at every offset a misplaced copy could land on.
std::vector<uint8_t> Pattern(size_t bytes, uint32_t seed) {
  std::vector<uint8_t> v(bytes);
  for (size_t i = 0; i < bytes; ++i)
    v[i] = static_cast<uint8_t>((i * 131 + seed) ^ (i >> 9));
  return v;
}

// GTEST_SKIP returns from the function it is written in: these stay macros.
#define REQUIRE_GPU() \
  if (rt_->DeviceCount() == 0) GTEST_SKIP() << "no CUDA device on this machine"
#define REQUIRE_NO_GPU() \
  if (rt_->DeviceCount() > 0) GTEST_SKIP() << "a CUDA device is present"

class CudaRuntimeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { rt_ = MakeCudaRuntime().release(); }
  static void TearDownTestSuite() {
    delete rt_;
    rt_ = nullptr;
  }
  static PointerInfo ClassifyOk(const void *ptr) {
    PointerInfo info;
    Status st = rt_->Classify(ptr, &info);
    EXPECT_TRUE(st.ok()) << st.message();
    return info;
  }
  static void ExpectHost(const void *ptr) {
    PointerInfo info = ClassifyOk(ptr);
    EXPECT_EQ(info.space, MemorySpace::kHost);
    EXPECT_EQ(info.device, -1);
  }

  static DeviceRuntime *rt_;
};
DeviceRuntime *CudaRuntimeTest::rt_ = nullptr;

// ---- Everywhere ----------------------------------------------------------

TEST_F(CudaRuntimeTest, IdentifiesItself) {
  EXPECT_EQ(rt_->kind(), DeviceKind::kCuda);
  EXPECT_FALSE(rt_->emulated());
  int version = 0;
  ASSERT_EQ(cudaRuntimeGetVersion(&version), cudaSuccess);
  const std::string expected = "cuda (runtime " + std::to_string(version / 1000) + "." +
                               std::to_string((version % 1000) / 10) + ")";
  EXPECT_EQ(rt_->description(), expected);
}

TEST_F(CudaRuntimeTest, DeviceCountMatchesTheRuntime) {
  EXPECT_EQ(rt_->DeviceCount(), DirectDeviceCount());
  EXPECT_EQ(rt_->DeviceCount(), rt_->DeviceCount());
}

TEST_F(CudaRuntimeTest, OrdinaryHostMemoryIsHost) {
  int on_stack = 7;
  std::vector<double> on_heap(1 << 20, 1.0);  // large: mmap'ed, not from the arena
  auto small = std::make_unique<char[]>(16);
  static const char kInData[] = "static";
  for (int i = 0; i < 3; ++i) {  // repeated: no state left behind by a lookup
    ExpectHost(&on_stack);
    ExpectHost(on_heap.data());
    ExpectHost(on_heap.data() + on_heap.size() / 2);
    ExpectHost(small.get());
    ExpectHost(kInData);
  }
  ExpectHost(nullptr);
  // Without a driver cudaGetLastError keeps answering the failed
  // initialisation, so only a working runtime can show a leftover error.
  if (rt_->DeviceCount() > 0) {
    EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "Classify left a CUDA error behind";
  }
}

TEST_F(CudaRuntimeTest, NullFreesAreNoOps) {
  EXPECT_TRUE(rt_->Free(nullptr).ok());
  EXPECT_TRUE(rt_->FreeHost(nullptr).ok());
  EXPECT_TRUE(rt_->StreamDestroy(nullptr).ok());
  EXPECT_TRUE(rt_->EventDestroy(nullptr).ok());
  char host[4] = {};
  EXPECT_TRUE(rt_->MemcpyAsync(host, host, 0, CopyKind::kHostToDevice, nullptr).ok());
}

// ---- Without a GPU -------------------------------------------------------

TEST_F(CudaRuntimeTest, NoGpuDeviceWorkFailsWithAStatus) {
  REQUIRE_NO_GPU();
  EXPECT_EQ(rt_->DeviceCount(), 0);

  void *ptr = reinterpret_cast<void *>(0x1);
  Status st = rt_->Malloc(&ptr, 1 << 20);
  EXPECT_EQ(st.code(), infinicclSystemError);
  EXPECT_NE(st.message().find("cudaMalloc"), std::string::npos) << st.message();
  EXPECT_EQ(ptr, nullptr);

  ptr = reinterpret_cast<void *>(0x1);
  st = rt_->MallocHost(&ptr, 1 << 20);
  EXPECT_EQ(st.code(), infinicclNotSupported) << st.message();
  EXPECT_NE(st.message().find("cudaMallocHost"), std::string::npos) << st.message();
  EXPECT_EQ(ptr, nullptr);

  int device = 0;
  EXPECT_EQ(rt_->GetDevice(&device).code(), infinicclSystemError);
  EXPECT_EQ(rt_->SetDevice(0).code(), infinicclSystemError);
  void *stream = reinterpret_cast<void *>(0x1);
  EXPECT_EQ(rt_->StreamCreate(&stream).code(), infinicclSystemError);
  EXPECT_EQ(stream, nullptr);
  void *event = reinterpret_cast<void *>(0x1);
  EXPECT_EQ(rt_->EventCreate(&event).code(), infinicclSystemError);
  EXPECT_EQ(event, nullptr);
  char a[8] = {}, b[8] = {};
  EXPECT_EQ(rt_->MemcpyAsync(a, b, sizeof(a), CopyKind::kHostToDevice, nullptr).code(),
            infinicclSystemError);
  EXPECT_EQ(rt_->StreamSynchronize(nullptr).code(), infinicclSystemError);
}

// ---- With a GPU ----------------------------------------------------------

TEST_F(CudaRuntimeTest, GpuDeviceMemoryIsDevice) {
  REQUIRE_GPU();
  int current = -1;
  ASSERT_TRUE(rt_->GetDevice(&current).ok());
  void *dev = nullptr;
  ASSERT_TRUE(rt_->Malloc(&dev, 1 << 20).ok());
  ASSERT_NE(dev, nullptr);
  for (size_t offset : {size_t{0}, size_t{4096}, size_t{(1 << 20) - 1}}) {
    PointerInfo info = ClassifyOk(static_cast<char *>(dev) + offset);
    EXPECT_EQ(info.space, MemorySpace::kDevice) << "offset " << offset;
    EXPECT_EQ(info.kind, DeviceKind::kCuda);
    EXPECT_EQ(info.device, current);
  }
  EXPECT_TRUE(rt_->Free(dev).ok());
}

TEST_F(CudaRuntimeTest, GpuMemoryOfAnotherDeviceIsThatDevice) {
  REQUIRE_GPU();
  if (rt_->DeviceCount() < 2) GTEST_SKIP() << "needs two devices";
  int current = -1;
  ASSERT_TRUE(rt_->GetDevice(&current).ok());
  const int other = current == 0 ? 1 : 0;
  void *dev = nullptr;
  ASSERT_TRUE(rt_->SetDevice(other).ok());
  ASSERT_TRUE(rt_->Malloc(&dev, 1 << 20).ok());
  ASSERT_TRUE(rt_->SetDevice(current).ok());
  PointerInfo info = ClassifyOk(dev);
  EXPECT_EQ(info.space, MemorySpace::kDevice);
  EXPECT_EQ(info.device, other);
  EXPECT_TRUE(rt_->Free(dev).ok());
}

// Host-only programs on a GPU node must not pay for a CUDA context (hundreds
// of MiB of device memory per rank) just because Classify asked about a host
// pointer. Only meaningful as the first CUDA work of a process: ctest runs it
// alone (cuda_runtime_test_fresh_process). Asks the driver, loaded by the
// runtime itself, whether the primary context exists.
TEST_F(CudaRuntimeTest, GpuFreshProcessHostClassifyCreatesNoContext) {
  if (::testing::UnitTest::GetInstance()->test_to_run_count() != 1) {
    GTEST_SKIP() << "run alone: --gtest_filter=*FreshProcess*";
  }
  REQUIRE_GPU();
  using GetStateFn = int (*)(int, unsigned *, int *);  // cuDevicePrimaryCtxGetState
  void *driver = dlopen("libcuda.so.1", RTLD_NOW);
  ASSERT_NE(driver, nullptr) << dlerror();
  auto get_state =
      reinterpret_cast<GetStateFn>(dlsym(driver, "cuDevicePrimaryCtxGetState"));
  ASSERT_NE(get_state, nullptr);

  std::vector<char> heap(1 << 20);
  int on_stack = 0;
  for (int i = 0; i < 3; ++i) {
    ExpectHost(heap.data());
    ExpectHost(&on_stack);
  }
  for (int device = 0; device < rt_->DeviceCount(); ++device) {
    unsigned flags = 0;
    int active = -1;
    ASSERT_EQ(get_state(device, &flags, &active), 0);
    EXPECT_EQ(active, 0)
        << "classifying host pointers created the primary context of device " << device;
  }
  dlclose(driver);
}

TEST_F(CudaRuntimeTest, GpuPinnedAndPageableMemoryAreHost) {
  REQUIRE_GPU();
  void *pinned = nullptr;
  ASSERT_TRUE(rt_->MallocHost(&pinned, 1 << 20).ok());
  ASSERT_NE(pinned, nullptr);
  ExpectHost(pinned);
  ExpectHost(static_cast<char *>(pinned) + 12345);
  EXPECT_TRUE(rt_->FreeHost(pinned).ok());
  std::vector<char> pageable(1 << 20);
  ExpectHost(pageable.data());
}

TEST_F(CudaRuntimeTest, GpuManagedMemoryIsManaged) {
  REQUIRE_GPU();
  int current = -1;
  ASSERT_TRUE(rt_->GetDevice(&current).ok());
  void *managed = nullptr;
  ASSERT_EQ(cudaMallocManaged(&managed, 1 << 20, cudaMemAttachGlobal), cudaSuccess);
  PointerInfo info = ClassifyOk(managed);
  EXPECT_EQ(info.space, MemorySpace::kManaged);
  EXPECT_EQ(info.kind, DeviceKind::kCuda);
  EXPECT_EQ(info.device, current);
  EXPECT_EQ(cudaFree(managed), cudaSuccess);
}

TEST_F(CudaRuntimeTest, GpuCopiesRoundTripExactly) {
  REQUIRE_GPU();
  // Odd size, so a copy rounded to words or pages would show.
  const size_t bytes = (3 << 20) + 5;
  const std::vector<uint8_t> expected = Pattern(bytes, 7);
  void *stream = nullptr, *dev = nullptr, *pinned = nullptr;
  ASSERT_TRUE(rt_->StreamCreate(&stream).ok());
  ASSERT_TRUE(rt_->Malloc(&dev, bytes).ok());
  ASSERT_TRUE(rt_->MallocHost(&pinned, bytes).ok());

  // Pinned -> device -> pageable, on a created stream.
  std::memcpy(pinned, expected.data(), bytes);
  std::vector<uint8_t> back(bytes, 0);
  ASSERT_TRUE(rt_->MemcpyAsync(dev, pinned, bytes, CopyKind::kHostToDevice, stream).ok());
  ASSERT_TRUE(
      rt_->MemcpyAsync(back.data(), dev, bytes, CopyKind::kDeviceToHost, stream).ok());
  ASSERT_TRUE(rt_->StreamSynchronize(stream).ok());
  EXPECT_EQ(std::memcmp(back.data(), expected.data(), bytes), 0);

  // Pageable -> device -> pinned, on the default stream (nullptr).
  const std::vector<uint8_t> second = Pattern(bytes, 99);
  std::memset(pinned, 0, bytes);
  ASSERT_TRUE(
      rt_->MemcpyAsync(dev, second.data(), bytes, CopyKind::kHostToDevice, nullptr).ok());
  ASSERT_TRUE(
      rt_->MemcpyAsync(pinned, dev, bytes, CopyKind::kDeviceToHost, nullptr).ok());
  ASSERT_TRUE(rt_->StreamSynchronize(nullptr).ok());
  EXPECT_EQ(std::memcmp(pinned, second.data(), bytes), 0);

  EXPECT_TRUE(rt_->FreeHost(pinned).ok());
  EXPECT_TRUE(rt_->Free(dev).ok());
  EXPECT_TRUE(rt_->StreamDestroy(stream).ok());
}

TEST_F(CudaRuntimeTest, GpuEventsOrderOneStreamAfterAnother) {
  REQUIRE_GPU();
  const size_t bytes = 64 << 20;  // long enough that an unordered read would see zeros
  const std::vector<uint8_t> expected = Pattern(bytes, 3);
  void *producer = nullptr, *consumer = nullptr, *event = nullptr;
  void *dev = nullptr, *src = nullptr, *dst = nullptr;
  ASSERT_TRUE(rt_->StreamCreate(&producer).ok());
  ASSERT_TRUE(rt_->StreamCreate(&consumer).ok());
  ASSERT_TRUE(rt_->EventCreate(&event).ok());
  ASSERT_TRUE(rt_->Malloc(&dev, bytes).ok());
  ASSERT_TRUE(rt_->MallocHost(&src, bytes).ok());
  ASSERT_TRUE(rt_->MallocHost(&dst, bytes).ok());
  std::memcpy(src, expected.data(), bytes);
  std::memset(dst, 0, bytes);

  ASSERT_TRUE(rt_->MemcpyAsync(dev, src, bytes, CopyKind::kHostToDevice, producer).ok());
  ASSERT_TRUE(rt_->EventRecord(event, producer).ok());
  ASSERT_TRUE(rt_->StreamWaitEvent(consumer, event).ok());
  ASSERT_TRUE(rt_->MemcpyAsync(dst, dev, bytes, CopyKind::kDeviceToHost, consumer).ok());
  ASSERT_TRUE(rt_->StreamSynchronize(consumer).ok());  // only the consumer
  EXPECT_EQ(std::memcmp(dst, expected.data(), bytes), 0);
  EXPECT_TRUE(rt_->EventSynchronize(event).ok());

  EXPECT_TRUE(rt_->FreeHost(dst).ok());
  EXPECT_TRUE(rt_->FreeHost(src).ok());
  EXPECT_TRUE(rt_->Free(dev).ok());
  EXPECT_TRUE(rt_->EventDestroy(event).ok());
  EXPECT_TRUE(rt_->StreamDestroy(consumer).ok());
  EXPECT_TRUE(rt_->StreamDestroy(producer).ok());
}

// The capture query: a stream under cudaStreamBeginCapture is capturing,
// the same stream after cudaStreamEndCapture and another stream are not.
// Without a device the query answers false without asking the runtime.
TEST_F(CudaRuntimeTest, StreamIsCapturingFollowsCudaStreamCapture) {
  bool capturing = true;
  if (rt_->DeviceCount() == 0) {
    ASSERT_TRUE(rt_->StreamIsCapturing(nullptr, &capturing).ok());
    EXPECT_FALSE(capturing);
    return;
  }
  void *s = nullptr, *other = nullptr;
  ASSERT_TRUE(rt_->StreamCreate(&s).ok());
  ASSERT_TRUE(rt_->StreamCreate(&other).ok());
  ASSERT_TRUE(rt_->StreamIsCapturing(s, &capturing).ok());
  EXPECT_FALSE(capturing);
  ASSERT_EQ(cudaStreamBeginCapture(static_cast<cudaStream_t>(s),
                                   cudaStreamCaptureModeThreadLocal),
            cudaSuccess);
  ASSERT_TRUE(rt_->StreamIsCapturing(s, &capturing).ok());
  EXPECT_TRUE(capturing);
  ASSERT_TRUE(rt_->StreamIsCapturing(other, &capturing).ok());
  EXPECT_FALSE(capturing);
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(static_cast<cudaStream_t>(s), &graph), cudaSuccess);
  ASSERT_TRUE(rt_->StreamIsCapturing(s, &capturing).ok());
  EXPECT_FALSE(capturing);
  EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
  EXPECT_TRUE(rt_->StreamDestroy(other).ok());
  EXPECT_TRUE(rt_->StreamDestroy(s).ok());
}

// The progress engine's gate on a real stream, by whichever mechanism this
// process uses (cuStreamWaitValue32 by default where the driver allows it;
// cuda_checks.sh runs this again with INFINICCL_DEVICE_WAIT=host_func): a
// copy queued after the wait does not run before the gate opens, then does,
// and a legacy default stream held by a gate does not block a non-blocking
// stream's copies (the engine's own).
TEST_F(CudaRuntimeTest, GpuGateHoldsTheStreamUntilOpened) {
  REQUIRE_GPU();
  const char *mechanism = rt_->GateMechanism();
  ASSERT_NE(mechanism, nullptr);
  std::printf("gate mechanism: %s\n", mechanism);
  void *gate = nullptr, *engine = nullptr, *host = nullptr, *dev = nullptr;
  ASSERT_TRUE(rt_->GateCreate(&gate).ok());
  ASSERT_TRUE(rt_->StreamCreateNonBlocking(&engine).ok());
  ASSERT_TRUE(rt_->MallocHost(&host, 4096).ok());
  ASSERT_TRUE(rt_->Malloc(&dev, 4096).ok());
  const std::vector<uint8_t> expected = Pattern(4096, 5);
  std::memset(host, 0, 4096);
  // On the legacy default stream (nullptr), as a user passing stream 0.
  ASSERT_TRUE(rt_->GateWait(nullptr, gate, 1).ok());
  ASSERT_TRUE(rt_->MemcpyAsync(host, dev, 4096, CopyKind::kDeviceToHost, nullptr).ok());
  // The engine's stream is not held: its copy completes meanwhile.
  std::vector<uint8_t> staged = expected;
  ASSERT_TRUE(rt_->MemcpyAsync(dev, staged.data(), 4096, CopyKind::kHostToDevice, engine).ok());
  ASSERT_TRUE(rt_->StreamSynchronize(engine).ok());
  usleep(100000);
  EXPECT_EQ(cudaStreamQuery(nullptr), cudaErrorNotReady) << "the gate did not hold stream 0";
  cudaGetLastError();
  rt_->GateOpen(gate, 1);
  ASSERT_TRUE(rt_->StreamSynchronize(nullptr).ok());
  EXPECT_EQ(std::memcmp(host, expected.data(), 4096), 0);
  EXPECT_TRUE(rt_->Free(dev).ok());
  EXPECT_TRUE(rt_->FreeHost(host).ok());
  EXPECT_TRUE(rt_->StreamDestroy(engine).ok());
  EXPECT_TRUE(rt_->GateDestroy(gate).ok());
}

// What the emulated device's strict mode assumes of cudaMallocHost and
// cudaMalloc (INFINICCL_SIM_IMPLICIT_SYNC: they may wait for the device):
// called while a gate holds a stream, they return, before or after the gate
// opens (a helper opens it after 2 s), and the log says which. The library
// never allocates pinned or device memory on an engine's thread either way.
// cudaHostRegister too: the shared-memory segment is page-locked at the
// first device call through it, on the caller's thread or the engine's
// (ShmBackend::RegisterWith), where the emulated device assumes no wait.
TEST_F(CudaRuntimeTest, GpuAllocationsWhileAGateIsClosed) {
  REQUIRE_GPU();
  void *gate = nullptr, *stream = nullptr;
  ASSERT_TRUE(rt_->GateCreate(&gate).ok());
  ASSERT_TRUE(rt_->StreamCreate(&stream).ok());
  ASSERT_TRUE(rt_->GateWait(stream, gate, 1).ok());
  std::atomic<bool> opened{false};
  std::thread opener([&] {
    usleep(2000000);
    opened = true;
    rt_->GateOpen(gate, 1);
  });
  void *host = nullptr, *dev = nullptr;
  ASSERT_TRUE(rt_->MallocHost(&host, 1 << 20).ok());
  const bool host_waited = opened.load();
  ASSERT_TRUE(rt_->Malloc(&dev, 1 << 20).ok());
  const bool dev_waited = opened.load();
  std::vector<char> pageable(size_t{4} << 20);
  ASSERT_TRUE(rt_->HostRegister(pageable.data(), pageable.size()).ok());
  const bool register_waited = opened.load();
  std::printf("cudaMallocHost while a gate is closed: %s; cudaMalloc: %s; "
              "cudaHostRegister: %s\n",
              host_waited ? "waited for the gate" : "returned at once",
              dev_waited ? "waited for the gate" : "returned at once",
              register_waited ? "waited for the gate" : "returned at once");
  opener.join();
  EXPECT_TRUE(rt_->HostUnregister(pageable.data()).ok());
  ASSERT_TRUE(rt_->StreamSynchronize(stream).ok());
  EXPECT_TRUE(rt_->Free(dev).ok());
  EXPECT_TRUE(rt_->FreeHost(host).ok());
  EXPECT_TRUE(rt_->StreamDestroy(stream).ok());
  EXPECT_TRUE(rt_->GateDestroy(gate).ok());
}

TEST_F(CudaRuntimeTest, GpuErrorsBecomeStatusesAndDoNotStick) {
  REQUIRE_GPU();
  void *ptr = reinterpret_cast<void *>(0x1);
  Status st = rt_->Malloc(&ptr, size_t{1} << 60);  // more than any GPU has
  EXPECT_EQ(st.code(), infinicclSystemError);
  EXPECT_NE(st.message().find("cudaMalloc"), std::string::npos) << st.message();
  EXPECT_EQ(ptr, nullptr);

  st = rt_->SetDevice(rt_->DeviceCount());  // one past the last ordinal
  EXPECT_EQ(st.code(), infinicclSystemError);
  EXPECT_NE(st.message().find("cudaSetDevice"), std::string::npos) << st.message();

  // The failures left nothing behind: the next calls work.
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  ASSERT_TRUE(rt_->Malloc(&ptr, 4096).ok());
  EXPECT_EQ(ClassifyOk(ptr).space, MemorySpace::kDevice);
  EXPECT_TRUE(rt_->Free(ptr).ok());
  int device = -1;
  EXPECT_TRUE(rt_->GetDevice(&device).ok());
  EXPECT_TRUE(rt_->SetDevice(device).ok());
}

}  // namespace
}  // namespace infiniccl
