#include "backend/ccl/ccl_provider.h"
#include "core/config.h"
#include "device/registry.h"

namespace infiniccl {

namespace {
CclProvider *g_test_provider = nullptr;
}  // namespace

void SetCclProviderForTesting(CclProvider *p) { g_test_provider = p; }

CclProvider *CclForKind(DeviceKind kind) {
  if (g_test_provider != nullptr && g_test_provider->kind() == kind) return g_test_provider;
#ifdef INFINICCL_WITH_NCCL
  if (kind == DeviceKind::kCuda) return NcclProvider();
#endif
#ifdef INFINICCL_WITH_MCCL
  if (kind == DeviceKind::kMaca) return McclProvider();
#endif
#ifdef INFINICCL_WITH_RCCL
  if (kind == DeviceKind::kHip) return RcclProvider();
#endif
#ifdef INFINICCL_WITH_HCCL
  if (kind == DeviceKind::kAscend) return HcclProvider();
#endif
#ifdef INFINICCL_WITH_CNCL
  if (kind == DeviceKind::kCambricon) return CnclProvider();
#endif
  // The emulated CCL is opt-in, so the emulated device's tests keep their
  // staged path; a test's stand-in (above) still wins over it.
  if (kind == DeviceKind::kSim && GlobalConfig().sim_ccl) return SimCclProvider();
  return nullptr;
}

CclProvider *FirstUsableCcl(std::string *why) {
  bool built = g_test_provider != nullptr;
#if defined(INFINICCL_WITH_NCCL) || defined(INFINICCL_WITH_MCCL) || \
    defined(INFINICCL_WITH_RCCL)
  built = true;
#endif
  // A test's stand-in wins over a real CCL (on a GPU machine CUDA comes
  // first), as long as its device kind is active.
  for (DeviceRuntime *rt : DeviceRegistry::Active()) {
    if (g_test_provider != nullptr && rt->kind() == g_test_provider->kind()) {
      return g_test_provider;
    }
  }
  if (!built) {
    *why =
        "this build has no native collective backend with a unique id (NCCL/MCCL/RCCL: "
        "configure with WITH_NCCL, WITH_MCCL or WITH_RCCL; HCCL and CNCL are made under "
        "MPI only); use infinicclCommInitAll under MPI";
    return nullptr;
  }
  for (DeviceRuntime *rt : DeviceRegistry::Active()) {
    // The emulated CCL has no unique id (it is made over MPI).
    if (CclProvider *p = CclForKind(rt->kind()); p != nullptr && !p->MadeOverMpi()) return p;
  }
  *why =
      "built with a native collective backend (NCCL/MCCL), but no device of its kind "
      "is present (no driver or no GPU)";
  return nullptr;
}

namespace {

// The CCLs whose group the calling thread opened at its outermost
// infinicclGroupStart, so its GroupEnd closes exactly those (a CCL whose
// first communicator appears inside the group joins the next group).
thread_local bool opened[kNumDeviceKinds] = {};

}  // namespace

Status CclGroupStart() {
  for (int i = 0; i < kNumDeviceKinds; ++i) {
    CclProvider *p = CclForKind(static_cast<DeviceKind>(i));
    opened[i] = false;
    if (p == nullptr || !p->used()) continue;
    const Status st = p->GroupStart();
    if (!st.ok()) {
      CclGroupEnd();  // close those already opened: no CCL left inside a group
      return st;
    }
    opened[i] = true;
  }
  return Status::Ok();
}

Status CclGroupEnd() {
  Status first = Status::Ok();
  for (int i = 0; i < kNumDeviceKinds; ++i) {
    if (!opened[i]) continue;
    opened[i] = false;
    CclProvider *p = CclForKind(static_cast<DeviceKind>(i));
    // Never null when opened, but a build without any CCL lets gcc prove
    // CclForKind returns null and reject the call (-Werror=nonnull).
    if (p == nullptr) continue;
    const Status s = p->GroupEnd();
    if (first.ok() && !s.ok()) first = s;
  }
  return first;
}

}  // namespace infiniccl
