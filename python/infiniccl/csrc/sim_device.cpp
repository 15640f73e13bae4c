// The EMULATED device as torch's privateuse1 backend (infiniccl.torch_sim
// renames it "sim"), over the library's emulated-device API
// (infiniccl/infiniccl_sim.h):
//   memory   a caching allocator over infinicclSimMalloc: a freed block is
//            reused only by work on the stream it was allocated on, or,
//            when recordStream named other streams, once those streams have
//            passed the free (an event recorded on each at the free);
//   streams  torch.Stream / torch.Event through a DeviceGuardImpl: every
//            stream, torch's default one included, is an emulated stream
//            made by infinicclSimStreamCreate (its handle is the native
//            handle); events are emulated events;
//   kernels  copies (_copy_from) through infinicclSimMemcpy on the current
//            stream; views as on the CPU; every other ATen op through
//            torch's CPU fallback (the inputs copied to the host on the
//            current stream, the CPU kernel, the results copied back), so
//            each such op is ordered after the work queued on the current
//            stream and returns when its results are in emulated memory.
// Registered at run time by register_sim (infiniccl.torch_sim), never at
// load: a program that does not import torch_sim keeps privateuse1 free.
// Needs torch 2.15 or later (the interfaces it implements); the module
// function sim_supported says whether this build has it.

#include <torch/extension.h>
#include <torch/version.h>

#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 15)
#define INFINICCL_TORCH_SIM 1
#endif

#ifdef INFINICCL_TORCH_SIM
#include <ATen/EmptyTensor.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <ATen/native/CPUFallback.h>
#include <ATen/native/Resize.h>
#include <ATen/native/TensorFactories.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/library.h>

#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "infiniccl/infiniccl_sim.h"
#endif

#pragma GCC visibility push(hidden)
namespace infiniccl_sim {

#ifdef INFINICCL_TORCH_SIM
namespace {

constexpr c10::DeviceType kSim = c10::DeviceType::PrivateUse1;

void Check(infinicclResult_t rc, const char *call) {
  TORCH_CHECK(rc == infinicclSuccess, "infiniccl EMULATED device: ", call, ": ",
              infinicclGetErrorString(rc), ": ", infinicclGetLastError(nullptr));
}

// ---- streams ----
// Stream ids: 0 torch's default stream, i > 0 the i-th stream made here;
// each an emulated stream made by infinicclSimStreamCreate (not the
// library's NULL stream, on which infinicclSimMemcpy copies at once rather
// than in order). Streams live until the process ends.
struct Streams {
  std::mutex mu;
  void *default_stream = nullptr;
  std::vector<void *> made;  // made[i - 1]: stream id i
  std::vector<c10::StreamId> pool;  // getStreamFromGlobalPool's, round robin
  size_t next_pool = 0;
};
Streams &S() {
  static Streams *s = new Streams();
  return *s;
}
constexpr size_t kPoolSize = 4;

thread_local c10::StreamId current_stream = 0;

void *Handle(c10::StreamId id) {
  std::lock_guard<std::mutex> lock(S().mu);
  if (id == 0) return S().default_stream;
  TORCH_CHECK(id > 0 && static_cast<size_t>(id) <= S().made.size(),
              "infiniccl EMULATED device: no stream with id ", id);
  return S().made[static_cast<size_t>(id) - 1];
}

// Handle without the id check, under the streams' lock.
void *HandleNoThrow(c10::StreamId id) {
  std::lock_guard<std::mutex> lock(S().mu);
  if (id == 0) return S().default_stream;
  if (id < 0 || static_cast<size_t>(id) > S().made.size()) return nullptr;
  return S().made[static_cast<size_t>(id) - 1];
}

c10::StreamId NewStream() {
  void *h = nullptr;
  Check(infinicclSimStreamCreate(&h), "infinicclSimStreamCreate");
  std::lock_guard<std::mutex> lock(S().mu);
  S().made.push_back(h);
  return static_cast<c10::StreamId>(S().made.size());
}

c10::Stream MakeStream(c10::StreamId id) {
  return c10::Stream(c10::Stream::UNSAFE, c10::Device(kSim, 0), id);
}

c10::Stream CurrentStream() { return MakeStream(current_stream); }

// ---- the caching allocator ----
constexpr size_t kRound = 512;

struct Block {
  void *ptr = nullptr;
  size_t size = 0;
  c10::StreamId stream = 0;           // allocated on
  std::set<c10::StreamId> used_on;    // recordStream's other streams
};

class SimAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t n) override {
    size_t size = n == 0 ? 0 : (n + kRound - 1) / kRound * kRound;
    const c10::StreamId stream = current_stream;
    void *ptr = nullptr;
    if (size > 0) {
      std::lock_guard<std::mutex> lock(mu_);
      Reclaim();
      auto it = free_.find({stream, size});
      if (it != free_.end() && !it->second.empty()) {
        ptr = it->second.back();
        it->second.pop_back();
      } else {
        Check(infinicclSimMalloc(&ptr, size), "infinicclSimMalloc");
        ++malloc_calls_;
      }
      Block b;
      b.ptr = ptr;
      b.size = size;
      b.stream = stream;
      live_[ptr] = b;
    }
    return {ptr, ptr, &Delete, c10::Device(kSim, 0)};
  }

