// The Ascend (ACL) and Cambricon (CNRT) runtimes and their CCL adapters
// against the stand-in vendor libraries of tests/standin (builds with
// INFINICCL_VENDOR_STANDINS=ON): classification, copies both ways on a
// stream, events, device binding through the visibility variables, and the
// error paths (wrong copy direction, bad device, no pinned memory, the CCL
// id that does not fit).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backend/ccl/ccl_provider.h"
#include "device/registry.h"

using namespace infiniccl;

namespace {

struct Vendor {
  const char *name;
  std::unique_ptr<DeviceRuntime> (*make)();
  DeviceKind kind;
  const char *copy_call;  // how errors name the copy
};

class VendorRuntime : public ::testing::TestWithParam<Vendor> {};

TEST_P(VendorRuntime, ClassifiesCopiesAndOrders) {
  const Vendor v = GetParam();
  if (v.make == nullptr) GTEST_SKIP() << "sentinel";
  std::unique_ptr<DeviceRuntime> rt = v.make();
  ASSERT_NE(rt, nullptr);
  EXPECT_EQ(rt->kind(), v.kind);
  // ICCL_STANDIN_DEVICES=8 with 3 visible (ctest's environment).
  ASSERT_EQ(rt->DeviceCount(), 3) << rt->description();
  ASSERT_TRUE(rt->SetDevice(2).ok());
  int device = -1;
  ASSERT_TRUE(rt->GetDevice(&device).ok());
  EXPECT_EQ(device, 2);

  const size_t n = 4099;
  void *dev = nullptr;
  ASSERT_TRUE(rt->Malloc(&dev, n).ok());
  PointerInfo info;
  ASSERT_TRUE(rt->Classify(dev, &info).ok());
  EXPECT_EQ(info.space, MemorySpace::kDevice);
  EXPECT_EQ(info.kind, v.kind);
  EXPECT_EQ(info.device, 2);
  ASSERT_TRUE(rt->Classify(static_cast<char *>(dev) + n - 1, &info).ok());
  EXPECT_EQ(info.space, MemorySpace::kDevice) << "an interior pointer is device memory";

  std::vector<unsigned char> host(n), back(n, 0);
  for (size_t i = 0; i < n; ++i) host[i] = static_cast<unsigned char>(i * 7 + 3);
  ASSERT_TRUE(rt->Classify(host.data(), &info).ok());
  EXPECT_EQ(info.space, MemorySpace::kHost);
  void *pinned = nullptr;
  ASSERT_TRUE(rt->MallocHost(&pinned, n).ok());
  ASSERT_TRUE(rt->Classify(pinned, &info).ok());
  EXPECT_EQ(info.space, MemorySpace::kHost) << "pinned host memory is host memory";

  void *stream = nullptr, *event = nullptr;
  ASSERT_TRUE(rt->StreamCreate(&stream).ok());
  ASSERT_NE(stream, nullptr);
  ASSERT_TRUE(rt->EventCreate(&event).ok());
  ASSERT_TRUE(rt->MemcpyAsync(dev, host.data(), n, CopyKind::kHostToDevice, stream).ok());
  ASSERT_TRUE(rt->EventRecord(event, stream).ok());
  ASSERT_TRUE(rt->StreamWaitEvent(nullptr, event).ok());
  ASSERT_TRUE(rt->MemcpyAsync(pinned, dev, n, CopyKind::kDeviceToHost, nullptr).ok());
  ASSERT_TRUE(rt->StreamSynchronize(nullptr).ok());
  ASSERT_TRUE(rt->EventSynchronize(event).ok());
  std::memcpy(back.data(), pinned, n);
  EXPECT_EQ(back, host);

  // Error paths: the vendor's call named, its words quoted.
  Status st = rt->MemcpyAsync(host.data(), back.data(), n, CopyKind::kHostToDevice, stream);
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.code(), infinicclSystemError);
  EXPECT_NE(st.message().find(v.copy_call), std::string::npos) << st.message();
  st = rt->SetDevice(3);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("SetDevice"), std::string::npos) << st.message();
  st = rt->Free(host.data());
  EXPECT_FALSE(st.ok()) << "freeing host memory as device memory must fail";

  ASSERT_TRUE(rt->EventDestroy(event).ok());
  ASSERT_TRUE(rt->StreamDestroy(stream).ok());
  ASSERT_TRUE(rt->FreeHost(pinned).ok());
  ASSERT_TRUE(rt->Free(dev).ok());
}

// Out of pinned memory: an error the staging pool turns into pageable memory.
TEST_P(VendorRuntime, PinnedMemoryRunsOut) {
  if (GetParam().make == nullptr) GTEST_SKIP() << "sentinel";
  std::unique_ptr<DeviceRuntime> rt = GetParam().make();
  ASSERT_EQ(setenv("ICCL_STANDIN_NO_PINNED", "1", 1), 0);
  void *p = reinterpret_cast<void *>(1);
  const Status st = rt->MallocHost(&p, 4096);
  unsetenv("ICCL_STANDIN_NO_PINNED");
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(p, nullptr);
}

INSTANTIATE_TEST_SUITE_P(
    StandIns, VendorRuntime,
    ::testing::Values(
#ifdef INFINICCL_WITH_ASCEND
        Vendor{"ascend", MakeAscendRuntime, DeviceKind::kAscend, "aclrtMemcpyAsync"},
#endif
#ifdef INFINICCL_WITH_CAMBRICON
        Vendor{"cambricon", MakeCambriconRuntime, DeviceKind::kCambricon, "cnrtMemcpyAsync"},
#endif
        Vendor{nullptr, nullptr, DeviceKind::kCpu, nullptr}),
    [](const ::testing::TestParamInfo<Vendor> &i) {
      return std::string(i.param.name ? i.param.name : "none");
    });

// HCCL's and CNCL's ids do not fit in infinicclUniqueId: their communicators
// are made under MPI, and the unique-id calls say so.
TEST(VendorCcl, IdTooLargeForUniqueIdIsRefusedWithTheReason) {
  for (DeviceKind k : {DeviceKind::kAscend, DeviceKind::kCambricon}) {
    CclProvider *p = CclForKind(k);
    if (p == nullptr) continue;
    EXPECT_TRUE(p->MadeOverMpi()) << p->Name();
    EXPECT_TRUE(p->SpansNodes()) << p->Name();
    infinicclUniqueId id;
    const Status st = p->GetUniqueId(&id);
    EXPECT_EQ(st.code(), infinicclNotSupported) << p->Name();
    EXPECT_NE(st.message().find("does not fit"), std::string::npos) << st.message();
    std::unique_ptr<Backend> b;
    EXPECT_EQ(p->CreateComm(2, id, 0, &b).code(), infinicclNotSupported) << p->Name();
  }
}

}  // namespace
