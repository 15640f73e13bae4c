#include "staging/staging_pool.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "core/config.h"
#include "core/log.h"
#include "core/threads.h"

namespace infiniccl {

namespace {

// Page-granular sizes: cheap to reuse across nearby sizes, little waste.
constexpr size_t kGranule = 4096;
size_t RoundUp(size_t n) { return (std::max<size_t>(n, 1) + kGranule - 1) / kGranule * kGranule; }

thread_local bool t_no_device_wait = false;

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

StagingBlock StagingPool::Allocate(size_t bytes, DeviceRuntime &runtime, Status *status) {
  StagingBlock b;
  b.bytes = bytes;
  const Tristate policy = GlobalConfig().staging_pinned;
  // A thread that must not wait for the device allocates pageable memory:
  // cudaMallocHost may wait for it (the CUDA guide's implicit
  // synchronisation). It asks the memory thread for the pinned block instead.
  if (policy != Tristate::kOff && t_no_device_wait) {
    std::lock_guard<std::mutex> lock(mutex_);
    // (warned_pinned_ is set where pinned memory failed: none to ask for.)
    const bool asked = std::any_of(wanted_.begin(), wanted_.end(), [&](const Wanted &w) {
      return w.runtime == &runtime && w.bytes >= bytes;
    });
    if (!warned_pinned_ && !asked) {
      wanted_.push_back({bytes, &runtime});
      WakeMemoryThreadLocked();
    }
  } else if (policy != Tristate::kOff) {
    void *p = nullptr;
    const Status st = runtime.MallocHost(&p, b.bytes);
    std::lock_guard<std::mutex> lock(mutex_);
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
  std::lock_guard<std::mutex> lock(mutex_);
  ++allocations_;
  if (b.pinned) pinned_held_bytes_ += b.bytes;
  return b;
}

void StagingPool::DeferFreesOnThisThread() { t_no_device_wait = true; }

StagingPool::NoDeviceWait::NoDeviceWait() : saved_(t_no_device_wait) { t_no_device_wait = true; }
StagingPool::NoDeviceWait::~NoDeviceWait() { t_no_device_wait = saved_; }

void StagingPool::WakeMemoryThreadLocked() {
  memory_work_ = true;
  const long pid = static_cast<long>(getpid());
  if (memory_thread_pid_ != pid) {  // first use, or a forked child
    memory_thread_pid_ = pid;
    memory_busy_ = false;
    try {
      std::thread([this] { MemoryThreadLoop(); }).detach();
    } catch (const std::system_error &) {
      // No thread: the buffers asked for are made, and the deferred frees
      // done, by the next thread that may wait (Quiesce, a synchronous call).
      memory_thread_pid_ = 0;
      return;
    }
  }
  memory_cv_.notify_one();
}

void StagingPool::MemoryThreadLoop() {
  NameThisThread("iccl-pinned");
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    memory_cv_.wait(lock, [this] { return memory_work_; });
    memory_work_ = false;
    memory_busy_ = true;
    lock.unlock();
    Replenish();
    FreeDeferred(/*over_cap_only=*/true);
    lock.lock();
    memory_busy_ = false;
    if (!memory_work_) quiet_cv_.notify_all();
  }
}

void StagingPool::Quiesce() {
  bool inline_work = false;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    if (memory_thread_pid_ == static_cast<long>(getpid())) {
      quiet_cv_.wait(lock, [this] { return !memory_work_ && !memory_busy_; });
    } else {
      inline_work = memory_work_;
      memory_work_ = false;
    }
  }
  if (inline_work && !t_no_device_wait) Replenish();
}

void StagingPool::TakeDeferredLocked(std::vector<StagingBlock> *to_free) {
  if (t_no_device_wait || deferred_.empty()) return;
  for (const StagingBlock &b : deferred_) DetachLocked(b, to_free);
  deferred_.clear();
  deferred_bytes_.store(0, std::memory_order_relaxed);
}

void StagingPool::FreeDeferred(bool over_cap_only) {
  const size_t bytes = deferred_bytes_.load(std::memory_order_relaxed);
  if (bytes == 0 || t_no_device_wait || (over_cap_only && bytes < cap_bytes())) return;
  std::vector<StagingBlock> to_free;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    TakeDeferredLocked(&to_free);
  }
  Release(to_free);
}

