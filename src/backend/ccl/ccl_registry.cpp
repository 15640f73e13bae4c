#include "backend/ccl/ccl_provider.h"
#include "core/group.h"
#include "device/registry.h"

namespace infiniccl {

CclProvider *CclForKind(DeviceKind kind) {
#ifdef INFINICCL_WITH_NCCL
  if (kind == DeviceKind::kCuda) return NcclProvider();
#endif
#ifdef INFINICCL_WITH_MCCL
  if (kind == DeviceKind::kMaca) return McclProvider();
#endif
  (void)kind;
  return nullptr;
}

CclProvider *FirstUsableCcl(std::string *why) {
  bool built = false;
#if defined(INFINICCL_WITH_NCCL) || defined(INFINICCL_WITH_MCCL)
  built = true;
#endif
  if (!built) {
    *why =
        "this build has no native collective backend (NCCL/MCCL: configure with "
        "WITH_NCCL or WITH_MCCL); use infinicclCommInitAll under MPI";
    return nullptr;
  }
  for (DeviceRuntime *rt : DeviceRegistry::Active()) {
    if (CclProvider *p = CclForKind(rt->kind())) return p;
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
thread_local bool opened[2] = {false, false};
constexpr DeviceKind kCclKinds[2] = {DeviceKind::kCuda, DeviceKind::kMaca};

class CclHook final : public CclGroupHook {
 public:
  CclHook() { RegisterCclGroupHook(this); }
  const char *Name() const override { return "native CCL"; }
  Status GroupStart() override { return CclGroupStart(); }
  Status GroupEnd() override { return CclGroupEnd(); }
};
const CclHook hook;  // registered for the life of the process

}  // namespace

Status CclGroupStart() {
  for (int i = 0; i < 2; ++i) {
    CclProvider *p = CclForKind(kCclKinds[i]);
    opened[i] = false;
    if (p == nullptr || !p->used()) continue;
    INFINICCL_RETURN_IF_ERROR(p->GroupStart());
    opened[i] = true;
  }
  return Status::Ok();
}

Status CclGroupEnd() {
  Status first = Status::Ok();
  for (int i = 0; i < 2; ++i) {
    if (!opened[i]) continue;
    opened[i] = false;
    // Never null when opened, but without a CCL built in the compiler sees
    // only the null return (-Wnonnull).
    CclProvider *p = CclForKind(kCclKinds[i]);
    if (p == nullptr) continue;
    const Status s = p->GroupEnd();
    if (first.ok() && !s.ok()) first = s;
  }
  return first;
}

}  // namespace infiniccl