  c10::DeleterFnPtr raw_deleter() const override { return &Delete; }

  void copy_data(void *dest, const void *src, std::size_t count) const override {
    Check(infinicclSimMemcpy(dest, src, count, Handle(current_stream)), "infinicclSimMemcpy");
  }

  // The block is used by work on `stream` too (Tensor.record_stream).
  void RecordStream(const c10::DataPtr &ptr, c10::StreamId stream) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = live_.find(ptr.get());
    if (it == live_.end() || it->second.stream == stream) return;
    it->second.used_on.insert(stream);
  }

  void Free(void *ptr) {
    if (ptr == nullptr) return;
    std::lock_guard<std::mutex> lock(mu_);
    auto it = live_.find(ptr);
    if (it == live_.end()) return;
    Block b = std::move(it->second);
    live_.erase(it);
    if (b.used_on.empty()) {
      free_[{b.stream, b.size}].push_back(b.ptr);
      return;
    }
    // A deleter does not throw: where an event cannot be made or recorded,
    // the stream is waited for instead.
    Pending p;
    p.block = b;
    for (c10::StreamId s : b.used_on) {
      void *h = HandleNoThrow(s);
      void *e = nullptr;
      if (infinicclSimEventCreate(&e) != infinicclSuccess) {
        (void)infinicclSimStreamSynchronize(h);
        continue;
      }
      if (infinicclSimEventRecord(e, h) != infinicclSuccess) {
        (void)infinicclSimEventDestroy(e);
        (void)infinicclSimStreamSynchronize(h);
        continue;
      }
      p.events.push_back(e);
    }
    if (p.events.empty()) {
      free_[{b.stream, b.size}].push_back(b.ptr);
      return;
    }
    pending_.push_back(std::move(p));
  }

  // Frees the cached blocks (torch.sim.empty_cache()); waits for the pending.
  void EmptyCache() {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto &p : pending_) {
      for (void *e : p.events) {
        (void)infinicclSimEventSynchronize(e);
        (void)infinicclSimEventDestroy(e);
      }
      (void)infinicclSimFree(p.block.ptr);
    }
    pending_.clear();
    for (auto &kv : free_) {
      for (void *ptr : kv.second) (void)infinicclSimFree(ptr);
    }
    free_.clear();
  }

  // {blocks in use, blocks cached, blocks waiting for streams, infinicclSimMalloc calls}
  std::vector<int64_t> Stats() {
    std::lock_guard<std::mutex> lock(mu_);
    int64_t cached = 0;
    for (auto &kv : free_) cached += static_cast<int64_t>(kv.second.size());
    return {static_cast<int64_t>(live_.size()), cached, static_cast<int64_t>(pending_.size()),
            malloc_calls_};
  }

 private:
  struct Pending {
    Block block;
    std::vector<void *> events;
  };

  static void Delete(void *ptr);

  // Pending blocks whose streams have passed their free go back to the
  // cache of the stream they were allocated on.
  void Reclaim() {
    for (auto it = pending_.begin(); it != pending_.end();) {
      bool done = true;
      for (void *e : it->events) {
        int d = 0;
        Check(infinicclSimEventQuery(e, &d), "infinicclSimEventQuery");
        if (!d) {
          done = false;
          break;
        }
      }
      if (!done) {
        ++it;
        continue;
      }
      for (void *e : it->events) (void)infinicclSimEventDestroy(e);
      free_[{it->block.stream, it->block.size}].push_back(it->block.ptr);
      it = pending_.erase(it);
    }
  }

  std::mutex mu_;
  std::map<void *, Block> live_;
  std::map<std::pair<c10::StreamId, size_t>, std::vector<void *>> free_;
  std::vector<Pending> pending_;
  int64_t malloc_calls_ = 0;
};

