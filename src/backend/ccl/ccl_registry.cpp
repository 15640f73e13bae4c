#include "backend/ccl/ccl_provider.h"
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
template <typename Fn>
Status ForEachUsed(Fn fn) {
  for (DeviceKind k : {DeviceKind::kCuda, DeviceKind::kMaca}) {
    CclProvider *p = CclForKind(k);
    if (p != nullptr && p->used()) INFINICCL_RETURN_IF_ERROR(fn(*p));
  }
  return Status::Ok();
}
}  // namespace

Status CclGroupStart() {
  return ForEachUsed([](CclProvider &p) { return p.GroupStart(); });
}
Status CclGroupEnd() {
  return ForEachUsed([](CclProvider &p) { return p.GroupEnd(); });
}

}  // namespace infiniccl
