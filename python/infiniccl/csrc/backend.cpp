// The torch backend's life: creation, the group's worker and its queue
// (Enqueue, Loop), shutdown, abort, split_group, shrink_group, its
// options; and the Python module infiniccl._c10d (see backend.h).
#include "backend.h"

#include <torch/extension.h>

#include <algorithm>
#include <sstream>

#pragma GCC visibility push(hidden)
namespace infiniccl_c10d {

BackendInfiniCCL::BackendInfiniCCL(int64_t comm, int rank, int size, int64_t timeout_ms,
                                   std::string name, std::vector<int64_t> ranks,
                                   c10::intrusive_ptr<c10d::Store> store)
    : c10d::Backend(rank, size),
      comm_(reinterpret_cast<infinicclComm_t>(comm)),
      timeout_(Ms(timeout_ms)),
      name_(std::move(name)),
      ranks_(std::move(ranks)),
      store_(std::move(store)),
      group_(std::make_shared<GroupState>(comm_, Where())) {
  group_->flush = [this] { QueueFlush(); };
  worker_ = std::thread([this] { Loop(); });
}

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

std::string BackendInfiniCCL::Where() const {
  std::ostringstream s;
  s << " on process group '" << name_ << "' (ranks";
  for (size_t i = 0; i < ranks_.size(); ++i) s << (i ? "," : " ") << ranks_[i];
  if (ranks_.empty()) s << " 0.." << size_ - 1;
  s << "; this is rank " << rank_ << ")";
  return s.str();
}

void BackendInfiniCCL::Check(infinicclResult_t rc) {
  if (rc == infinicclSuccess) return;
  std::string msg = infinicclGetLastError(comm_);
  if (msg.empty()) msg = infinicclGetLastError(nullptr);
  throw std::runtime_error(std::string(infinicclGetErrorString(rc)) + ": " + msg);
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

using infiniccl_c10d::BackendInfiniCCL;

namespace infiniccl_sim {
// sim_device.cpp: the module's "sim" submodule (infiniccl.torch_sim).
void Bind(pybind11::module_ &m);
}  // namespace infiniccl_sim

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "torch.distributed backend 'infiniccl' (c10d::Backend over libinfiniccl)";
  py::module_::import("torch.distributed");
  py::class_<BackendInfiniCCL, c10d::Backend, c10::intrusive_ptr<BackendInfiniCCL>>(
      m, "Backend")
      .def(py::init([](int64_t comm, int rank, int size, int64_t timeout_ms,
                       std::string name, std::vector<int64_t> ranks,
                       c10::intrusive_ptr<c10d::Store> store) {
             return c10::make_intrusive<BackendInfiniCCL>(
                 comm, rank, size, timeout_ms, std::move(name), std::move(ranks),
                 std::move(store));
           }),
           py::arg("comm"), py::arg("rank"), py::arg("size"), py::arg("timeout_ms"),
           py::arg("name"), py::arg("ranks"), py::arg("store") = py::none())
      .def("shutdown", &BackendInfiniCCL::Shutdown,
           py::call_guard<py::gil_scoped_release>(),
           "Finishes the queued calls and destroys the communicator.")
      .def_property_readonly("timeout_ms", &BackendInfiniCCL::timeoutMs);
  m.def("check_device",
        [](const std::string &device) {
          infiniccl_c10d::CheckDeviceRuntime(c10::Device(device));
        },
        py::arg("device"),
        "Raises RuntimeError for a device (\"cuda:0\", \"meta\", ...) whose runtime the "
        "library lacks, as every collective and send/recv does for its tensors.");
  m.def("library_runtimes", &infiniccl_c10d::LibraryRuntimes,
        "The device runtimes the library was built with (infinicclGetDeviceRuntimes).");
  infiniccl_sim::Bind(m);
}