SimAllocator &Alloc() {
  static SimAllocator *a = new SimAllocator();  // outlives every tensor
  return *a;
}

void SimAllocator::Delete(void *ptr) { Alloc().Free(ptr); }

// ---- the DeviceGuardImpl: one device, its streams and events ----
struct SimGuardImpl final : public c10::impl::DeviceGuardImplInterface {
  c10::DeviceType type() const override { return kSim; }
  c10::Device exchangeDevice(c10::Device d) const override {
    TORCH_CHECK(d.index() <= 0, "infiniccl EMULATED device: one device (sim:0)");
    return c10::Device(kSim, 0);
  }
  c10::Device getDevice() const override { return c10::Device(kSim, 0); }
  void setDevice(c10::Device d) const override {
    TORCH_CHECK(d.index() <= 0, "infiniccl EMULATED device: one device (sim:0)");
  }
  void uncheckedSetDevice(c10::Device) const noexcept override {}
  c10::Stream getStream(c10::Device) const override { return CurrentStream(); }
  c10::Stream getDefaultStream(c10::Device) const override { return MakeStream(0); }
  c10::Stream getStreamFromGlobalPool(c10::Device, bool) const override {
    std::unique_lock<std::mutex> lock(S().mu);
    if (S().pool.size() < kPoolSize) {
      lock.unlock();
      c10::StreamId id = NewStream();
      lock.lock();
      S().pool.push_back(id);
      return MakeStream(id);
    }
    return MakeStream(S().pool[S().next_pool++ % kPoolSize]);
  }
  c10::Stream getNewStream(c10::Device, int) const override { return MakeStream(NewStream()); }
  c10::Stream exchangeStream(c10::Stream s) const override {
    c10::Stream old = CurrentStream();
    current_stream = s.id();
    return old;
  }
  void *getStreamNativeHandle(const c10::Stream s) const override { return Handle(s.id()); }
  c10::DeviceIndex deviceCount() const noexcept override { return 1; }

