// Stream capture on the emulated device (no MPI): work queued on a
// capturing stream is recorded, not run; each launch of the graph runs it
// again, in order, on the data of that moment (results compared with
// values computed here); an event recorded in the graph completes at each
// launch; synchronising a capturing stream is refused and invalidates the
// capture; the default stream cannot be captured.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "device/sim/sim_runtime.h"

using namespace infiniccl;

namespace {

constexpr size_t kN = 4096;
constexpr size_t kBytes = kN * sizeof(int32_t);

std::vector<int32_t> Pattern(int32_t base) {
  std::vector<int32_t> v(kN);
  for (size_t i = 0; i < kN; ++i) v[i] = base + static_cast<int32_t>(i % 977);
  return v;
}

class SimCapture : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(rt.StreamCreate(&s).ok());
    ASSERT_TRUE(rt.Malloc(&a, kBytes).ok());
    ASSERT_TRUE(rt.Malloc(&b, kBytes).ok());
    ASSERT_TRUE(rt.MallocHost(&src, kBytes).ok());
    ASSERT_TRUE(rt.MallocHost(&dst, kBytes).ok());
    std::memset(a, 0, kBytes);
    std::memset(b, 0, kBytes);
    std::memset(dst, 0, kBytes);
  }
  void TearDown() override {
    (void)rt.Free(a);
    (void)rt.Free(b);
    (void)rt.FreeHost(src);
    (void)rt.FreeHost(dst);
    (void)rt.StreamDestroy(s);
  }
  std::vector<int32_t> Dst() const {
    std::vector<int32_t> v(kN);
    std::memcpy(v.data(), dst, kBytes);
    return v;
  }

  SimRuntime rt{1, 0, true};
  void *s = nullptr, *a = nullptr, *b = nullptr, *src = nullptr, *dst = nullptr;
};

}  // namespace

TEST_F(SimCapture, RecordsInsteadOfRunningAndReplaysExactly) {
  bool capturing = true;
  ASSERT_TRUE(rt.StreamIsCapturing(s, &capturing).ok());
  EXPECT_FALSE(capturing);
  void *e = nullptr;
  ASSERT_TRUE(rt.EventCreate(&e).ok());

  std::vector<int32_t> first = Pattern(1000);
  std::memcpy(src, first.data(), kBytes);
  const uint64_t h2d_before = rt.stats().h2d_copies;
  ASSERT_TRUE(rt.BeginCapture(s).ok());
  ASSERT_TRUE(rt.StreamIsCapturing(s, &capturing).ok());
  EXPECT_TRUE(capturing);
  // host -> a -> b -> host, a kernel between, an event at the end.
  ASSERT_TRUE(rt.MemcpyAsync(a, src, kBytes, CopyKind::kHostToDevice, s).ok());
  ASSERT_TRUE(rt.Kernel(s, 100).ok());
  ASSERT_TRUE(rt.MemcpyAsync(b, a, kBytes, CopyKind::kDeviceToDevice, s).ok());
  ASSERT_TRUE(rt.MemcpyAsync(dst, b, kBytes, CopyKind::kDeviceToHost, s).ok());
  ASSERT_TRUE(rt.EventRecord(e, s).ok());
  std::shared_ptr<SimGraph> graph;
  ASSERT_TRUE(rt.EndCapture(s, &graph).ok());
  ASSERT_NE(graph, nullptr);
  EXPECT_EQ(graph->nodes.size(), 5u);
  ASSERT_TRUE(rt.StreamIsCapturing(s, &capturing).ok());
  EXPECT_FALSE(capturing);

  // Recorded, not run: the stream has nothing queued, no byte moved.
  ASSERT_TRUE(rt.StreamSynchronize(s).ok());
  EXPECT_EQ(Dst(), std::vector<int32_t>(kN, 0));
  EXPECT_EQ(rt.stats().h2d_copies, h2d_before);

  // Two launches, each on the source as it is then.
  ASSERT_TRUE(rt.LaunchGraph(*graph, s).ok());
  ASSERT_TRUE(rt.StreamSynchronize(s).ok());
  ASSERT_TRUE(rt.EventSynchronize(e).ok());
  EXPECT_EQ(Dst(), first);
  EXPECT_EQ(rt.stats().h2d_copies, h2d_before + 1);

  std::vector<int32_t> second = Pattern(-5000);
  std::memcpy(src, second.data(), kBytes);
  ASSERT_TRUE(rt.LaunchGraph(*graph, s).ok());
  ASSERT_TRUE(rt.EventSynchronize(e).ok());  // the event of this launch
  EXPECT_EQ(Dst(), second);
  EXPECT_EQ(rt.stats().h2d_copies, h2d_before + 2);
  ASSERT_TRUE(rt.EventDestroy(e).ok());
}