void StagingPool::Prime(size_t bytes, DeviceRuntime &runtime) {
  if (GlobalConfig().staging_pinned == Tristate::kOff || t_no_device_wait) return;
  bytes = std::min(RoundUp(bytes), cap_bytes());
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (warned_pinned_ || std::any_of(idle_.begin(), idle_.end(), [&](const StagingBlock &b) {
          return b.pinned && b.runtime == &runtime && b.bytes >= bytes;
        })) {
      return;
    }
    wanted_.push_back({bytes, &runtime});
  }
  Replenish();
}

void StagingPool::Replenish() {
  if (t_no_device_wait) return;
  std::vector<Wanted> wanted;
  std::vector<StagingBlock> to_free;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (wanted_.empty()) return;
    wanted.swap(wanted_);
    // The pageable blocks the engines made give way to pinned ones.
    auto pageable = std::partition(idle_.begin(), idle_.end(),
                                   [](const StagingBlock &b) { return b.pinned; });
    for (auto it = pageable; it != idle_.end(); ++it) DetachLocked(*it, &to_free);
    idle_.erase(pageable, idle_.end());
  }
  Release(to_free);
  for (const Wanted &w : wanted) MakeIdlePinned(w);
}

void StagingPool::MakeIdlePinned(const Wanted &w) {
  const size_t rounded = RoundUp(w.bytes);
  std::vector<StagingBlock> to_free;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // Only a pinned block answers the request: a pageable one that came back
    // idle meanwhile (the asking thread's own) would keep the engines
    // staging in pageable memory.
    if (std::any_of(idle_.begin(), idle_.end(), [&](const StagingBlock &b) {
          return b.pinned && b.runtime == w.runtime && b.bytes >= w.bytes;
        })) {
      return;
    }
    // Leased (neither idle nor on its way out) + this one over the cap: none.
    size_t idle = 0;
    for (const StagingBlock &i : idle_) idle += i.bytes;
    if (held_bytes_ - idle - deferred_bytes_.load(std::memory_order_relaxed) + rounded >
        cap_bytes()) {
      return;
    }
    EnforceCapLocked(rounded, &to_free);
    held_bytes_ += rounded;
    peak_bytes_ = std::max(peak_bytes_, held_bytes_);
  }
  Release(to_free);
  Status st;
  StagingBlock b = Allocate(rounded, *w.runtime, &st);
  if (b.data == nullptr) {
    std::lock_guard<std::mutex> lock(mutex_);
    held_bytes_ -= rounded;
    return;
  }
  b.shared = true;  // idle for the engines' next lease, no one communicator's
  Return(b);
}

void StagingPool::DetachLocked(const StagingBlock &b, std::vector<StagingBlock> *to_free) {
  if (b.pinned && t_no_device_wait) {
    // Still held (and counted) until a thread that may wait for the device
    // frees it: the memory thread, once they reach the cap.
    deferred_.push_back(b);
    if (deferred_bytes_.fetch_add(b.bytes, std::memory_order_relaxed) + b.bytes >=
        cap_bytes()) {
      WakeMemoryThreadLocked();
    }
    return;
  }
  if (b.pinned) pinned_held_bytes_ -= b.bytes;
  held_bytes_ -= b.bytes;
  ++frees_;
  to_free->push_back(b);
}

void StagingPool::Release(const std::vector<StagingBlock> &blocks) {
  // Without mutex_: cudaFreeHost waits for the device, whose streams may
  // wait for gates that a thread needing mutex_ opens.
  for (const StagingBlock &b : blocks) {
    if (b.pinned) {
      b.runtime->FreeHost(b.data);
    } else {
      std::free(b.data);
    }
  }
}