  void destroyEvent(void *event, const c10::DeviceIndex) const noexcept override {
    if (event != nullptr) (void)infinicclSimEventDestroy(event);
  }
  void record(void **event, const c10::Stream &stream, const c10::DeviceIndex,
              const c10::EventFlag) const override {
    if (*event == nullptr) Check(infinicclSimEventCreate(event), "infinicclSimEventCreate");
    Check(infinicclSimEventRecord(*event, Handle(stream.id())), "infinicclSimEventRecord");
  }
  void block(void *event, const c10::Stream &stream) const override {
    if (event == nullptr) return;
    Check(infinicclSimStreamWaitEvent(Handle(stream.id()), event),
          "infinicclSimStreamWaitEvent");
  }
  bool queryEvent(void *event) const override {
    if (event == nullptr) return true;
    int done = 0;
    Check(infinicclSimEventQuery(event, &done), "infinicclSimEventQuery");
    return done != 0;
  }
  void synchronizeEvent(void *event) const override {
    if (event == nullptr) return;
    Check(infinicclSimEventSynchronize(event), "infinicclSimEventSynchronize");
  }
  bool queryStream(const c10::Stream &stream) const override {
    void *e = nullptr;
    Check(infinicclSimEventCreate(&e), "infinicclSimEventCreate");
    Check(infinicclSimEventRecord(e, Handle(stream.id())), "infinicclSimEventRecord");
    int done = 0;
    infinicclResult_t rc = infinicclSimEventQuery(e, &done);
    (void)infinicclSimEventDestroy(e);
    Check(rc, "infinicclSimEventQuery");
    return done != 0;
  }
  void synchronizeStream(const c10::Stream &stream) const override {
    Check(infinicclSimStreamSynchronize(Handle(stream.id())), "infinicclSimStreamSynchronize");
  }
  void synchronizeDevice(const c10::DeviceIndex) const override {
    std::vector<void *> all;
    {
      std::lock_guard<std::mutex> lock(S().mu);
      all = S().made;
      all.push_back(S().default_stream);
    }
    all.push_back(nullptr);
    for (void *h : all) Check(infinicclSimStreamSynchronize(h), "infinicclSimStreamSynchronize");
  }
  void recordDataPtrOnStream(const c10::DataPtr &ptr, const c10::Stream &stream) const override {
    Alloc().RecordStream(ptr, stream.id());
  }
};

// ---- hooks (torch.accelerator) ----
struct SimHooks final : public at::PrivateUse1HooksInterface {
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return true; }
  bool hasPrimaryContext(c10::DeviceIndex) const override { return true; }
  c10::DeviceIndex deviceCount() const override { return 1; }
  void setCurrentDevice(c10::DeviceIndex d) const override {
    TORCH_CHECK(d <= 0, "infiniccl EMULATED device: one device (sim:0)");
  }
  c10::DeviceIndex getCurrentDevice() const override { return 0; }
  c10::DeviceIndex exchangeDevice(c10::DeviceIndex) const override { return 0; }
  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex) const override { return 0; }
  at::Device getDeviceFromPtr(void *) const override { return c10::Device(kSim, 0); }
  void resizePrivateUse1Bytes(const c10::Storage &storage, size_t newsize) const override {
    Resize(storage, newsize);
  }
  static void Resize(const c10::Storage &storage, size_t newsize) {
    c10::StorageImpl *impl = storage.unsafeGetStorageImpl();
    TORCH_CHECK(impl->resizable(), "infiniccl EMULATED device: the storage is not resizable");
    c10::DataPtr fresh = Alloc().allocate(newsize);
    const size_t keep = std::min(newsize, impl->nbytes());
    if (keep > 0) {
      Check(infinicclSimMemcpy(fresh.get(), impl->data(), keep, Handle(current_stream)),
            "infinicclSimMemcpy");
    }
    impl->set_data_ptr_noswap(std::move(fresh));
    impl->set_nbytes(newsize);
  }
};

// ---- ATen kernels ----
c10::DispatchKeySet SimKeys() { return c10::DispatchKeySet(c10::DispatchKey::PrivateUse1); }

at::Tensor Empty(c10::IntArrayRef size, std::optional<at::ScalarType> dtype,
                 std::optional<at::Layout>, std::optional<at::Device>, std::optional<bool>,
                 std::optional<at::MemoryFormat> memory_format) {
  return at::detail::empty_generic(size, &Alloc(), SimKeys(),
                                   c10::dtype_or_default(dtype), memory_format);
}

at::Tensor EmptyStrided(c10::IntArrayRef size, c10::IntArrayRef stride,
                        std::optional<at::ScalarType> dtype, std::optional<at::Layout>,
                        std::optional<at::Device>, std::optional<bool>) {
  return at::detail::empty_strided_generic(size, stride, &Alloc(), SimKeys(),
                                           c10::dtype_or_default(dtype));
}