// A wait captured on one stream for an event recorded on another orders
// each launch after that stream's work of the moment.
TEST_F(SimCapture, CapturedWaitOrdersEachLaunch) {
  void *other = nullptr, *e = nullptr;
  ASSERT_TRUE(rt.StreamCreate(&other).ok());
  ASSERT_TRUE(rt.EventCreate(&e).ok());
  ASSERT_TRUE(rt.BeginCapture(s).ok());
  ASSERT_TRUE(rt.StreamWaitEvent(s, e).ok());
  ASSERT_TRUE(rt.MemcpyAsync(dst, a, kBytes, CopyKind::kDeviceToHost, s).ok());
  std::shared_ptr<SimGraph> graph;
  ASSERT_TRUE(rt.EndCapture(s, &graph).ok());
  for (int32_t base : {7, 70000}) {
    std::vector<int32_t> want = Pattern(base);
    std::memcpy(src, want.data(), kBytes);
    // `other` writes a only after a long kernel; the launch waits for it.
    ASSERT_TRUE(rt.Kernel(other, 20000).ok());
    ASSERT_TRUE(rt.MemcpyAsync(a, src, kBytes, CopyKind::kHostToDevice, other).ok());
    ASSERT_TRUE(rt.EventRecord(e, other).ok());
    ASSERT_TRUE(rt.LaunchGraph(*graph, s).ok());
    ASSERT_TRUE(rt.StreamSynchronize(s).ok());
    EXPECT_EQ(Dst(), want) << base;
  }
  ASSERT_TRUE(rt.StreamSynchronize(other).ok());
  ASSERT_TRUE(rt.EventDestroy(e).ok());
  ASSERT_TRUE(rt.StreamDestroy(other).ok());
}

TEST_F(SimCapture, SynchronisingACapturingStreamIsRefusedAndInvalidates) {
  ASSERT_TRUE(rt.BeginCapture(s).ok());
  ASSERT_TRUE(rt.MemcpyAsync(dst, a, kBytes, CopyKind::kDeviceToHost, s).ok());
  Status st = rt.StreamSynchronize(s);
  EXPECT_EQ(st.code(), infinicclInvalidUsage);
  EXPECT_NE(st.message().find("capturing"), std::string::npos) << st.message();
  std::shared_ptr<SimGraph> graph;
  st = rt.EndCapture(s, &graph);
  EXPECT_EQ(st.code(), infinicclInvalidUsage);
  EXPECT_NE(st.message().find("invalidated"), std::string::npos) << st.message();
  EXPECT_EQ(graph, nullptr);
  // The stream captures no more and works as before.
  std::vector<int32_t> want = Pattern(3);
  std::memcpy(a, want.data(), kBytes);
  ASSERT_TRUE(rt.MemcpyAsync(dst, a, kBytes, CopyKind::kDeviceToHost, s).ok());
  ASSERT_TRUE(rt.StreamSynchronize(s).ok());
  EXPECT_EQ(Dst(), want);
}

TEST_F(SimCapture, MisuseIsRefused) {
  EXPECT_EQ(rt.BeginCapture(nullptr).code(), infinicclInvalidArgument);  // default stream
  bool capturing = true;
  ASSERT_TRUE(rt.StreamIsCapturing(nullptr, &capturing).ok());
  EXPECT_FALSE(capturing);
  std::shared_ptr<SimGraph> graph;
  EXPECT_EQ(rt.EndCapture(s, &graph).code(), infinicclInvalidUsage);  // not capturing
  ASSERT_TRUE(rt.BeginCapture(s).ok());
  EXPECT_EQ(rt.BeginCapture(s).code(), infinicclInvalidUsage);  // twice
  ASSERT_TRUE(rt.EndCapture(s, &graph).ok());
  EXPECT_TRUE(graph->nodes.empty());
  // An empty graph launches and does nothing.
  ASSERT_TRUE(rt.LaunchGraph(*graph, s).ok());
  ASSERT_TRUE(rt.StreamSynchronize(s).ok());
}
