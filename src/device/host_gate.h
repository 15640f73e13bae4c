// HostGate: the host side of a gate (DeviceRuntime::GateWait): a 32-bit
// counter and the means to block a thread until it reaches a target. The
// emulated device's streams and the host-function waits of CUDA-like
// runtimes block in Wait; CUDA's stream memory operations read `word()`
// from the device instead (it then lives in mapped, page-locked memory).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "device/device_runtime.h"
#include "device/spin_wait.h"

namespace infiniccl {

class HostGate {
 public:
  // `word`: where the counter lives (memory the device can read), or
  // nullptr for the gate's own.
  explicit HostGate(uint32_t *word = nullptr) : word_(word != nullptr ? word : &own_) {}
  HostGate(const HostGate &) = delete;
  HostGate &operator=(const HostGate &) = delete;

  uint32_t *word() { return word_; }
  void Open(uint32_t value) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      __atomic_store_n(word_, value, __ATOMIC_RELEASE);
    }
    cv_.notify_all();
  }
  void Wait(uint32_t target) {
    if (SpinFor([&] { return GateReached(__atomic_load_n(word_, __ATOMIC_ACQUIRE), target); })) {
      return;
    }
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [&] { return GateReached(__atomic_load_n(word_, __ATOMIC_ACQUIRE), target); });
  }

 private:
  uint32_t own_ = 0;
  uint32_t *word_;
  std::mutex mutex_;
  std::condition_variable cv_;
};

}  // namespace infiniccl