// A CPU tensor over the same memory (emulated memory is host memory).
at::Tensor HostAlias(const at::Tensor &t) {
  return at::from_blob(t.data_ptr(), t.sizes(), t.strides(), [](void *) {},
                       t.options().device(c10::kCPU));
}

bool IsSim(const at::Tensor &t) { return t.device().type() == kSim; }

// dst <- src, at least one on the emulated device. Contiguous copies of one
// type go through infinicclSimMemcpy on the current stream (a copy between
// emulated tensors stays queued; one touching host memory returns when
// done, so the host side may be reused at once); others wait for the
// stream and copy on the host.
at::Tensor CopyFrom(const at::Tensor &src, const at::Tensor &dst, bool non_blocking) {
  (void)non_blocking;
  void *stream = Handle(current_stream);
  if (src.numel() == 0) return dst;
  if (src.scalar_type() == dst.scalar_type() && src.sizes() == dst.sizes() &&
      src.is_contiguous() && dst.is_contiguous() && (IsSim(src) || src.is_cpu()) &&
      (IsSim(dst) || dst.is_cpu())) {
    Check(infinicclSimMemcpy(dst.data_ptr(), src.data_ptr(), src.nbytes(), stream),
          "infinicclSimMemcpy");
    if (!(IsSim(src) && IsSim(dst))) {
      Check(infinicclSimStreamSynchronize(stream), "infinicclSimStreamSynchronize");
    }
    return dst;
  }
  TORCH_CHECK((IsSim(src) || src.is_cpu()) && (IsSim(dst) || dst.is_cpu()),
              "infiniccl EMULATED device: copies between sim and cpu only, not ",
              src.device(), " to ", dst.device());
  Check(infinicclSimStreamSynchronize(stream), "infinicclSimStreamSynchronize");
  at::Tensor s = IsSim(src) ? HostAlias(src) : src;
  at::Tensor d = IsSim(dst) ? HostAlias(dst) : dst;
  d.copy_(s);
  return dst;
}

at::Tensor CopyFromAndResize(const at::Tensor &self, const at::Tensor &dst) {
  at::native::resize_(dst, self.sizes(), std::nullopt);
  return CopyFrom(self, dst, false);
}

const at::Tensor &Resize(const at::Tensor &self, c10::SymIntArrayRef size,
                         std::optional<at::MemoryFormat> memory_format) {
  auto *impl = self.unsafeGetTensorImpl();
  auto sizes = C10_AS_INTARRAYREF_SLOW(size);
  impl->set_sizes_contiguous(sizes);
  const size_t need = static_cast<size_t>(self.numel() + self.storage_offset()) *
                      self.dtype().itemsize();
  if (need > self.storage().nbytes()) SimHooks::Resize(self.storage(), need);
  if (memory_format.has_value() && *memory_format != at::MemoryFormat::Preserve) {
    impl->empty_tensor_restride(*memory_format);
  }
  return self;
}

at::Tensor AsStrided(const at::Tensor &self, c10::IntArrayRef size, c10::IntArrayRef stride,
                     std::optional<int64_t> storage_offset) {
  return at::native::as_strided_tensorimpl(self, size, stride, storage_offset);
}

at::Tensor &SetStorage(at::Tensor &self, c10::Storage source, int64_t offset,
                       c10::IntArrayRef size, c10::IntArrayRef stride) {
  self.unsafeGetTensorImpl()->set_storage_keep_dtype(std::move(source));
  self.unsafeGetTensorImpl()->set_storage_offset(offset);
  self.unsafeGetTensorImpl()->set_sizes_and_strides(size, stride);
  return self;
}

at::Tensor &SetSource(at::Tensor &self, c10::Storage source) {
  const int64_t n = static_cast<int64_t>(source.nbytes() / self.dtype().itemsize());
  return SetStorage(self, std::move(source), 0, {n}, {1});
}

at::Tensor &SetTensor(at::Tensor &self, const at::Tensor &source) {
  return SetStorage(self, source.storage(), source.storage_offset(), source.sizes(),
                    source.strides());
}

