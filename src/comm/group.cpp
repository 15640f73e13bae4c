#include "comm/group.h"

#include <algorithm>
#include <mutex>

#include "comm/communicator.h"
#include "core/log.h"

namespace infiniccl {

namespace {

std::mutex &HookMutex() {
  static std::mutex m;
  return m;
}
std::vector<CclGroupHook *> &Hooks() {
  static std::vector<CclGroupHook *> hooks;
  return hooks;
}

}  // namespace

void RegisterCclGroupHook(CclGroupHook *hook) {
  std::lock_guard<std::mutex> lock(HookMutex());
  if (std::find(Hooks().begin(), Hooks().end(), hook) == Hooks().end()) {
    Hooks().push_back(hook);
  }
}

void UnregisterCclGroupHook(CclGroupHook *hook) {
  std::lock_guard<std::mutex> lock(HookMutex());
  std::erase(Hooks(), hook);
}

Group &Group::Current() {
  thread_local Group group;
  return group;
}

Group::~Group() {
  Clear();
}

Status Group::Start() {
  if (depth_ > 0) {
    ++depth_;
    return Status::Ok();
  }
  {
    std::lock_guard<std::mutex> lock(HookMutex());
    hooks_ = Hooks();
  }
  for (size_t i = 0; i < hooks_.size(); ++i) {
    Status st = hooks_[i]->GroupStart();
    if (!st.ok()) {
      // Close the hooks already opened, so no CCL is left inside a group.
      for (size_t j = 0; j < i; ++j) hooks_[j]->GroupEnd();
      hooks_.clear();
      return st;
    }
  }
  depth_ = 1;
  INFINICCL_TRACE("group started (%zu native CCL hooks)", hooks_.size());
  return Status::Ok();
}

Status Group::End() {
  if (depth_ == 0) {
    return Status(infinicclInvalidUsage,
                  "infinicclGroupEnd without a matching infinicclGroupStart");
  }
  if (--depth_ > 0) return Status::Ok();

  // Everything runs even after a failure, so that nothing stays posted and
  // peers that matched this group's operations are not left waiting.
  Status first = first_call_error_;
  if (!first.ok()) {
    first =
        MakeStatus(first.code(),
                   "%d call%s in this group failed, the other operations completed; "
                   "first: %s",
                   call_errors_, call_errors_ == 1 ? "" : "s", first.message().c_str());
  }
  for (CclGroupHook *hook : hooks_) {
    Status st = hook->GroupEnd();
    if (!st.ok() && first.ok()) {
      first =
          MakeStatus(st.code(), "%s group end: %s", hook->Name(), st.message().c_str());
    }
  }
  for (DeferredWork *work : order_) {
    Status st = work->Complete();
    if (!st.ok() && first.ok()) first = st;
  }
  if (!first.ok()) {
    // The API layer records it for the thread; the communicators of the
    // group get it too, so GetLastError(comm) explains the failure.
    for (const auto &comm : comms_)
      comm->SetLastError("infinicclGroupEnd: " + first.message());
  }
  Clear();
  return first;
}

void Group::NoteCallError(const Status &status) {
  if (status.ok()) return;
  if (call_errors_++ == 0) first_call_error_ = status;
}

void Group::AddPendingComm(const std::shared_ptr<Communicator> &comm) {
  if (comms_.insert(comm).second) comm->AddGroupUser();
}

void Group::Clear() {
  order_.clear();
  works_.clear();  // leases and requests are released here
  for (const auto &comm : comms_) comm->RemoveGroupUser();
  comms_.clear();
  hooks_.clear();
  first_call_error_ = Status::Ok();
  call_errors_ = 0;
  depth_ = 0;
}

}  // namespace infiniccl
