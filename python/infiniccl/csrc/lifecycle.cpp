// The torch backend's end and its fault calls: shutdown (destroy after the
// queue drains, abort when a call timed out), abort, split_group and
// shrink_group with their options. See backend.h.
#include "backend.h"

#include <algorithm>

#pragma GCC visibility push(hidden)
namespace infiniccl_c10d {

void BackendInfiniCCL::Shutdown() {
  bool abort = false;
  {
    std::lock_guard<std::mutex> lock(group_->flush_mu);
    group_->flush = nullptr;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return;
    stop_ = true;
    abort = group_->timed_out.load() && (busy_ || !queue_.empty() || p2p_open_);
  }
  cv_.notify_all();
  if (abort && comm_ != nullptr) {
    infinicclCommAbort(comm_);
    comm_ = nullptr;
  }
  JoinWorker();
  if (comm_ != nullptr) infinicclCommDestroy(comm_);
  comm_ = nullptr;
}

void BackendInfiniCCL::Abort() {
  {
    std::lock_guard<std::mutex> lock(group_->flush_mu);
    group_->flush = nullptr;
  }
  infinicclComm_t comm;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (aborted_ || comm_ == nullptr) return;
    aborted_ = true;
    stop_ = true;
    comm = comm_;
  }
  cv_.notify_all();
  infinicclCommAbort(comm);
  JoinWorker();
  comm_ = nullptr;  // the library freed it
}

#if INFINICCL_TORCH_AT_LEAST(2, 9)
c10::intrusive_ptr<c10d::Backend::Options> BackendInfiniCCL::getBackendOptions() {
  auto o = c10::make_intrusive<c10d::Backend::Options>("infiniccl", timeout_);
  o->group_name = name_;
  for (auto r : ranks_) o->global_ranks_in_group.push_back(static_cast<uint64_t>(r));
  return o;
}

c10::intrusive_ptr<c10d::Backend> BackendInfiniCCL::split(
    const c10::intrusive_ptr<c10d::Store> &store, const std::vector<int> &ranks,
    const c10::intrusive_ptr<Options> &opts) {
  int pos = -1;
  int color = INFINICCL_SPLIT_NOCOLOR;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] < 0 || ranks[i] >= size_) {
      Fail("split_group: rank " + std::to_string(ranks[i]) +
           " is not a rank of the group (size " + std::to_string(size_) + ")");
    }
    if (ranks[i] == rank_) pos = static_cast<int>(i);
  }
  if (pos < 0 && store && store == nocolor_store_) {
    // torch splits a backend registered for several devices once per
    // device until one split returns a backend: a rank outside every new
    // group is asked again, with the same store, and has taken part.
    return nullptr;
  }
  if (pos >= 0) color = *std::min_element(ranks.begin(), ranks.end());
  auto child = std::make_shared<infinicclComm_t>(nullptr);
  OnWorker("split", [this, color, pos, child] {
    Check(infinicclCommSplit(comm_, color, pos < 0 ? 0 : pos, child.get()));
  });
  if (pos < 0) {
    nocolor_store_ = store;
    return nullptr;
  }
  Ms timeout = opts ? opts->timeout : timeout_;
  std::string name =
      opts && !opts->group_name.empty() ? opts->group_name : name_ + ":split";
  std::vector<int64_t> global;
  for (int r : ranks) global.push_back(ranks_.empty() ? r : ranks_[r]);
  return c10::make_intrusive<BackendInfiniCCL>(reinterpret_cast<int64_t>(*child), pos,
                                               static_cast<int>(ranks.size()),
                                               timeout.count(), name, global, store);
}
#endif

c10::intrusive_ptr<c10d::Backend> BackendInfiniCCL::shrink(
    const std::vector<int64_t> &ranks_to_exclude, int shrink_flags,
    const c10::intrusive_ptr<Options> &opts) {
  std::vector<int> exclude;
  std::vector<char> out(static_cast<size_t>(size_), 0);
  for (int64_t r : ranks_to_exclude) {
    if (r < 0 || r >= size_) {
      Fail("shrink: rank " + std::to_string(r) + " is not a rank of the group (size " +
           std::to_string(size_) + ")");
    }
    exclude.push_back(static_cast<int>(r));
    out[static_cast<size_t>(r)] = 1;
  }
  const bool abort = (shrink_flags & 1) != 0;  // torch's SHRINK_ABORT
  infinicclComm_t child = nullptr;
  auto call = [&] {
    Check(infinicclCommShrink(comm_, exclude.data(), static_cast<int>(exclude.size()),
                              &child,
                              abort ? INFINICCL_SHRINK_ABORT : INFINICCL_SHRINK_DEFAULT));
  };
  if (abort) {
    call();
    Abort();
  } else {
    OnWorker("shrink", call);
  }
  std::vector<int64_t> global;
  int new_rank = 0;
  for (int r = 0; r < size_; ++r) {
    if (out[static_cast<size_t>(r)]) continue;
    if (r == rank_) new_rank = static_cast<int>(global.size());
    global.push_back(ranks_.empty() ? r : ranks_[static_cast<size_t>(r)]);
  }
  Ms timeout = opts ? opts->timeout : timeout_;
  std::string name = name_ + ":shrink";
#if INFINICCL_TORCH_AT_LEAST(2, 9)
  if (opts && !opts->group_name.empty()) name = opts->group_name;
#endif
  return c10::make_intrusive<BackendInfiniCCL>(reinterpret_cast<int64_t>(child), new_rank,
                                               static_cast<int>(global.size()),
                                               timeout.count(), name, global, store_);
}
}  // namespace infiniccl_c10d
#pragma GCC visibility pop
