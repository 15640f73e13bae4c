// Group calls (infinicclGroupStart / infinicclGroupEnd): per-thread state, as
// NCCL keeps it. Groups nest with a depth counter; only the outermost End
// completes what the group deferred.
//
// Two kinds of participants:
// - DeferredWork: work a path started inside the group and finishes at the
//   outermost End (the MPI path's nonblocking Send/Recv: MPI_Wait, then
//   the host-to-device copies of staged receives). One object per key per
//   group, created by the path on first use.
// - The native collective libraries' own group calls (ncclGroupStart/End,
//   backend/ccl/ccl_provider.h): the outermost Start opens the group of
//   every CCL in use, the outermost End closes them (before the MPI work is
//   waited for: a CCL's GroupEnd only enqueues).
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/status.h"

namespace infiniccl {

class Communicator;

class DeferredWork {
 public:
  virtual ~DeferredWork() = default;
  // Blocks until everything this work started has finished (or failed).
  // Called once, at the outermost GroupEnd, in the order works were created.
  virtual Status Complete() = 0;
};

class Group {
 public:
  // The calling thread's group state.
  static Group &Current();

  bool active() const { return depth_ > 0; }
  int depth() const { return depth_; }

  Status Start();
  // InvalidUsage without a Start. The outermost End closes the CCLs' groups, completes every DeferredWork, and returns the first error of
  // the group: a call that failed inside it (as NCCL: the failing call
  // returned it too) or a failure at completion. Either way everything
  // deferred is completed and the state is cleared, so the thread can start
  // a new group.
  Status End();

  // The work stored under `key` in this group, made by `make` on first use.
  // Only while active().
  template <typename Work, typename Make>
  Work &Deferred(const void *key, Make make) {
    std::unique_ptr<DeferredWork> &slot = works_[key];
    if (!slot) {
      slot = make();
      order_.push_back(slot.get());
    }
    return static_cast<Work &>(*slot);
  }

  // A call inside the group failed (already reported by that call).
  void NoteCallError(const Status &status);

  // A communicator with operations pending in this group: CommDestroy of it
  // is refused until the group ends. Kept alive by the group meanwhile.
  void AddPendingComm(const std::shared_ptr<Communicator> &comm);

  // Clears everything without completing (thread exit, Finalize).
  ~Group();

 private:
  Group() = default;
  void Clear();

  int depth_ = 0;
  bool ccl_open_ = false;  // the outermost Start opened the CCLs' groups
  std::map<const void *, std::unique_ptr<DeferredWork>> works_;
  std::vector<DeferredWork *> order_;
  std::set<std::shared_ptr<Communicator>> comms_;
  Status first_call_error_;
  int call_errors_ = 0;
};

}  // namespace infiniccl