void RecordStreamOp(at::Tensor &self, c10::Stream s) {
  Alloc().RecordStream(self.storage().data_ptr(), s.id());
}

void Fallback(const c10::OperatorHandle &op, torch::jit::Stack *stack) {
  at::native::cpu_fallback(op, stack);
}

}  // namespace

bool Supported() { return true; }

void Register() {
  static std::once_flag once;
  std::call_once(once, [] {
    // Torch's default stream; fails when the emulated device is off.
    void *h = nullptr;
    Check(infinicclSimStreamCreate(&h), "infinicclSimStreamCreate");
    {
      std::lock_guard<std::mutex> lock(S().mu);
      S().default_stream = h;
    }
    static c10::impl::DeviceGuardImplRegistrar guard(kSim, new SimGuardImpl());
    c10::SetAllocator(kSim, &Alloc());
    at::RegisterPrivateUse1HooksInterface(new SimHooks());
    auto *ops = new torch::Library(torch::Library::IMPL, "aten", c10::DispatchKey::PrivateUse1,
                                   __FILE__, __LINE__);
    ops->impl("empty.memory_format", TORCH_FN(Empty));
    ops->impl("empty_strided", TORCH_FN(EmptyStrided));
    ops->impl("_copy_from", TORCH_FN(CopyFrom));
    ops->impl("_copy_from_and_resize", TORCH_FN(CopyFromAndResize));
    ops->impl("resize_", TORCH_FN(Resize));
    ops->impl("as_strided", TORCH_FN(AsStrided));
    ops->impl("view", TORCH_FN(at::native::view));
    ops->impl("_reshape_alias", TORCH_FN(at::native::_reshape_alias));
    ops->impl("unfold", TORCH_FN(at::native::unfold));
    ops->impl("set_.source_Storage_storage_offset", TORCH_FN(SetStorage));
    ops->impl("set_.source_Storage", TORCH_FN(SetSource));
    ops->impl("set_.source_Tensor", TORCH_FN(SetTensor));
    ops->impl("record_stream", TORCH_FN(RecordStreamOp));
    auto *rest = new torch::Library(torch::Library::IMPL, "_", c10::DispatchKey::PrivateUse1,
                                    __FILE__, __LINE__);
    rest->fallback(torch::CppFunction::makeFromBoxedFunction<&Fallback>());
  });
}

void Kernel(unsigned us) {
  Check(infinicclSimKernel(Handle(current_stream), us), "infinicclSimKernel");
}

void EmptyCache() { Alloc().EmptyCache(); }

std::vector<int64_t> MemoryStats() { return Alloc().Stats(); }

#else  // torch before 2.15

bool Supported() { return false; }
void Register() {
  TORCH_CHECK(false, "infiniccl.torch_sim needs torch 2.15 or later; this build of "
              "infiniccl._c10d is for torch ", TORCH_VERSION);
}
void Kernel(unsigned) { Register(); }
void EmptyCache() { Register(); }
std::vector<int64_t> MemoryStats() {
  Register();
  return {};
}

#endif

void Bind(pybind11::module_ &m) {
  auto s = m.def_submodule("sim", "the EMULATED device as torch's privateuse1 backend");
  s.def("supported", &Supported, "Whether this build has the torch device (torch 2.15+).");
  s.def("register", &Register, "Registers the device (once; privateuse1 must be renamed).");
  s.def("kernel", &Kernel, pybind11::arg("us"),
        "Queues an emulated kernel of `us` microseconds on the current sim stream.",
        pybind11::call_guard<pybind11::gil_scoped_release>());
  s.def("empty_cache", &EmptyCache, "Frees the cached emulated memory blocks.",
        pybind11::call_guard<pybind11::gil_scoped_release>());
  s.def("memory_stats", &MemoryStats,
        "[blocks in use, blocks cached, blocks waiting for streams, infinicclSimMalloc calls]");
}

}  // namespace infiniccl_sim
#pragma GCC visibility pop