Status StagingPool::Lease(size_t bytes, DeviceRuntime &runtime, const void *owner,
                          StagingLease *out, OverCap over_cap) {
  out->Reset();
  std::vector<StagingBlock> to_free;
  const size_t rounded = RoundUp(bytes);
  bool declined = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    TakeDeferredLocked(&to_free);
    // Best fit among idle buffers usable with this runtime; pinned first
    // where this thread's copies need pinned memory (a caller's stream).
    auto best = idle_.end();
    for (auto it = idle_.begin(); it != idle_.end(); ++it) {
      const bool usable = !it->pinned || it->runtime == &runtime;
      if (usable && it->bytes >= bytes &&
          (best == idle_.end() || it->pinned > best->pinned ||
           (it->pinned == best->pinned && it->bytes < best->bytes))) {
        best = it;
      }
    }
    if (best != idle_.end()) {
      StagingBlock b = *best;
      idle_.erase(best);
      if (b.owner != owner) b.shared = true;
      out->pool_ = this;
      out->block_ = b;
    } else {
      if (over_cap == OverCap::kDecline) {
        // Leased (neither idle nor on its way out) + this one over the cap:
        // nothing leased, and no idle buffer freed for it.
        size_t idle = 0;
        for (const StagingBlock &i : idle_) idle += i.bytes;
        declined = held_bytes_ - idle - deferred_bytes_.load(std::memory_order_relaxed) +
                       rounded >
                   cap_bytes();
      }
      if (!declined) {
        EnforceCapLocked(rounded, &to_free);
        held_bytes_ += rounded;  // counted now: concurrent leases see it
        peak_bytes_ = std::max(peak_bytes_, held_bytes_);
      }
    }
  }
  Release(to_free);
  if (out->pool_ != nullptr || declined) return Status::Ok();
  Status st;
  StagingBlock b = Allocate(rounded, runtime, &st);
  if (b.data == nullptr) {
    std::lock_guard<std::mutex> lock(mutex_);
    held_bytes_ -= rounded;
    return st;
  }
  b.owner = owner;
  out->pool_ = this;
  out->block_ = b;
  return Status::Ok();
}

void StagingPool::Return(StagingBlock block) {
  std::vector<StagingBlock> to_free;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    idle_.push_back(block);
    EnforceCapLocked(0, &to_free);
  }
  Release(to_free);
}

void StagingPool::EnforceCapLocked(size_t incoming, std::vector<StagingBlock> *to_free) {
  const size_t cap = cap_bytes();
  // Deferred frees count as gone: they are on their way out.
  while (held_bytes_ - deferred_bytes_.load(std::memory_order_relaxed) + incoming > cap &&
         !idle_.empty()) {
    auto largest = std::max_element(
        idle_.begin(), idle_.end(),
        [](const StagingBlock &a, const StagingBlock &b) { return a.bytes < b.bytes; });
    DetachLocked(*largest, to_free);
    idle_.erase(largest);
  }
}

void StagingPool::Trim() {
  Quiesce();  // nothing made behind the trim
  std::vector<StagingBlock> to_free;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    TakeDeferredLocked(&to_free);
    for (const StagingBlock &b : idle_) DetachLocked(b, &to_free);
    idle_.clear();
  }
  Release(to_free);
}

void StagingPool::ReleaseOwner(const void *owner) {
  std::vector<StagingBlock> to_free;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    TakeDeferredLocked(&to_free);
    auto keep = std::partition(idle_.begin(), idle_.end(), [&](const StagingBlock &b) {
      return b.shared || b.owner != owner;
    });
    for (auto it = keep; it != idle_.end(); ++it) DetachLocked(*it, &to_free);
    idle_.erase(keep, idle_.end());
  }
  Release(to_free);
}

void StagingPool::CountCopy(CopyKind kind, size_t bytes, size_t copies) {
  if (kind == CopyKind::kDeviceToHost) {
    d2h_copies_.fetch_add(copies, std::memory_order_relaxed);
    d2h_bytes_.fetch_add(bytes, std::memory_order_relaxed);
  } else {
    h2d_copies_.fetch_add(copies, std::memory_order_relaxed);
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
