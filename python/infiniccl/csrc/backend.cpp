// The torch backend's creation (one BackendInfiniCCL per process group and
// its communicator), how it names itself in messages, and the Python module
// infiniccl._c10d (see backend.h). The group's worker: worker.cpp; its end,
// abort, split_group and shrink_group: lifecycle.cpp.
#include "backend.h"

#include <torch/extension.h>

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
