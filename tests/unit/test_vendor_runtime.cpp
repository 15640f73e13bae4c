// The Ascend (ACL) and Cambricon (CNRT) runtimes and their CCL adapters
// against the stand-in vendor libraries of tests/standin (builds with
// INFINICCL_VENDOR_STANDINS=ON): classification, copies both ways on a
// stream, events, device binding through the visibility variables, and the
// error paths (wrong copy direction, bad device, no pinned memory, the CCL
// id that does not fit), and the progress engine's gates (host functions on
// the stand-ins' host-thread streams).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backend/ccl/ccl_provider.h"
#include "device/registry.h"
#ifdef INFINICCL_WITH_HCCL
#include "backend/ccl/vendor_hccl.h"
#endif
#ifdef INFINICCL_WITH_CNCL
#include "backend/ccl/vendor_cncl.h"
#endif

using namespace infiniccl;

namespace {

struct Vendor {
  const char *name;
  std::unique_ptr<DeviceRuntime> (*make)();
  DeviceKind kind;
  const char *copy_call;  // how errors name the copy
  const char *gate;       // the device-side wait (GateMechanism)
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

// The progress engine's gate (a host function on the stream): a copy queued
// after a gate wait does not run until the gate reaches its target, while
// another stream's copy runs at once; a value short of the target keeps it
// held; the target releases it, and the event recorded after it completes.
TEST_P(VendorRuntime, GateHoldsTheStreamUntilOpened) {
  const Vendor v = GetParam();
  if (v.make == nullptr) GTEST_SKIP() << "sentinel";
  std::unique_ptr<DeviceRuntime> rt = v.make();
  ASSERT_TRUE(rt->SetDevice(0).ok());
  ASSERT_NE(rt->GateMechanism(), nullptr);
  EXPECT_STREQ(rt->GateMechanism(), v.gate);

  const size_t n = 4096;
  const std::vector<unsigned char> zeros(n, 0), sevens(n, 7), fives(n, 5);
  void *held_dst = nullptr, *free_dst = nullptr, *held = nullptr, *other = nullptr;
  void *gate = nullptr, *event = nullptr;
  ASSERT_TRUE(rt->Malloc(&held_dst, n).ok());
  ASSERT_TRUE(rt->Malloc(&free_dst, n).ok());
  ASSERT_TRUE(rt->StreamCreate(&held).ok());
  ASSERT_TRUE(rt->StreamCreateNonBlocking(&other).ok());
  ASSERT_TRUE(rt->EventCreate(&event).ok());
  ASSERT_TRUE(rt->GateCreate(&gate).ok());
  ASSERT_TRUE(
      rt->MemcpyAsync(held_dst, zeros.data(), n, CopyKind::kHostToDevice, held).ok());
  ASSERT_TRUE(rt->StreamSynchronize(held).ok());

  auto read = [&](void *src) {
    std::vector<unsigned char> h(n, 0xff);
    EXPECT_TRUE(rt->MemcpyAsync(h.data(), src, n, CopyKind::kDeviceToHost, other).ok());
    EXPECT_TRUE(rt->StreamSynchronize(other).ok());
    return h;
  };
  ASSERT_TRUE(rt->GateWait(held, gate, 2).ok());
  ASSERT_TRUE(
      rt->MemcpyAsync(held_dst, sevens.data(), n, CopyKind::kHostToDevice, held).ok());
  ASSERT_TRUE(rt->EventRecord(event, held).ok());
  // The other stream is not held.
  ASSERT_TRUE(rt->MemcpyAsync(free_dst, fives.data(), n, CopyKind::kHostToDevice, other).ok());
  EXPECT_EQ(read(free_dst), fives);
  EXPECT_EQ(read(held_dst), zeros) << "the copy after the gate ran before it opened";
  rt->GateOpen(gate, 1);  // short of the target
  EXPECT_EQ(read(held_dst), zeros) << "a gate short of its target released the stream";
  rt->GateOpen(gate, 2);
  ASSERT_TRUE(rt->StreamSynchronize(held).ok());
  ASSERT_TRUE(rt->EventSynchronize(event).ok());
  EXPECT_EQ(read(held_dst), sevens);

  EXPECT_TRUE(rt->GateDestroy(gate).ok());
  EXPECT_TRUE(rt->EventDestroy(event).ok());
  EXPECT_TRUE(rt->StreamDestroy(held).ok());
  EXPECT_TRUE(rt->StreamDestroy(other).ok());
  EXPECT_TRUE(rt->Free(held_dst).ok());
  EXPECT_TRUE(rt->Free(free_dst).ok());
}

INSTANTIATE_TEST_SUITE_P(
    StandIns, VendorRuntime,
    ::testing::Values(
#ifdef INFINICCL_WITH_ASCEND
        Vendor{"ascend", MakeAscendRuntime, DeviceKind::kAscend, "aclrtMemcpyAsync",
               "aclrtLaunchHostFunc"},
#endif
#ifdef INFINICCL_WITH_CAMBRICON
        Vendor{"cambricon", MakeCambriconRuntime, DeviceKind::kCambricon, "cnrtMemcpyAsync",
               "cnrtInvokeHostFunc"},
#endif
        Vendor{nullptr, nullptr, DeviceKind::kCpu, nullptr, nullptr}),
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

CollArgs Args(CollKind kind, infinicclDataType_t dtype, infinicclRedOp_t op) {
  CollArgs a{};
  a.kind = kind;
  a.dtype = dtype;
  a.op = op;
  a.count = 8;
  return a;
}

// What each CCL cannot run (the route then takes MPI), and its result codes
// in ours, from the vendors' documented lists.
TEST(VendorCcl, LimitsAndResultCodes) {
#ifdef INFINICCL_WITH_HCCL
  using H = ccl::HcclApi;
  EXPECT_NE(H::Unsupported(Args(CollKind::kAllReduce, infinicclFloat32, infinicclAvg)), nullptr);
  EXPECT_EQ(H::Unsupported(Args(CollKind::kAllReduce, infinicclFloat32, infinicclSum)), nullptr);
  EXPECT_EQ(H::Unsupported(Args(CollKind::kReduce, infinicclBFloat16, infinicclMax)), nullptr);
  EXPECT_NE(H::Unsupported(Args(CollKind::kReduceScatter, infinicclUInt8, infinicclSum)),
            nullptr);
  EXPECT_NE(H::Unsupported(Args(CollKind::kAllReduce, infinicclUInt32, infinicclMin)), nullptr);
  EXPECT_EQ(H::Unsupported(Args(CollKind::kBroadcast, infinicclUInt8, infinicclSum)), nullptr)
      << "data movement of any type";
  EXPECT_EQ(H::ResultCode(HCCL_SUCCESS), infinicclSuccess);
  EXPECT_EQ(H::ResultCode(HCCL_E_PARA), infinicclInvalidArgument);
  EXPECT_EQ(H::ResultCode(HCCL_E_PTR), infinicclInvalidArgument);
  EXPECT_EQ(H::ResultCode(HCCL_E_NOT_SUPPORT), infinicclInvalidUsage);
  EXPECT_EQ(H::ResultCode(HCCL_E_TIMEOUT), infinicclRemoteError);
  EXPECT_EQ(H::ResultCode(HCCL_E_RUNTIME), infinicclUnhandledError);
  EXPECT_EQ(H::ResultCode(HCCL_E_INTERNAL), infinicclInternalError);
  EXPECT_STREQ(H::GetErrorString(HCCL_E_PARA), "HCCL_E_PARA");
  EXPECT_EQ(H::Type(CclType::kBfloat16), HCCL_DATA_TYPE_BFP16);
  EXPECT_EQ(H::Type(CclType::kFloat64), HCCL_DATA_TYPE_FP64);
  EXPECT_EQ(H::SizeOf(HCCL_DATA_TYPE_BFP16), 2u);
  // GroupEnd without GroupStart is refused, not ignored.
  EXPECT_EQ(H::GroupEnd(), HCCL_E_PARA);
#endif
#ifdef INFINICCL_WITH_CNCL
  using C = ccl::CnclApi;
  EXPECT_NE(C::Unsupported(Args(CollKind::kBroadcast, infinicclFloat64, infinicclSum)), nullptr)
      << "CNCL has no 64-bit float type at all";
  EXPECT_NE(C::Unsupported(Args(CollKind::kAllReduce, infinicclFloat16, infinicclAvg)), nullptr);
  EXPECT_NE(C::Unsupported(Args(CollKind::kAllReduce, infinicclInt64, infinicclSum)), nullptr);
  EXPECT_EQ(C::Unsupported(Args(CollKind::kAllReduce, infinicclBFloat16, infinicclProd)),
            nullptr);
  EXPECT_EQ(C::Unsupported(Args(CollKind::kAllGather, infinicclInt64, infinicclSum)), nullptr);
  EXPECT_EQ(C::ResultCode(CNCL_RET_SUCCESS), infinicclSuccess);
  EXPECT_EQ(C::ResultCode(CNCL_RET_ERR_ARGUMENTS), infinicclInvalidArgument);
  EXPECT_EQ(C::ResultCode(CNCL_RET_ERR_NULL_POINTER), infinicclInvalidArgument);
  EXPECT_EQ(C::ResultCode(CNCL_RET_ERR_UNSUPPORTED), infinicclInvalidUsage);
  EXPECT_EQ(C::ResultCode(CNCL_RET_ERR_SYSTEM), infinicclSystemError);
  EXPECT_EQ(C::ResultCode(CNCL_RET_ERR_MLU_RUNTIME), infinicclUnhandledError);
  EXPECT_EQ(C::ResultCode(CNCL_RET_ASYNC_ERROR), infinicclRemoteError);
  EXPECT_EQ(C::ResultCode(CNCL_RET_ERR_INTERNAL), infinicclInternalError);
  EXPECT_EQ(C::Type(CclType::kBfloat16), cnclBfloat16);
#endif
}

}  // namespace
