#include "staging/staging_pool.h"

#include <algorithm>
#include <cstdlib>

#include "core/config.h"
#include "core/log.h"

namespace infiniccl {

namespace {

// Page-granular sizes: cheap to reuse across nearby sizes, little waste.
constexpr size_t kGranule = 4096;
size_t RoundUp(size_t n) { return (std::max<size_t>(n, 1) + kGranule - 1) / kGranule * kGranule; }

thread_local bool t_defers_frees = false;

}  // namespace

StagingLease &StagingLease::operator=(StagingLease &&other) noexcept {
  if (this != &other) {
    Reset();
    pool_ = other.pool_;
    block_ = other.block_;
    other.pool_ = nullptr;
    other.block_ = StagingBlock{};
  }
  return *this;
}

void StagingLease::Reset() {
  if (pool_ != nullptr) pool_->Return(block_);
  pool_ = nullptr;
  block_ = StagingBlock{};
}

StagingPool &StagingPool::Global() {
  static StagingPool *pool = new StagingPool();  // lives through exit
  return *pool;
}

size_t StagingPool::cap_bytes() const { return GlobalConfig().staging_cache_bytes; }

StagingBlock StagingPool::AllocateLocked(size_t bytes, DeviceRuntime &runtime,
                                         Status *status) {
  StagingBlock b;
  b.bytes = RoundUp(bytes);
  const Tristate policy = GlobalConfig().staging_pinned;
  if (policy != Tristate::kOff) {
    void *p = nullptr;
    const Status st = runtime.MallocHost(&p, b.bytes);
    if (st.ok()) {
      b.data = static_cast<char *>(p);
      b.pinned = true;
      b.runtime = &runtime;
    } else if (!warned_pinned_) {
      warned_pinned_ = true;
      if (policy == Tristate::kOn || st.code() != infinicclNotSupported) {
        INFINICCL_WARN("pinned staging memory unavailable (%s); using pageable memory",
                       st.message().c_str());
      } else {
        INFINICCL_INFO("%s offers no pinned memory (%s); staging in pageable memory",
                       runtime.description(), st.message().c_str());
      }
    }
  }
  if (b.data == nullptr) {
    b.data = static_cast<char *>(std::aligned_alloc(kGranule, b.bytes));
    if (b.data == nullptr) {
      *status = MakeStatus(infinicclSystemError,
                           "cannot allocate %zu bytes of host staging memory", b.bytes);
      return StagingBlock{};
    }
  }
  ++allocations_;
  held_bytes_ += b.bytes;
  if (b.pinned) pinned_held_bytes_ += b.bytes;
  peak_bytes_ = std::max(peak_bytes_, held_bytes_);
  return b;
}

void StagingPool::DeferFreesOnThisThread() { t_defers_frees = true; }

void StagingPool::FreeDeferredLocked() {
  if (t_defers_frees || deferred_.empty()) return;
  std::vector<StagingBlock> blocks = std::move(deferred_);
  deferred_.clear();
  deferred_bytes_.store(0, std::memory_order_relaxed);
  for (const StagingBlock &b : blocks) FreeLocked(b);
}

void StagingPool::FreeDeferred(bool over_cap_only) {
  const size_t bytes = deferred_bytes_.load(std::memory_order_relaxed);
  if (bytes == 0 || t_defers_frees || (over_cap_only && bytes < cap_bytes())) return;
  std::lock_guard<std::mutex> lock(mutex_);
  FreeDeferredLocked();
}

void StagingPool::FreeLocked(const StagingBlock &b) {
  if (b.pinned && t_defers_frees) {
    // Still held (and counted) until a thread that may wait for the device
    // frees it.
    deferred_.push_back(b);
    deferred_bytes_.fetch_add(b.bytes, std::memory_order_relaxed);
    return;
  }
  if (b.pinned) {
    b.runtime->FreeHost(b.data);
    pinned_held_bytes_ -= b.bytes;
  } else {
    std::free(b.data);
  }
  held_bytes_ -= b.bytes;
  ++frees_;
}

Status StagingPool::Lease(size_t bytes, DeviceRuntime &runtime, const void *owner,
                          StagingLease *out, OverCap over_cap) {
  out->Reset();
  std::lock_guard<std::mutex> lock(mutex_);
  FreeDeferredLocked();
  // Best fit among idle buffers usable with this runtime.
  auto best = idle_.end();
  for (auto it = idle_.begin(); it != idle_.end(); ++it) {
    const bool usable = !it->pinned || it->runtime == &runtime;
    if (usable && it->bytes >= bytes && (best == idle_.end() || it->bytes < best->bytes)) {
      best = it;
    }
  }
  StagingBlock b;
  if (best != idle_.end()) {
    b = *best;
    idle_.erase(best);
  } else {
    if (over_cap == OverCap::kDecline) {
      // Leased (neither idle nor on its way out) + this one over the cap:
      // nothing leased, and no idle buffer freed for it.
      size_t idle = 0;
      for (const StagingBlock &i : idle_) idle += i.bytes;
      if (held_bytes_ - idle - deferred_bytes_.load(std::memory_order_relaxed) +
              RoundUp(bytes) > cap_bytes()) {
        return Status::Ok();
      }
    }
    EnforceCapLocked(RoundUp(bytes));
    Status st;
    b = AllocateLocked(bytes, runtime, &st);
    if (b.data == nullptr) return st;
    b.owner = owner;
  }
  if (b.owner != owner) b.shared = true;
  out->pool_ = this;
  out->block_ = b;
  return Status::Ok();
}

void StagingPool::Return(StagingBlock block) {
  std::lock_guard<std::mutex> lock(mutex_);
  idle_.push_back(block);
  EnforceCapLocked(0);
}

void StagingPool::EnforceCapLocked(size_t incoming) {
  const size_t cap = cap_bytes();
  // Deferred frees count as gone: they are on their way out.
  while (held_bytes_ - deferred_bytes_.load(std::memory_order_relaxed) + incoming > cap &&
         !idle_.empty()) {
    auto largest = std::max_element(
        idle_.begin(), idle_.end(),
        [](const StagingBlock &a, const StagingBlock &b) { return a.bytes < b.bytes; });
    FreeLocked(*largest);
    idle_.erase(largest);
  }
}

void StagingPool::Trim() {
  std::lock_guard<std::mutex> lock(mutex_);
  FreeDeferredLocked();
  for (const StagingBlock &b : idle_) FreeLocked(b);
  idle_.clear();
}

void StagingPool::ReleaseOwner(const void *owner) {
  std::lock_guard<std::mutex> lock(mutex_);
  FreeDeferredLocked();
  auto keep = std::partition(idle_.begin(), idle_.end(), [&](const StagingBlock &b) {
    return b.shared || b.owner != owner;
  });
  for (auto it = keep; it != idle_.end(); ++it) FreeLocked(*it);
  idle_.erase(keep, idle_.end());
}

void StagingPool::CountCopy(CopyKind kind, size_t bytes) {
  if (kind == CopyKind::kDeviceToHost) {
    d2h_copies_.fetch_add(1, std::memory_order_relaxed);
    d2h_bytes_.fetch_add(bytes, std::memory_order_relaxed);
  } else {
    h2d_copies_.fetch_add(1, std::memory_order_relaxed);
    h2d_bytes_.fetch_add(bytes, std::memory_order_relaxed);
  }
}

void StagingPool::CountCall(bool pipelined) {
  staged_calls_.fetch_add(1, std::memory_order_relaxed);
  if (pipelined) pipelined_calls_.fetch_add(1, std::memory_order_relaxed);
}

void StagingPool::CountDirect() { direct_calls_.fetch_add(1, std::memory_order_relaxed); }

infinicclStagingStats StagingPool::Stats() {
  infinicclStagingStats s{};
  std::lock_guard<std::mutex> lock(mutex_);
  s.allocations = allocations_;
  s.frees = frees_;
  s.bytes_held = held_bytes_;
  s.peak_bytes_held = peak_bytes_;
  s.pinned = held_bytes_ > 0 && pinned_held_bytes_ == held_bytes_;
  s.d2h_copies = d2h_copies_.load();
  s.d2h_bytes = d2h_bytes_.load();
  s.h2d_copies = h2d_copies_.load();
  s.h2d_bytes = h2d_bytes_.load();
  s.staged_calls = staged_calls_.load();
  s.pipelined_calls = pipelined_calls_.load();
  s.direct_calls = direct_calls_.load();
  return s;
}

void StagingPool::ResetCounters() {
  std::lock_guard<std::mutex> lock(mutex_);
  allocations_ = frees_ = 0;
  peak_bytes_ = held_bytes_;
  for (auto *c : {&d2h_copies_, &d2h_bytes_, &h2d_copies_, &h2d_bytes_, &staged_calls_,
                  &pipelined_calls_, &direct_calls_}) {
    c->store(0);
  }
}

}  // namespace infiniccl
