// The emulated device's throttled copies (no MPI): a copy never completes
// before its due time (latency + bytes / bandwidth from when its copy
// thread starts it), whether the wait is all spin (shorter than the spin
// margin) or sleep then spin; back-to-back copies each wait their own time;
// the data arrives; and Synchronize from several threads at once returns.
// Only lower bounds on time are asserted: they hold however loaded the
// machine is.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "device/sim/sim_runtime.h"

using namespace infiniccl;
using Clock = std::chrono::steady_clock;

namespace {

double ElapsedUs(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

struct Buffers {
  SimRuntime *rt;
  void *dev = nullptr, *host = nullptr;
  Buffers(SimRuntime *r, size_t bytes) : rt(r) {
    EXPECT_TRUE(rt->Malloc(&dev, bytes).ok());
    EXPECT_TRUE(rt->MallocHost(&host, bytes).ok());
  }
  ~Buffers() {
    (void)rt->Free(dev);
    (void)rt->FreeHost(host);
  }
};

}  // namespace

// Waits below the spin margin (all spin) and above it (sleep, then spin),
// each direction, on the default stream and on a created one.
TEST(SimCopy, ThrottledCopyNeverEndsEarly) {
  struct Case {
    size_t bytes;
    double gbps, latency_us;
  };
  const Case cases[] = {
      {4096, 0, 20},           // 20 us: spin only
      {4096, 0, 120},          // just under the margin
      {1 << 20, 2, 0},         // 524 us: sleep, then spin
      {1 << 20, 13, 4},        // the H200 calibration: 85 us
      {256 << 10, 1, 500},     // 762 us
  };
  for (const Case &c : cases) {
    SimRuntime rt(1, c.gbps, true, c.latency_us);
    Buffers b(&rt, c.bytes);
    void *stream = nullptr;
    ASSERT_TRUE(rt.StreamCreate(&stream).ok());
    const double due_us =
        c.latency_us + (c.gbps > 0 ? c.bytes / (c.gbps * 1e3) : 0);
    for (void *s : {static_cast<void *>(nullptr), stream}) {
      for (CopyKind kind : {CopyKind::kDeviceToHost, CopyKind::kHostToDevice}) {
        void *dst = kind == CopyKind::kDeviceToHost ? b.host : b.dev;
        const void *src = kind == CopyKind::kDeviceToHost ? b.dev : b.host;
        const auto t0 = Clock::now();
        ASSERT_TRUE(rt.MemcpyAsync(dst, src, c.bytes, kind, s).ok());
        ASSERT_TRUE(rt.StreamSynchronize(s).ok());
        EXPECT_GE(ElapsedUs(t0), due_us)
            << c.bytes << " bytes at " << c.gbps << " GB/s + " << c.latency_us << " us";
      }
    }
    ASSERT_TRUE(rt.StreamDestroy(stream).ok());
  }
}

// An event recorded behind a throttled copy completes no earlier either.
TEST(SimCopy, EventBehindThrottledCopyNeverEndsEarly) {
  SimRuntime rt(1, 0, true, 300);
  Buffers b(&rt, 4096);
  void *stream = nullptr, *event = nullptr;
  ASSERT_TRUE(rt.StreamCreate(&stream).ok());
  ASSERT_TRUE(rt.EventCreate(&event).ok());
  const auto t0 = Clock::now();
  ASSERT_TRUE(rt.MemcpyAsync(b.host, b.dev, 4096, CopyKind::kDeviceToHost, stream).ok());
  ASSERT_TRUE(rt.EventRecord(event, stream).ok());
  ASSERT_TRUE(rt.EventSynchronize(event).ok());
  EXPECT_GE(ElapsedUs(t0), 300.0);
  ASSERT_TRUE(rt.EventDestroy(event).ok());
  ASSERT_TRUE(rt.StreamDestroy(stream).ok());
}

// Queued copies run one after another, each taking its own time, and the
// last one's data is what arrives.
TEST(SimCopy, BackToBackCopiesEachWait) {
  constexpr size_t kBytes = 64 << 10;
  constexpr int kCopies = 8;
  SimRuntime rt(1, 0, true, 60);
  Buffers b(&rt, kBytes);
  std::vector<unsigned char> expect(kBytes);
  const auto t0 = Clock::now();
  for (int i = 0; i < kCopies; ++i) {
    std::memset(expect.data(), i + 1, kBytes);
    // Host-to-device from a buffer that is not touched again until the end.
    ASSERT_TRUE(rt.MemcpyAsync(b.dev, expect.data(), kBytes, CopyKind::kHostToDevice,
                               nullptr).ok());
    ASSERT_TRUE(rt.StreamSynchronize(nullptr).ok());
  }
  ASSERT_TRUE(rt.MemcpyAsync(b.host, b.dev, kBytes, CopyKind::kDeviceToHost, nullptr).ok());
  for (int i = 0; i < kCopies; ++i) {
    ASSERT_TRUE(rt.MemcpyAsync(b.dev, b.host, kBytes, CopyKind::kHostToDevice, nullptr).ok());
  }
  ASSERT_TRUE(rt.StreamSynchronize(nullptr).ok());
  EXPECT_GE(ElapsedUs(t0), (2 * kCopies + 1) * 60.0);
  EXPECT_EQ(std::memcmp(b.host, expect.data(), kBytes), 0);
  const SimStats st = rt.stats();
  EXPECT_EQ(st.h2d_copies, 2u * kCopies);
  EXPECT_EQ(st.d2h_copies, 1u);
}

// Several threads synchronising one stream while copies are queued behind
// each other's: every one returns, and only once its own copies are done.
TEST(SimCopy, ConcurrentSynchronizeAllReturn) {
  constexpr size_t kBytes = 4096;
  constexpr int kThreads = 4, kRounds = 20;
  SimRuntime rt(1, 0, true, 30);
  void *stream = nullptr;
  ASSERT_TRUE(rt.StreamCreate(&stream).ok());
  std::vector<Buffers *> bufs;
  for (int t = 0; t < kThreads; ++t) bufs.push_back(new Buffers(&rt, kBytes));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<unsigned char> src(kBytes), dst(kBytes);
      for (int r = 0; r < kRounds; ++r) {
        std::memset(src.data(), t * kRounds + r, kBytes);
        EXPECT_TRUE(rt.MemcpyAsync(bufs[t]->dev, src.data(), kBytes,
                                   CopyKind::kHostToDevice, stream).ok());
        EXPECT_TRUE(rt.MemcpyAsync(dst.data(), bufs[t]->dev, kBytes,
                                   CopyKind::kDeviceToHost, stream).ok());
        EXPECT_TRUE(rt.StreamSynchronize(stream).ok());
        EXPECT_EQ(std::memcmp(src.data(), dst.data(), kBytes), 0);
      }
    });
  }
  for (std::thread &th : threads) th.join();
  for (Buffers *b : bufs) delete b;
  ASSERT_TRUE(rt.StreamDestroy(stream).ok());
}
