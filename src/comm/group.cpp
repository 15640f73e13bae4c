#include "comm/group.h"

#include "backend/ccl/ccl_provider.h"
#include "comm/communicator.h"
#include "core/log.h"

namespace infiniccl {

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
  // A failed start closes the CCLs it had opened (ccl_registry.cpp).
  INFINICCL_RETURN_IF_ERROR(CclGroupStart());
  ccl_open_ = true;
  depth_ = 1;
  INFINICCL_TRACE("group started");
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
  if (ccl_open_) {
    ccl_open_ = false;
    Status st = CclGroupEnd();
    if (!st.ok() && first.ok()) {
      first = MakeStatus(st.code(), "native CCL group end: %s", st.message().c_str());
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
  ccl_open_ = false;
  first_call_error_ = Status::Ok();
  call_errors_ = 0;
  depth_ = 0;
}

}  // namespace infiniccl
