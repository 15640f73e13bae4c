// The torch backend's worker: the group's queue of host calls (Enqueue,
// EnqueuePost, Loop), calls run in the caller's thread or on torch's current
// stream, work run on the worker from another thread (OnWorker), and errors
// turned into torch's (Capture). See backend.h.
#include "backend.h"

// pybind11 alone (the GIL released while a call waits), not torch/extension.h:
// each object that includes the latter compiles for half a minute more.
#include <pybind11/pybind11.h>

namespace py = pybind11;

#pragma GCC visibility push(hidden)
namespace infiniccl_c10d {

void BackendInfiniCCL::JoinWorker() {
  if (worker_.joinable()) {
    // The worker may need the GIL to drop the last reference of a tensor
    // that Python also saw.
    if (Py_IsInitialized() && PyGILState_Check()) {
      py::gil_scoped_release release;
      worker_.join();
    } else {
      worker_.join();
    }
  }
}

void BackendInfiniCCL::OnWorker(const char *what, const std::function<void()> &fn) {
  auto work = c10::make_intrusive<WorkInfiniCCL>(rank_, OpType::UNKNOWN, what, timeout_,
                                                 std::vector<at::Tensor>(), group_);
  Enqueue(
      work,
      [this, &fn](void *) {
        bool open;
        {
          std::lock_guard<std::mutex> lock(mu_);
          open = p2p_open_;
        }
        if (open) Flush();
        fn();
      },
      c10::Device(c10::kCPU), nullptr);
  if (Py_IsInitialized() && PyGILState_Check()) {
    py::gil_scoped_release release;
    work->wait(Ms(0));
  } else {
    work->wait(Ms(0));
  }
}

void *BackendInfiniCCL::StreamOf(const std::vector<at::Tensor> &a,
                                 const std::vector<at::Tensor> &b, c10::Device *device) {
  *device = c10::Device(c10::kCPU);
  bool first = true;
  for (const auto *v : {&a, &b}) {
    for (const auto &t : *v) {
      if (first) {
        *device = t.device();
        first = false;
      } else if (t.device() != *device) {
        Fail("tensors on different devices (" + device->str() + " and " +
             t.device().str() + ") in one call");
      }
    }
  }
  if (device->is_cpu()) return nullptr;
  // Before any pointer reaches the library.
  CheckDeviceRuntime(*device);
#if INFINICCL_TORCH_AT_LEAST(2, 11)
  auto *impl = c10::impl::getDeviceGuardImpl(device->type());
  c10::Stream s = impl->getStream(*device);
  try {
    return s.native_handle();
  } catch (const std::exception &) {
    Fail("a tensor on device " + device->str() + ": its streams have no native handle");
  }
#else
  Fail("a tensor on device " + device->str() + ": this build of infiniccl._c10d is for torch " +
       TORCH_VERSION + ", whose streams give no native handle (c10::Stream::native_handle, "
       "torch 2.11 or later); device tensors need torch 2.11 or later, CPU tensors work");
#endif
}

std::exception_ptr BackendInfiniCCL::Capture(
    const c10::intrusive_ptr<WorkInfiniCCL> &work, const std::function<void()> &f) {
  try {
    f();
  } catch (const c10::Error &e) {
    try {
      std::string m = e.what_without_backtrace();
      const std::string prefix = "infiniccl (torch.distributed): ";
      if (m.compare(0, prefix.size(), prefix) == 0) m = m.substr(prefix.size());
      Fail(work->what() + ": " + m);
    } catch (...) {
      return std::current_exception();
    }
  } catch (const std::exception &e) {
    try {
      Fail(work->what() + ": " + e.what());
    } catch (...) {
      return std::current_exception();
    }
  }
  return nullptr;
}

void BackendInfiniCCL::Run(const c10::intrusive_ptr<WorkInfiniCCL> &work, const Job &job,
                           void *stream) {
  work->Begin();
  work->Done(Capture(work, [&] { job(stream); }));
}

void BackendInfiniCCL::Enqueue(const c10::intrusive_ptr<WorkInfiniCCL> &work, Job job,
                               c10::Device device, void *stream, bool inline_host,
                               const std::vector<at::Tensor> &keep) {
  std::unique_lock<std::mutex> lock(mu_);
  if (stop_) {
    const bool aborted = aborted_;
    lock.unlock();
    Fail(work->what() + ": " + (aborted ? kAborted : kDestroyed));
  }
  if (device.is_cpu() && inline_host) {
    if (queue_.empty() && !busy_ && !p2p_open_) {
      // In call order: calls submitted meanwhile queue behind this one.
      busy_ = true;
      lock.unlock();
      Run(work, job, nullptr);
      lock.lock();
      busy_ = false;
      if (!queue_.empty()) cv_.notify_one();
      idle_cv_.notify_all();
      return;
    }
  }
  if (!device.is_cpu()) {
    if (p2p_open_ || !queue_.empty()) QueueFlushLocked();
    idle_cv_.wait(lock, [&] { return queue_.empty() && !busy_ && !p2p_open_; });
    lock.unlock();
    // On torch's current stream of the device: the library queues the call
    // there; the Work is complete for the host, and its event marks the
    // call's end on the stream.
    work->Begin();
    std::exception_ptr err = Capture(work, [&] {
      job(stream);
      work->OnStream(device, c10::impl::getDeviceGuardImpl(device.type())->getStream(device),
                     keep);
    });
    work->Done(err);
    return;
  }
  queue_.push_back(Item{Kind::kCall, work, std::move(job), {}});
  lock.unlock();
  cv_.notify_one();
}

void BackendInfiniCCL::EnqueuePost(const c10::intrusive_ptr<WorkInfiniCCL> &work,
                                   std::vector<P2POp> p2p) {
  std::unique_lock<std::mutex> lock(mu_);
  if (stop_) {
    const bool aborted = aborted_;
    lock.unlock();
    Fail(work->what() + ": " + (aborted ? kAborted : kDestroyed));
  }
  queue_.push_back(Item{Kind::kPost, work, nullptr, std::move(p2p)});
  lock.unlock();
  cv_.notify_one();
}

void BackendInfiniCCL::QueueFlushLocked() {
  if (!queue_.empty() && queue_.back().kind == Kind::kFlush) return;
  if (stop_ && !p2p_open_ && queue_.empty()) return;
  queue_.push_back(Item{Kind::kFlush, nullptr, nullptr, {}});
  cv_.notify_one();
}

void BackendInfiniCCL::Refuse(const char *what) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stop_) {
    Fail(std::string(what) + ": " + kDestroyed);
  }
}

void BackendInfiniCCL::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    // busy_: a call runs in its caller's thread; the queue waits for it.
    cv_.wait(lock, [&] { return !busy_ && (stop_ || !queue_.empty()); });
    if (queue_.empty()) {
      // Stopping: the posted P2P calls complete first.
      if (p2p_open_) {
        busy_ = true;
        lock.unlock();
        Flush();
        lock.lock();
        busy_ = false;
      }
      idle_cv_.notify_all();
      return;
    }
    Item item = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    switch (item.kind) {
      case Kind::kCall: Run(item.work, item.job, nullptr); break;
      case Kind::kPost: Post(item); break;
      case Kind::kFlush: Flush(); break;
    }
    lock.lock();
    busy_ = false;
    if (queue_.empty()) idle_cv_.notify_all();
  }
}
}  // namespace infiniccl_c10d
#pragma GCC visibility pop
