// torch.distributed backend "infiniccl" as a c10d::Backend (torch 2.x),
// built by python/setup.py against the installed torch as the module
// infiniccl._c10d. python/infiniccl/torch.py creates the communicator (through
// the library the package loaded with RTLD_GLOBAL, whose symbols this module
// uses) and registers the creator; nothing on the call path is Python.
//
// Host tensors: every call of a group runs on that group's worker thread, in
// call order (as gloo's threads do), so the caller goes on while a bucket is
// reduced; the Work completes when the library's call has returned (host
// calls are blocking in the library), and wait() raises the library's error.
// Sends and receives are the exception: the worker posts them into a library
// group it keeps open, and they complete when one of them is waited for (see
// "P2P that does not depend on the peers' order").
// wait() is bounded by the call's timeout, else the group's timeout
// (init_process_group/new_group timeout=): past it, it raises an error that
// names the op, the group, its ranks and what the call waits for (the
// library's infinicclCommDescribeWait: the ranks that have not reached it).
// A group whose timed-out call still runs when it is destroyed aborts its
// communicator (see Shutdown).
// Device tensors: the call runs in the caller's thread once the group's queued
// calls and its open group of sends and receives are done, ordered on
// torch's current stream of the tensor's device
// (c10::Stream::native_handle, so no CUDA headers are needed); the Work is
// complete for the host, the result ready for work queued on that stream.
// torch.profiler: every call records an "infiniccl:<op>" event (gloo's op
// names) with its input tensors' shapes, from when the call starts running
// until it completes (see WorkInfiniCCL::Record).
#include <torch/extension.h>
#include <torch/version.h>

#include <ATen/ThreadLocalState.h>
#include <ATen/record_function.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "infiniccl/infiniccl.h"

namespace {

using c10d::OpType;
using Ms = std::chrono::milliseconds;

constexpr int kUInt8 = infinicclUInt8;

// A call on a group after destroy_process_group (shutdown) raises this; it
// would otherwise wait for a worker that has ended.
constexpr const char *kDestroyed = "the process group was destroyed (destroy_process_group)";
constexpr const char *kAborted = "the process group was aborted (abort_process_group)";

[[noreturn]] void Fail(const std::string &msg) {
  C10_THROW_ERROR(DistBackendError, "infiniccl (torch.distributed): " + msg);
}

// Whether the caller goes on before the call completes: the options'
// asyncOp (dist.*'s async_op, torch 2.7 and later); true where torch does
// not say.
template <typename Opts, typename = void>
struct HasAsyncOp : std::false_type {};
template <typename Opts>
struct HasAsyncOp<Opts, std::void_t<decltype(std::declval<Opts>().asyncOp)>> : std::true_type {};
template <typename Opts>
bool AsyncOf(const Opts &opts) {
  if constexpr (HasAsyncOp<Opts>::value) {
    return opts.asyncOp;
  } else {
    return true;
  }
}

// The library's watchdog (INFINICCL_TIMEOUT_SEC, 1800 s unless set; 0: off).
Ms WatchdogTimeout() {
  const char *v = std::getenv("INFINICCL_TIMEOUT_SEC");
  if (v == nullptr || *v == '\0') return Ms(1800 * 1000);
  char *end = nullptr;
  const long sec = std::strtol(v, &end, 10);
  return *end == '\0' && sec > 0 ? Ms(sec * 1000) : Ms(0);
}

// Library type of a tensor for a reduction (bool as uint8, its reductions
// logical), or -1.
int TypeOf(const at::Tensor &t) {
  switch (t.scalar_type()) {
    case at::kChar: return infinicclInt8;
    case at::kShort: return infinicclInt16;
    case at::kInt: return infinicclInt32;
    case at::kLong: return infinicclInt64;
    case at::kByte: return infinicclUInt8;
    case at::kBool: return infinicclUInt8;
    case at::kHalf: return infinicclFloat16;
    case at::kBFloat16: return infinicclBFloat16;
    case at::kFloat: return infinicclFloat32;
    case at::kDouble: return infinicclFloat64;
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3)
    case at::kUInt16: return infinicclUInt16;
    case at::kUInt32: return infinicclUInt32;
    case at::kUInt64: return infinicclUInt64;
#endif
    default: return -1;
  }
}

// A contiguous tensor as the library sees it: pointer, count, type.
struct Buf {
  void *ptr;
  size_t count;
  int type;
};

// Moved, not combined: any type travels as bytes.
Buf Raw(const at::Tensor &t) {
  int type = TypeOf(t);
  if (type >= 0) return {t.data_ptr(), static_cast<size_t>(t.numel()), type};
  return {t.data_ptr(), static_cast<size_t>(t.numel()) * t.element_size(), kUInt8};
}

// Combined by `op`: the library's type and reduction.
Buf Reduced(const at::Tensor &t, const c10d::ReduceOp &rop, int *op) {
  auto k = rop.op_;
  bool is_bool = t.scalar_type() == at::kBool;
  bool bitwise_ok = c10::isIntegralType(t.scalar_type(), /*includeBool=*/true);
  int lop = -1;
  switch (k) {
    case c10d::ReduceOp::SUM: lop = is_bool ? infinicclMax : infinicclSum; break;
    case c10d::ReduceOp::AVG: lop = is_bool ? -1 : infinicclAvg; break;
    case c10d::ReduceOp::PRODUCT: lop = is_bool ? infinicclMin : infinicclProd; break;
    case c10d::ReduceOp::MIN: lop = infinicclMin; break;
    case c10d::ReduceOp::MAX: lop = infinicclMax; break;
    // The library's bitwise ops, on integer and bool tensors only (bool
    // travels as uint8 0/1); others fail here, before any library call.
    case c10d::ReduceOp::BAND: lop = bitwise_ok ? infinicclBand : -1; break;
    case c10d::ReduceOp::BOR: lop = bitwise_ok ? infinicclBor : -1; break;
    case c10d::ReduceOp::BXOR: lop = bitwise_ok ? infinicclBxor : -1; break;
    default: break;
  }
  if (lop < 0) {
    static const char *names[] = {"SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR",
                                  "PREMUL_SUM", "UNUSED"};
    std::string name = static_cast<int>(k) < 10 ? names[static_cast<int>(k)]
                                                : std::to_string(static_cast<int>(k));
    Fail("reduction " + name + " is not supported for " +
         std::string(c10::toString(t.scalar_type())));
  }
  *op = lop;
  int type = TypeOf(t);
  if (type >= 0) return {t.data_ptr(), static_cast<size_t>(t.numel()), type};
  if (t.is_complex() && (lop == infinicclSum || lop == infinicclAvg)) {
    int real = t.scalar_type() == at::kComplexFloat    ? infinicclFloat32
               : t.scalar_type() == at::kComplexDouble ? infinicclFloat64
                                                       : -1;
    if (real >= 0) return {t.data_ptr(), 2 * static_cast<size_t>(t.numel()), real};
  }
  Fail(std::string(c10::toString(t.scalar_type())) +
       " has no InfiniCCL data type for this reduction");
}

// ReduceOp.PREMUL_SUM (NCCL's): every rank's tensor is multiplied by the
// op's factor (a number or a one-element tensor), then summed. A call with
// it runs the sum on a scaled tensor: PreMul gives the factor's scaling and
// the SUM op to run.
struct PreMul {
  explicit PreMul(c10d::ReduceOp &rop) {
    if (rop.op_ != c10d::ReduceOp::PREMUL_SUM) return;
    auto *sup = dynamic_cast<c10d::NCCLPreMulSumSupplement *>(rop.supplement_.get());
    if (sup == nullptr) {
      C10_THROW_ERROR(DistBackendError, "infiniccl (torch.distributed): PREMUL_SUM without "
                      "its factor (make the op with torch.distributed._make_nccl_premul_sum)");
    }
    active = true;
    factor = sup->double_factor;
    tensor_factor = sup->tensor_factor;
    rop = c10d::ReduceOp(c10d::ReduceOp::SUM);
  }
  // Scales t in place (a tensor the call owns or overwrites anyway).
  void Scale(const at::Tensor &t) const {
    if (!active) return;
    if (tensor_factor.defined()) {
      t.mul_(tensor_factor.to(t.device()));
    } else {
      t.mul_(factor);
    }
  }
  // A scaled copy (the caller's tensor stays as it was), or t itself.
  at::Tensor Scaled(const at::Tensor &t) const {
    if (!active) return t;
    at::Tensor c = t.clone(at::MemoryFormat::Contiguous);
    Scale(c);
    return c;
  }
  bool active = false;
  double factor = 1.0;
  at::Tensor tensor_factor;
};

void SameType(const at::Tensor &a, const at::Tensor &b, const char *what) {
  if (a.scalar_type() != b.scalar_type()) {
    Fail(std::string(what) + ": " + c10::toString(a.scalar_type()) + " and " +
         c10::toString(b.scalar_type()) + " differ in data type");
  }
}

// What a group's Works share with it: the communicator, to name what a
// timed-out call waits for, and whether a call of the group has timed out
// (its shutdown then aborts the communicator rather than wait for the call).
struct GroupState {
  GroupState(infinicclComm_t c, std::string w) : comm(c), where(std::move(w)) {}
  const infinicclComm_t comm;
  // " on process group 'NAME' (ranks 0,1,2; this is rank R)": a call's name
  // is its op and this, made only for a message.
  const std::string where;
  std::atomic<bool> timed_out{false};

  // Asks the group's worker to complete the P2P calls it has posted (see
  // BackendInfiniCCL's P2P comment); cleared when the group shuts down.
  void RequestFlush() {
    std::lock_guard<std::mutex> lock(flush_mu);
    if (flush) flush();
  }
  std::mutex flush_mu;
  std::function<void()> flush;

  // "infiniccl allreduce on process group ...": a call's name in a message.
  std::string Name(const char *op) const { return std::string("infiniccl ") + op + where; }
};

// The library's description of the calls in flight on `comm`
// (infinicclCommDescribeWait): the ranks that have not reached them.
std::string InFlightText(infinicclComm_t comm) {
  char text[2048] = "";
  if (infinicclCommDescribeWait(comm, text, sizeof text) != infinicclSuccess) return "";
  std::string s(text);
  for (char &ch : s) {
    if (ch == '\n') ch = ';';
  }
  return s;
}

class WorkInfiniCCL : public c10d::Work {
 public:
  // `op`: a string literal ("allreduce").
  WorkInfiniCCL(int rank, OpType type, const char *op, Ms timeout,
                std::vector<at::Tensor> outputs, std::shared_ptr<GroupState> group)
      : c10d::Work(rank, type),
        op_(op),
        timeout_(timeout),
        group_(std::move(group)),
        outputs_(std::move(outputs)) {}

  // torch.profiler's event of the call, as gloo's AsyncWork records it:
  // `title` ("infiniccl:all_reduce", a string literal) with the shapes of
  // `inputs`. Called on the caller's thread when the Work is made; does
  // nothing unless a profiler (a RecordFunction callback) is on there. The
  // event starts at Begin and ends at Done, on whichever thread runs the
  // call, with the caller's thread-local state (the profiler's).
  void Record(const char *title, const std::vector<at::Tensor> &inputs) {
    auto callbacks = at::getStepCallbacksUnlessEmpty(at::RecordScope::USER_SCOPE);
    if (!callbacks) return;
    auto rf = std::make_shared<at::RecordFunction>(std::move(*callbacks));
    if (!rf->isActive()) return;
    std::function<void()> begin = [rf, title, inputs] {
      rf->_setAsync();  // it may end on another thread than the caller's
      std::vector<c10::IValue> args(inputs.begin(), inputs.end());
      rf->before(title, c10::ArrayRef<const c10::IValue>(args.data(), args.size()));
    };
    std::function<void()> end = [rf] { rf->end(); };
    event_begin_ = at::wrapPropagateTLSState(std::move(begin));
    event_end_ = at::wrapPropagateTLSState(std::move(end));
  }

  // The call starts running (the thread that runs it calls this first).
  void Begin() {
    if (!event_begin_) return;
    auto begin = std::move(event_begin_);
    event_begin_ = nullptr;
    begin();
  }

  // Called once, by whoever ran the call.
  void Done(std::exception_ptr err) {
    Begin();  // a call that never ran (an empty batch): an event of no length
    if (event_end_) {
      auto end = std::move(event_end_);
      event_end_ = nullptr;
      end();
    }
    c10::intrusive_ptr<c10::ivalue::Future> future;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      completed_ = true;
      exception_ = err;
      future = future_;
    }
    cv_.notify_all();
    if (future) Complete(*future);
  }

  // A P2P call posted into the worker's open group completes when the
  // group is flushed: waiting for it (wait, isCompleted, getFuture) asks for
  // that.
  void MarkPosted() { posted_ = true; }

  bool isCompleted() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (completed_ || !posted_) return completed_;
    }
    group_->RequestFlush();
    std::lock_guard<std::mutex> lock(mutex_);
    return completed_;
  }

  bool wait(Ms timeout) override {
    Ms limit = timeout == Ms(0) ? timeout_ : timeout;
    if (posted_ && !Completed()) group_->RequestFlush();
    std::unique_lock<std::mutex> lock(mutex_);
    if (limit.count() > 0) {
      if (!cv_.wait_for(lock, limit, [&] { return completed_; })) {
        lock.unlock();
        group_->timed_out.store(true);
        // gloo's words ("Timed out waiting 1ms"), which torch's tests match.
        std::ostringstream msg;
        msg << what() << ": Timed out waiting " << limit.count()
            << "ms for it to complete (the timeout of the call or of its process group); ";
        const std::string waits = InFlightText(group_->comm);
        if (waits.empty()) {
          msg << "no call of the group is in flight on this rank";
        } else {
          msg << "in flight on this rank: " << waits;
        }
        Fail(msg.str());
      }
    } else {
      cv_.wait(lock, [&] { return completed_; });
    }
    if (exception_) std::rethrow_exception(exception_);
    return true;
  }

  std::vector<at::Tensor> result() override { return outputs_; }
  // Made on the first request (DDP's comm hooks ask; most callers never do):
  // completed here when the call is already done, else by Done.
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override {
    if (posted_ && !Completed()) group_->RequestFlush();
    std::unique_lock<std::mutex> lock(mutex_);
    if (future_) return future_;
    future_ = c10::make_intrusive<c10::ivalue::Future>(TensorListType());
    auto future = future_;
    const bool done = completed_;
    lock.unlock();
    if (done) Complete(*future);
    return future;
  }
  // recv: its src; recvAnysource: the sender, written by the call before
  // Done (so valid once wait() returns).
  int sourceRank() const override { return source_ ? *source_ : source_rank_; }

  std::string what() const { return group_->Name(op_); }
  int source_rank_ = -1;
  std::shared_ptr<int> source_;

 private:
  bool Completed() {
    std::lock_guard<std::mutex> lock(mutex_);
    return completed_;
  }

  // completed_ is set, so exception_ no longer changes.
  void Complete(c10::ivalue::Future &future) {
    if (exception_) {
      future.setError(exception_);
    } else {
      future.markCompleted(c10::IValue(outputs_));
    }
  }

  static const c10::TypePtr &TensorListType() {
    static const c10::TypePtr type = c10::ListType::create(c10::TensorType::get());
    return type;
  }

  const char *op_;
  Ms timeout_;
  // Record's event: set on the caller's thread before the call is queued,
  // then used by the one thread that runs the call.
  std::function<void()> event_begin_, event_end_;
  std::atomic<bool> posted_{false};
  std::shared_ptr<GroupState> group_;
  std::vector<at::Tensor> outputs_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

class BackendInfiniCCL : public c10d::Backend {
 public:
  BackendInfiniCCL(int64_t comm, int rank, int size, int64_t timeout_ms, std::string name,
                   std::vector<int64_t> ranks, c10::intrusive_ptr<c10d::Store> store)
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

  ~BackendInfiniCCL() override { Shutdown(); }

  // destroy_process_group: the queued calls finish, the communicator is
  // destroyed, and later calls on the group are refused.
  void shutdown() override { Shutdown(); }

  // A call of the group that timed out and still runs (its peers never came)
  // would hold the worker forever: the communicator is aborted instead, which
  // makes a call waiting in the node's shared memory return, and ends the
  // job where the call is inside MPI (as torch's NCCL backend tears the
  // process down after a timeout).
  void Shutdown() {
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

  void JoinWorker() {
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

  const std::string getBackendName() const override { return "infiniccl"; }

  // dist.abort_process_group: the communicator is aborted
  // (infinicclCommAbort) without waiting for the other ranks; a call of the
  // group waiting in the node's shared memory returns with an error, which
  // its Work raises, queued calls fail the same way, and later calls are
  // refused. A call blocked inside MPI cannot be cancelled: the library then
  // ends the job after one second (see infinicclCommAbort).
  void abort() override { Abort(); }

  void Abort() {
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

#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 7)
  c10d::ErrorType getError() override {
    if (group_->timed_out.load()) return c10d::ErrorType::TIMEOUT;
    std::lock_guard<std::mutex> lock(mu_);
    return aborted_ ? c10d::ErrorType::COMM_ERROR : c10d::ErrorType::SUCCESS;
  }
#endif

  // Runs `fn` on the group's worker, after the group's earlier calls and
  // the open group of point-to-point calls, and waits for it (without the
  // GIL); its error raises here. For calls that make a communicator.
  void OnWorker(const char *what, const std::function<void()> &fn) {
    auto work = c10::make_intrusive<WorkInfiniCCL>(rank_, OpType::UNKNOWN, what, timeout_,
                                                   std::vector<at::Tensor>(), group_);
    Enqueue(work, [this, &fn](void *) {
      bool open;
      {
        std::lock_guard<std::mutex> lock(mu_);
        open = p2p_open_;
      }
      if (open) Flush();
      fn();
    }, c10::Device(c10::kCPU), nullptr);
    if (Py_IsInitialized() && PyGILState_Check()) {
      py::gil_scoped_release release;
      work->wait(Ms(0));
    } else {
      work->wait(Ms(0));
    }
  }

  // dist.split_group: every rank of this group calls it with the ranks (of
  // this group, in the new group's order) of the one new group it joins, or
  // of the first one when it joins none; infinicclCommSplit makes the new
  // communicators (color: the smallest rank of a new group, which the
  // disjoint groups do not share; key: the position in it). Runs on the
  // group's worker, in call order with the group's other calls.
  bool supportsSplitting() const override { return true; }

  c10::intrusive_ptr<c10d::Backend::Options> getBackendOptions() override {
    auto o = c10::make_intrusive<c10d::Backend::Options>("infiniccl", timeout_);
    o->group_name = name_;
    for (auto r : ranks_) o->global_ranks_in_group.push_back(static_cast<uint64_t>(r));
    return o;
  }

  c10::intrusive_ptr<c10d::Backend> split(const c10::intrusive_ptr<c10d::Store> &store,
                                          const std::vector<int> &ranks,
                                          const c10::intrusive_ptr<Options> &opts) override {
    int pos = -1;
    int color = INFINICCL_SPLIT_NOCOLOR;
    for (size_t i = 0; i < ranks.size(); ++i) {
      if (ranks[i] < 0 || ranks[i] >= size_) {
        Fail("split_group: rank " + std::to_string(ranks[i]) + " is not a rank of the group (size " +
             std::to_string(size_) + ")");
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
    std::string name = opts && !opts->group_name.empty() ? opts->group_name : name_ + ":split";
    std::vector<int64_t> global;
    for (int r : ranks) global.push_back(ranks_.empty() ? r : ranks_[r]);
    return c10::make_intrusive<BackendInfiniCCL>(reinterpret_cast<int64_t>(*child), pos,
                                                 static_cast<int>(ranks.size()),
                                                 timeout.count(), name, global, store);
  }

  // dist.shrink_group: the ranks that stay call it with the group ranks to
  // leave out, in their order; infinicclCommShrink makes the new
  // communicator. SHRINK_DEFAULT runs on the group's worker, after the
  // group's earlier calls; SHRINK_ABORT (a rank failed) runs here at once:
  // the library revokes the communicator, which ends a call stuck on it,
  // and this backend is aborted. Declared without `override`: torch before
  // shrink's arrival has no such virtuals, and then these are never called.
  bool supportsShrinking() const { return true; }

  c10::intrusive_ptr<c10d::Backend> shrink(const std::vector<int64_t> &ranks_to_exclude,
                                           int shrink_flags = 0,
                                           const c10::intrusive_ptr<Options> &opts = nullptr) {
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
      Check(infinicclCommShrink(comm_, exclude.data(), static_cast<int>(exclude.size()), &child,
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
    std::string name = opts && !opts->group_name.empty() ? opts->group_name : name_ + ":shrink";
    return c10::make_intrusive<BackendInfiniCCL>(reinterpret_cast<int64_t>(child), new_rank,
                                                 static_cast<int>(global.size()),
                                                 timeout.count(), name, global, store_);
  }

  // Sequence numbers, as gloo's: one per collective or point-to-point call
  // made on the group, from 0 on every rank, so ranks that made the same
  // calls agree. torch's ProcessGroupWrapper (TORCH_DISTRIBUTED_DEBUG=DETAIL)
  // and pg._get_sequence_number_for_group() read it; torch before 2.15
  // sets it when it creates the group.
  void setSequenceNumberForGroup() override { seq_.store(0); }
  uint64_t getSequenceNumberForGroup() override { return seq_.load(); }
  bool supportsCoalescing() const override { return true; }
  void setTimeout(Ms timeout) { timeout_ = timeout; }
  int64_t timeoutMs() const { return timeout_.count(); }

  // ---- collectives ----
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor> &tensors,
                                           const c10d::AllreduceOptions &opts) override {
    auto rop = opts.reduceOp;
    PreMul pre(rop);
    return Submit("allreduce", "infiniccl:all_reduce", OpType::ALLREDUCE, tensors, tensors, opts,
                  [this, tensors, rop, pre](void *stream) {
                    for (const auto &t : tensors) {
                      Output o(t);
                      pre.Scale(o.t);
                      int op;
                      Buf b = Reduced(o.t, rop, &op);
                      Check(infinicclAllReduce(b.ptr, b.ptr, b.count,
                                               (infinicclDataType_t)b.type,
                                               (infinicclRedOp_t)op, comm_, stream));
                    }
                  });
  }

  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor> &tensors, const c10d::AllreduceCoalescedOptions &opts) override {
    return allreduce(tensors, opts);
  }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor> &tensors,
                                           const c10d::BroadcastOptions &opts) override {
    int root = Root(opts.rootRank, "broadcast");
    return Submit("broadcast", "infiniccl:broadcast", OpType::BROADCAST, tensors, tensors, opts,
                  [this, tensors, root](void *stream) {
                    for (const auto &t : tensors) {
                      Output o(t);
                      Buf b = Raw(o.t);
                      Check(infinicclBcast(b.ptr, b.count, (infinicclDataType_t)b.type, root,
                                           comm_, stream));
                    }
                  });
  }

  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor> &tensors,
                                        const c10d::ReduceOptions &opts) override {
    int root = Root(opts.rootRank, "reduce");
    auto rop = opts.reduceOp;
    PreMul pre(rop);
    return Submit("reduce", "infiniccl:reduce", OpType::REDUCE, tensors, tensors, opts,
                  [this, tensors, root, rop, pre](void *stream) {
                    for (const auto &t : tensors) {
                      Output o(t);
                      at::Tensor in = pre.Scaled(o.t);  // other ranks' tensors stay
                      int op;
                      Buf b = Reduced(in, rop, &op);
                      Check(infinicclReduce(b.ptr, b.ptr, b.count, (infinicclDataType_t)b.type,
                                            (infinicclRedOp_t)op, root, comm_, stream));
                      if (!in.is_same(o.t) && rank_ == root) o.t.copy_(in);
                    }
                  });
  }

  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>> &outputs,
                                           std::vector<at::Tensor> &inputs,
                                           const c10d::AllgatherOptions &opts) override {
    One(inputs, "allgather");
    TORCH_CHECK(outputs.size() == 1, "infiniccl: allgather takes one output list");
    CheckList(outputs[0], inputs[0], "allgather");
    auto in = inputs[0];
    auto outs = outputs[0];
    return Submit("allgather", "infiniccl:all_gather", OpType::ALLGATHER, inputs, outs, opts,
                  [this, in, outs](void *stream) {
                    auto src = in.contiguous();
                    auto flat = at::empty({size_ * src.numel()}, src.options());
                    Buf b = Raw(src);
                    Check(infinicclAllGather(b.ptr, flat.data_ptr(), b.count,
                                             (infinicclDataType_t)b.type, comm_, stream));
                    Unflatten(flat, outs);
                  });
  }

  // output_lists[r][i] receives rank r's inputs[i].
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(
      std::vector<std::vector<at::Tensor>> &output_lists, std::vector<at::Tensor> &inputs,
      const c10d::AllgatherOptions &opts) override {
    if ((int)output_lists.size() != size_) {
      Fail("allgather_coalesced: " + std::to_string(output_lists.size()) +
           " output lists for a group of " + std::to_string(size_));
    }
    std::vector<std::vector<at::Tensor>> per_input(inputs.size());
    std::vector<at::Tensor> all_outs;
    for (size_t i = 0; i < inputs.size(); ++i) {
      for (auto &lst : output_lists) {
        if (lst.size() != inputs.size()) Fail("allgather_coalesced: a list of the wrong length");
        per_input[i].push_back(lst[i]);
        all_outs.push_back(lst[i]);
      }
      CheckList(per_input[i], inputs[i], "allgather_coalesced");
    }
    return Submit("allgather_coalesced", "infiniccl:all_gather",
                  OpType::ALLGATHER_COALESCED, inputs, all_outs, opts, [this, inputs, per_input](void *stream) {
                    for (size_t i = 0; i < inputs.size(); ++i) {
                      auto src = inputs[i].contiguous();
                      auto flat = at::empty({size_ * src.numel()}, src.options());
                      Buf b = Raw(src);
                      Check(infinicclAllGather(b.ptr, flat.data_ptr(), b.count,
                                               (infinicclDataType_t)b.type, comm_, stream));
                      Unflatten(flat, per_input[i]);
                    }
                  });
  }

  // The output of an all-gather of `input`, or the input of a
  // reduce-scatter into `output`: the other's size times the group's.
  void CheckTimesGroup(const at::Tensor &big, const at::Tensor &small, const char *what,
                       const char *big_name, const char *small_name) const {
    SameType(big, small, what);
    if (big.numel() != small.numel() * size_) {
      Fail(std::string(what) + ": " + big_name + " has " + std::to_string(big.numel()) +
           " elements, not " + std::to_string(small.numel() * size_) + " (the " + small_name +
           "'s size times the group's)");
    }
  }

  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor &output, at::Tensor &input,
                                                 const c10d::AllgatherOptions &opts) override {
    CheckTimesGroup(output, input, "all_gather_into_tensor", "output", "input");
    std::vector<at::Tensor> ins{input}, outs{output};
    return Submit("all_gather_into_tensor", "infiniccl:all_gather",
                  OpType::_ALLGATHER_BASE, ins, outs, opts,
                  [this, input, output](void *stream) { GatherInto(output, input, stream); });
  }

  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(
      std::vector<at::Tensor> &outputs, std::vector<at::Tensor> &inputs,
      const c10d::AllgatherOptions &opts) override {
    TORCH_CHECK(outputs.size() == inputs.size(), "infiniccl: as many outputs as inputs");
    for (size_t i = 0; i < inputs.size(); ++i) {
      CheckTimesGroup(outputs[i], inputs[i], "allgather_into_tensor_coalesced", "an output",
                      "input");
    }
    return Submit("allgather_into_tensor_coalesced", "infiniccl:all_gather",
                  OpType::COALESCED, inputs, outputs, opts, [this, inputs, outputs](void *stream) {
                    for (size_t i = 0; i < inputs.size(); ++i) {
                      GatherInto(outputs[i], inputs[i], stream);
                    }
                  });
  }

  c10::intrusive_ptr<c10d::Work> reduce_scatter(
      std::vector<at::Tensor> &outputs, std::vector<std::vector<at::Tensor>> &inputs,
      const c10d::ReduceScatterOptions &opts) override {
    One(outputs, "reduce_scatter");
    TORCH_CHECK(inputs.size() == 1, "infiniccl: reduce_scatter takes one input list");
    CheckList(inputs[0], outputs[0], "reduce_scatter");
    auto out = outputs[0];
    auto ins = inputs[0];
    auto rop = opts.reduceOp;
    PreMul pre(rop);
    return Submit("reduce_scatter", "infiniccl:reduce_scatter",
                  OpType::REDUCE_SCATTER, ins, outputs, opts,
                  [this, out, ins, rop, pre](void *stream) {
                    at::Tensor flat = Flatten(ins);
                    pre.Scale(flat);
                    ScatterFrom(out, flat, rop, stream);
                  });
  }

  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor &output, at::Tensor &input, const c10d::ReduceScatterOptions &opts) override {
    CheckTimesGroup(input, output, "reduce_scatter_tensor", "input", "output");
    auto rop = opts.reduceOp;
    PreMul pre(rop);
    std::vector<at::Tensor> ins{input}, outs{output};
    return Submit("reduce_scatter_tensor", "infiniccl:reduce_scatter",
                  OpType::_REDUCE_SCATTER_BASE, ins, outs, opts,
                  [this, output, input, rop, pre](void *stream) {
                    ScatterFrom(output, pre.Scaled(input.contiguous()), rop, stream);
                  });
  }

  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(
      std::vector<at::Tensor> &outputs, std::vector<at::Tensor> &inputs,
      const c10d::ReduceScatterOptions &opts) override {
    TORCH_CHECK(outputs.size() == inputs.size(), "infiniccl: as many outputs as inputs");
    for (size_t i = 0; i < inputs.size(); ++i) {
      CheckTimesGroup(inputs[i], outputs[i], "reduce_scatter_tensor_coalesced", "an input",
                      "output");
    }
    auto rop = opts.reduceOp;
    PreMul pre(rop);
    return Submit("reduce_scatter_tensor_coalesced", "infiniccl:reduce_scatter",
                  OpType::COALESCED, inputs, outputs, opts, [this, inputs, outputs, rop, pre](void *stream) {
                    for (size_t i = 0; i < inputs.size(); ++i) {
                      ScatterFrom(outputs[i], pre.Scaled(inputs[i].contiguous()), rop, stream);
                    }
                  });
  }

  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor &output, at::Tensor &input,
                                               std::vector<int64_t> &out_splits,
                                               std::vector<int64_t> &in_splits,
                                               const c10d::AllToAllOptions &opts) override {
    SameType(output, input, "all_to_all_single");
    if (in_splits.empty() && out_splits.empty() && output.numel() != input.numel()) {
      // gloo's alltoall enforces the same; the even path below would write
      // the input's size into the output.
      Fail("all_to_all_single: the output has " + std::to_string(output.numel()) +
           " elements and the input " + std::to_string(input.numel()) +
           ": without split sizes they must be equal");
    }
    if (coalescing_ && !(in_splits.empty() && out_splits.empty())) {
      Fail("all_to_all_single with split sizes cannot be coalesced (it is a group of its own)");
    }
    auto sends = Split(input, in_splits, "input");
    auto recvs = Split(output, out_splits, "output");
    std::vector<at::Tensor> ins{input}, outs{output};
    bool even = in_splits.empty() && out_splits.empty();
    return Submit("all_to_all_single", "infiniccl:all_to_all",
                  OpType::ALLTOALL_BASE, ins, outs, opts,
                  [this, input, output, sends, recvs, even](void *stream) {
                    if (even && output.is_contiguous()) {
                      auto src = input.contiguous();
                      Buf b = Raw(src);
                      Check(infinicclAllToAll(b.ptr, output.data_ptr(), b.count / size_,
                                              (infinicclDataType_t)b.type, comm_, stream));
                      return;
                    }
                    Exchange(sends, recvs, stream);
                  });
  }

  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor> &outputs,
                                          std::vector<at::Tensor> &inputs,
                                          const c10d::AllToAllOptions &opts) override {
    if ((int)outputs.size() != size_ || (int)inputs.size() != size_) {
      Fail("all_to_all: " + std::to_string(inputs.size()) + " inputs and " +
           std::to_string(outputs.size()) + " outputs for a group of " + std::to_string(size_));
    }
    for (int j = 0; j < size_; ++j) SameType(outputs[j], inputs[j], "all_to_all");
    if (coalescing_) Fail("all_to_all cannot be coalesced (it is a group of its own)");
    return Submit("all_to_all", "infiniccl:all_to_all", OpType::ALLTOALL, inputs, outputs, opts,
                  [this, inputs, outputs](void *stream) { Exchange(inputs, outputs, stream); });
  }

  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>> &outputs,
                                        std::vector<at::Tensor> &inputs,
                                        const c10d::GatherOptions &opts) override {
    One(inputs, "gather");
    int root = Root(opts.rootRank, "gather");
    std::vector<at::Tensor> outs;
    if (rank_ == root) {
      TORCH_CHECK(outputs.size() == 1, "infiniccl: gather takes one output list at the root");
      CheckList(outputs[0], inputs[0], "gather");
      outs = outputs[0];
    }
    auto in = inputs[0];
    return Submit("gather", "infiniccl:gather", OpType::GATHER, inputs, outs, opts,
                  [this, in, outs, root](void *stream) {
                    auto src = in.contiguous();
                    Buf b = Raw(src);
                    at::Tensor flat;
                    if (rank_ == root) flat = at::empty({size_ * src.numel()}, src.options());
                    Check(infinicclGather(b.ptr, rank_ == root ? flat.data_ptr() : nullptr,
                                          b.count, (infinicclDataType_t)b.type, root, comm_,
                                          stream));
                    if (rank_ == root) Unflatten(flat, outs);
                  });
  }

  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor> &outputs,
                                         std::vector<std::vector<at::Tensor>> &inputs,
                                         const c10d::ScatterOptions &opts) override {
    One(outputs, "scatter");
    int root = Root(opts.rootRank, "scatter");
    std::vector<at::Tensor> ins;
    if (rank_ == root) {
      TORCH_CHECK(inputs.size() == 1, "infiniccl: scatter takes one input list at the root");
      CheckList(inputs[0], outputs[0], "scatter");
      ins = inputs[0];
    }
    auto out = outputs[0];
    return Submit("scatter", "infiniccl:scatter", OpType::SCATTER, ins, outputs, opts,
                  [this, ins, out, root](void *stream) {
                    Output o(out);
                    at::Tensor flat;
                    if (rank_ == root) flat = Flatten(ins);
                    Buf b = Raw(o.t);
                    Check(infinicclScatter(rank_ == root ? flat.data_ptr() : nullptr, b.ptr,
                                           b.count, (infinicclDataType_t)b.type, root, comm_,
                                           stream));
                  });
  }

  // gloo's monitored barrier, through the group's store: every other rank
  // checks in with rank 0, which waits for each within the timeout and then
  // releases them. A rank that does not arrive in time makes rank 0 raise
  // naming it (with wait_all_ranks, every such rank); the ranks waiting for
  // the release then raise at their own timeout.
  void monitoredBarrier(const c10d::BarrierOptions &opts, bool wait_all_ranks) override {
    RECORD_USER_SCOPE("infiniccl:monitored_barrier");  // runs in the caller's thread
    Refuse("monitored_barrier");
    TORCH_CHECK(store_, "infiniccl: monitored_barrier needs the group's store");
    const Ms limit = opts.timeout == c10d::kUnsetTimeout ? timeout_ : opts.timeout;
    const std::string key = "infiniccl/monitored_barrier/" + std::to_string(++monitored_) + "/";
    if (rank_ != 0) {
      store_->set(key + std::to_string(rank_), std::vector<uint8_t>{1});
      try {
        store_->wait({key + "release"}, limit);
      } catch (const c10::Error &) {
        Fail(What("monitored_barrier") + ": rank 0 did not release this rank within " +
             std::to_string(limit.count()) + " ms (a rank of the group has not arrived)");
      }
      return;
    }
    const auto deadline = std::chrono::steady_clock::now() + limit;
    std::vector<int> missing;
    for (int r = 1; r < size_; ++r) {
      const std::string k = key + std::to_string(r);
      const auto left = std::chrono::duration_cast<Ms>(deadline - std::chrono::steady_clock::now());
      bool arrived = false;
      if (left.count() > 0) {
        try {
          store_->wait({k}, left);
          arrived = true;
        } catch (const c10::Error &) {
        }
      } else {
        arrived = store_->check({k});
      }
      if (!arrived) {
        missing.push_back(r);
        if (!wait_all_ranks) break;
      }
    }
    if (missing.empty()) {
      store_->set(key + "release", std::vector<uint8_t>{1});
      return;
    }
    std::ostringstream m;
    m << (missing.size() == 1 ? "Rank " : "Ranks ");
    for (size_t i = 0; i < missing.size(); ++i) m << (i ? ", " : "") << missing[i];
    m << " failed to pass monitoredBarrier in " << limit.count() << " ms";
    Fail(What("monitored_barrier") + ": " + m.str());
  }

  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions &opts) override {
    std::vector<at::Tensor> none;
    return Submit("barrier", "infiniccl:barrier", OpType::BARRIER, none, none, opts,
                  [this](void *) {
                    int one = 1;
                    Check(infinicclAllReduce(&one, &one, 1, infinicclInt32, infinicclSum,
                                             comm_, nullptr));
                  });
  }

  // ---- point to point ----
  // Tags are the library's (infinicclSendTagged/RecvTagged, 0..INFINICCL_TAG_MAX):
  // a recv takes only a send of its tag; tag 0 (torch's default) is the
  // library's plain Send/Recv.
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor> &tensors, int dst,
                                      int tag) override {
    One(tensors, "send");
    Peer(dst, "send");
    Tag(tag, "send");
    auto t = tensors[0].contiguous();
    P2POp op;
    op.post = [this, t, dst, tag](void *stream) {
      Buf b = Raw(t);
      Check(infinicclSendTagged(b.ptr, b.count, (infinicclDataType_t)b.type, dst, tag, comm_,
                                stream));
    };
    return P2P("send", "infiniccl:send", OpType::SEND, tensors, std::move(op), -1);
  }

  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor> &tensors, int src,
                                      int tag) override {
    One(tensors, "recv");
    Peer(src, "recv");
    Tag(tag, "recv");
    auto t = tensors[0];
    auto c = t.is_contiguous() ? t : t.contiguous();
    P2POp op;
    op.post = [this, c, src, tag](void *stream) {
      Buf b = Raw(c);
      Check(infinicclRecvTagged(b.ptr, b.count, (infinicclDataType_t)b.type, src, tag,
                                nullptr, comm_, stream));
    };
    if (!c.is_same(t)) op.finish = [t, c] { t.copy_(c); };
    return P2P("recv", "infiniccl:recv", OpType::RECV, tensors, std::move(op), src);
  }

  // recv without src (as gloo's): the first message of `tag` from any rank;
  // the Work's sourceRank() (dist.recv's return value, irecv's
  // work._source_rank()) is its sender once it has completed. Device
  // tensors: the call waits for the stream, so that the sender is known
  // when the Work is.
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor> &tensors,
                                               int tag) override {
    One(tensors, "recv");
    Tag(tag, "recv");
    if (coalescing_) {
      Fail("batch_isend_irecv: a receive without a peer (from any source) cannot be "
           "batched: the batch's one Work could not report its sender");
    }
    auto t = tensors[0];
    auto c = t.is_contiguous() ? t : t.contiguous();
    auto source = std::make_shared<int>(-1);
    P2POp op;
    op.post = [this, c, tag, source](void *stream) {
      Buf b = Raw(c);
      Check(infinicclRecvTagged(b.ptr, b.count, (infinicclDataType_t)b.type,
                                INFINICCL_ANY_SOURCE, tag, source.get(), comm_, stream));
    };
    op.finish = [t, c] {
      if (!t.device().is_cpu()) {
        c10::impl::getDeviceGuardImpl(t.device().type())->getStream(t.device()).synchronize();
      }
      if (!c.is_same(t)) t.copy_(c);
    };
    return P2P("recvAnysource", "infiniccl:recvAnySource",
               OpType::RECVANYSOURCE, tensors, std::move(op), -1, source);
  }

  // batch_isend_irecv and _coalescing_manager: the sends, receives and
  // collectives between startCoalescing and endCoalescing run as one group
  // (infinicclGroupStart/End), as NCCL runs them: every rank may send before
  // it receives, collectives run in call order inside the group, and each
  // call returns the batch's Work, complete when the group has ended.
  void startCoalescing() override {
    TORCH_CHECK(!coalescing_, "infiniccl: startCoalescing while coalescing");
    coalescing_ = true;
    batch_.clear();
    batch_inputs_.clear();
    batch_work_ = c10::make_intrusive<WorkInfiniCCL>(rank_, OpType::COALESCED,
                                                     "batch_isend_irecv", timeout_,
                                                     std::vector<at::Tensor>(), group_);
  }

  c10::intrusive_ptr<c10d::Work> endCoalescing() override {
    TORCH_CHECK(coalescing_, "infiniccl: endCoalescing without startCoalescing");
    coalescing_ = false;
    auto ops = std::move(batch_);
    auto work = batch_work_;
    batch_work_.reset();
    if (ops.empty()) {
      work->Done(nullptr);
      return work;
    }
    // One event for the batch, as NCCL's "nccl:coalesced".
    work->Record("infiniccl:coalesced", batch_inputs_);
    batch_inputs_.clear();
    if (batch_device_.is_cpu()) {
      work->MarkPosted();
      EnqueuePost(work, std::move(ops));
      return work;
    }
    // Device tensors: one group in the caller's thread, ordered on the stream.
    auto job = [this, ops](void *stream) {
      Check(infinicclGroupStart());
      std::exception_ptr err;
      for (const auto &op : ops) {
        try {
          op.post(stream);
        } catch (...) {
          if (!err) err = std::current_exception();
        }
      }
      infinicclResult_t rc = infinicclGroupEnd();
      if (err) std::rethrow_exception(err);
      Check(rc);
      for (const auto &op : ops) {
        if (op.finish) op.finish();
      }
    };
    Enqueue(work, std::move(job), batch_device_, batch_stream_);
    return work;
  }

 private:
  using Job = std::function<void(void *)>;

  // An output tensor, through a contiguous copy when it is not contiguous.
  struct Output {
    explicit Output(const at::Tensor &target) : target(target) {
      t = target.is_contiguous() ? target : target.contiguous();
    }
    ~Output() {
      if (!t.is_same(target)) target.copy_(t);
    }
    at::Tensor target, t;
  };

  std::string What(const char *op) const { return group_->Name(op); }

  std::string Where() const {
    std::ostringstream s;
    s << " on process group '" << name_ << "' (ranks";
    for (size_t i = 0; i < ranks_.size(); ++i) s << (i ? "," : " ") << ranks_[i];
    if (ranks_.empty()) s << " 0.." << size_ - 1;
    s << "; this is rank " << rank_ << ")";
    return s.str();
  }

  void Check(infinicclResult_t rc) {
    if (rc == infinicclSuccess) return;
    std::string msg = infinicclGetLastError(comm_);
    if (msg.empty()) msg = infinicclGetLastError(nullptr);
    throw std::runtime_error(std::string(infinicclGetErrorString(rc)) + ": " + msg);
  }

  int Root(int64_t root, const char *what) {
    if (root < 0 || root >= size_) {
      Fail(std::string(what) + ": root " + std::to_string(root) + " is not a rank of the group (size " +
           std::to_string(size_) + ")");
    }
    return static_cast<int>(root);
  }

  void Peer(int peer, const char *what) {
    if (peer < 0 || peer >= size_) {
      Fail(std::string(what) + ": peer " + std::to_string(peer) + " is not a rank of the group (size " +
           std::to_string(size_) + ")");
    }
  }

  static void Tag(int tag, const char *what) {
    if (tag < 0 || tag > INFINICCL_TAG_MAX) {
      Fail(std::string(what) + ": tag " + std::to_string(tag) + " is not a tag of the "
           "library (0.." + std::to_string(INFINICCL_TAG_MAX) + ")");
    }
  }

  static void One(const std::vector<at::Tensor> &v, const char *what) {
    if (v.size() != 1) {
      Fail(std::string(what) + " takes one tensor per process, got " + std::to_string(v.size()));
    }
  }

  void CheckList(const std::vector<at::Tensor> &lst, const at::Tensor &like, const char *what) {
    if ((int)lst.size() != size_) {
      Fail(std::string(what) + ": " + std::to_string(lst.size()) + " tensors for a group of " +
           std::to_string(size_));
    }
    for (const auto &t : lst) {
      if (t.scalar_type() != like.scalar_type() || t.numel() != like.numel()) {
        Fail(std::string(what) + ": the tensors of the list differ from the other tensor in "
             "type or number of elements");
      }
    }
  }

  std::vector<at::Tensor> Split(const at::Tensor &t, const std::vector<int64_t> &splits,
                                const char *what) {
    int64_t rows = t.dim() == 0 ? 1 : t.size(0);
    std::vector<int64_t> s = splits;
    if (s.empty()) {
      if (rows % size_) {
        Fail(std::string("all_to_all_single: ") + what + " has " + std::to_string(rows) +
             " rows, not a multiple of the group size, and no split sizes");
      }
      s.assign(size_, rows / size_);
    }
    int64_t sum = 0;
    for (auto v : s) sum += v < 0 ? rows + 1 : v;
    if ((int)s.size() != size_ || sum != rows) {
      Fail(std::string("all_to_all_single: the ") + what + " split sizes do not split its " +
           std::to_string(rows) + " rows among " + std::to_string(size_) + " ranks");
    }
    return t.dim() == 0 ? std::vector<at::Tensor>{t} : t.split_with_sizes(s);
  }

  static at::Tensor Flatten(const std::vector<at::Tensor> &ts) {
    std::vector<at::Tensor> flat;
    flat.reserve(ts.size());
    for (const auto &t : ts) flat.push_back(t.reshape(-1));
    return at::cat(flat);
  }

  static void Unflatten(const at::Tensor &flat, const std::vector<at::Tensor> &outs) {
    int64_t off = 0;
    for (const auto &o : outs) {
      int64_t n = o.numel();
      o.copy_(flat.narrow(0, off, n).view(o.sizes()));
      off += n;
    }
  }

  void GatherInto(const at::Tensor &output, const at::Tensor &input, void *stream) {
    auto src = input.contiguous();
    Output o(output);
    Buf b = Raw(src);
    Check(infinicclAllGather(b.ptr, o.t.data_ptr(), b.count, (infinicclDataType_t)b.type, comm_,
                             stream));
  }

  void ScatterFrom(const at::Tensor &output, const at::Tensor &flat, const c10d::ReduceOp &rop,
                   void *stream) {
    Output o(output);
    int op;
    Buf in = Reduced(flat, rop, &op);
    Buf out = Reduced(o.t, rop, &op);
    Check(infinicclReduceScatter(in.ptr, out.ptr, out.count, (infinicclDataType_t)out.type,
                                 (infinicclRedOp_t)op, comm_, stream));
  }

  // sends[j] to rank j, recvs[j] from rank j, as one group.
  void Exchange(const std::vector<at::Tensor> &sends, const std::vector<at::Tensor> &recvs,
                void *stream) {
    std::vector<at::Tensor> src;
    std::vector<Output> dst;
    dst.reserve(size_);
    for (int j = 0; j < size_; ++j) {
      src.push_back(sends[j].contiguous());
      dst.emplace_back(recvs[j]);
      if (src[j].numel() != 0 && src[j].scalar_type() != dst[j].t.scalar_type()) {
        Fail("all_to_all: input and output types differ");
      }
    }
    // Element counts checked across ranks first (one AllToAll, one
    // AllReduce), so a mismatch raises on every rank instead of truncating
    // or hanging.
    std::vector<int64_t> counts(size_), got(size_);
    for (int j = 0; j < size_; ++j) counts[j] = src[j].numel();
    Check(infinicclAllToAll(counts.data(), got.data(), 1, infinicclInt64, comm_, nullptr));
    int bad = 0;
    for (int j = 0; j < size_; ++j) bad |= got[j] != dst[j].t.numel();
    Check(infinicclAllReduce(&bad, &bad, 1, infinicclInt32, infinicclMax, comm_, nullptr));
    if (bad) {
      std::ostringstream msg;
      msg << "the ranks' split sizes disagree (this rank receives";
      for (int j = 0; j < size_; ++j) msg << (j ? ", " : " ") << dst[j].t.numel();
      msg << " elements from ranks 0.." << size_ - 1 << ", they send";
      for (int j = 0; j < size_; ++j) msg << (j ? ", " : " ") << got[j];
      msg << ")";
      throw std::runtime_error(msg.str());
    }
    // Its sends and receives complete at its own group's end: posted P2P
    // calls of the worker's open group complete first (a nested group would
    // end with the outer one).
    bool open;
    {
      std::lock_guard<std::mutex> lock(mu_);
      open = p2p_open_;
    }
    if (open) Flush();
    Check(infinicclGroupStart());
    std::exception_ptr err;
    try {
      for (int j = 0; j < size_; ++j) {
        if (j == rank_) {
          if (dst[j].t.numel() != src[j].numel()) Fail("all_to_all: split sizes disagree");
          dst[j].t.copy_(src[j].view(dst[j].t.sizes()));
          continue;
        }
        if (src[j].numel()) {
          Buf b = Raw(src[j]);
          Check(infinicclSend(b.ptr, b.count, (infinicclDataType_t)b.type, j, comm_, stream));
        }
        if (dst[j].t.numel()) {
          Buf b = Raw(dst[j].t);
          Check(infinicclRecv(b.ptr, b.count, (infinicclDataType_t)b.type, j, comm_, stream));
        }
      }
    } catch (...) {
      err = std::current_exception();
    }
    infinicclResult_t rc = infinicclGroupEnd();
    if (err) std::rethrow_exception(err);
    Check(rc);
  }

  // The device the call runs for (CPU, or one device for all its tensors)
  // and torch's current stream there.
  void *StreamOf(const std::vector<at::Tensor> &a, const std::vector<at::Tensor> &b,
                 c10::Device *device) {
    *device = c10::Device(c10::kCPU);
    bool first = true;
    for (const auto *v : {&a, &b}) {
      for (const auto &t : *v) {
        if (first) {
          *device = t.device();
          first = false;
        } else if (t.device() != *device) {
          Fail("tensors on different devices (" + device->str() + " and " + t.device().str() +
               ") in one call");
        }
      }
    }
    if (device->is_cpu()) return nullptr;
    if (device->is_meta()) {
      Fail("a tensor on device meta: infiniccl takes cpu tensors and device tensors");
    }
    auto *impl = c10::impl::getDeviceGuardImpl(device->type());
    c10::Stream s = impl->getStream(*device);
    try {
      return s.native_handle();
    } catch (const std::exception &) {
      Fail("a tensor on device " + device->str() + ": its streams have no native handle");
    }
  }

  // `op` names the call in messages, `event` in torch.profiler (Record).
  template <typename Opts>
  c10::intrusive_ptr<c10d::Work> Submit(const char *op, const char *event, OpType type,
                                        const std::vector<at::Tensor> &inputs,
                                        const std::vector<at::Tensor> &outputs, const Opts &opts,
                                        Job job) {
    seq_.fetch_add(1);
    c10::Device device(c10::kCPU);
    void *stream = StreamOf(inputs, outputs, &device);
    if (coalescing_) {
      // _coalescing_manager: the collective joins the batch, which runs as
      // one group (see endCoalescing); its Work is the batch's.
      if (batch_.empty()) {
        batch_device_ = device;
        batch_stream_ = stream;
      } else if (device != batch_device_) {
        Fail(std::string(op) + ": tensors on different devices in one coalesced group");
      }
      P2POp call;
      call.post = std::move(job);
      batch_.push_back(std::move(call));
      batch_inputs_.insert(batch_inputs_.end(), inputs.begin(), inputs.end());
      return batch_work_;
    }
    Ms limit = opts.timeout == c10d::kUnsetTimeout ? timeout_ : opts.timeout;
    auto work =
        c10::make_intrusive<WorkInfiniCCL>(rank_, type, op, limit, outputs, group_);
    work->Record(event, inputs);
    Enqueue(work, std::move(job), device, stream, !AsyncOf(opts) && Inlinable(limit));
    return work;
  }

  // A synchronous host call may run in the caller's thread (saving the two
  // thread hand-offs, about 12 us a call) where nothing can time out before
  // the library's watchdog ends a call whose peers never come: the call's
  // timeout is no shorter than the watchdog's. With a shorter one the call
  // goes to the worker, so wait() can raise at the timeout.
  bool Inlinable(Ms limit) const {
    return watchdog_.count() > 0 && (limit.count() <= 0 || limit >= watchdog_);
  }

  // ---- P2P that does not depend on the peers' order ----
  // isend/irecv on host tensors are posted, not run: the group's worker
  // opens a library group (infinicclGroupStart) at the first one and posts
  // each send and receive into it as it comes (inside a group the library
  // posts host Send/Recv as MPI_Isend/MPI_Irecv at the call and returns);
  // collectives queued meanwhile run inside that group when their turn
  // comes, in call order (the library runs a collective inside a group when
  // it is called, on its own tags). A wait() on a posted call (or
  // isCompleted(), getFuture()) queues a flush: the worker ends the group
  // (infinicclGroupEnd, which waits for every call posted into it) and
  // completes their Works. So `irecv(left); isend(right); wait()` in a
  // ring, and isend followed by a blocking recv, complete at any size: every
  // rank has posted both before any waits. One thread posts in call order,
  // so MPI's non-overtaking order between two ranks holds, tags included.
  // Why one group and not one thread per (peer, direction): the library
  // does not take calls on one communicator from two threads at once, and
  // it has no request to wait for one call of a group alone. The cost:
  // wait() completes every P2P call of the group posted before it, so a
  // receive posted earlier whose send the peer makes only after this rank's
  // wait has returned is waited for too.
  struct P2POp {
    std::function<void(void *)> post;  // the library call: into the group (host)
    std::function<void()> finish;      // once it has completed (copy back, sync)
  };

  c10::intrusive_ptr<c10d::Work> P2P(const char *op, const char *event, OpType type,
                                     const std::vector<at::Tensor> &tensors, P2POp p2p, int src,
                                     std::shared_ptr<int> source = nullptr) {
    seq_.fetch_add(1);
    c10::Device device(c10::kCPU);
    void *stream = StreamOf(tensors, {}, &device);
    if (coalescing_) {
      if (batch_.empty()) {
        batch_device_ = device;
        batch_stream_ = stream;
      } else if (device != batch_device_) {
        Fail("batch_isend_irecv: tensors on different devices in one batch");
      }
      batch_.push_back(std::move(p2p));
      batch_inputs_.insert(batch_inputs_.end(), tensors.begin(), tensors.end());
      return batch_work_;
    }
    auto work =
        c10::make_intrusive<WorkInfiniCCL>(rank_, type, op, timeout_, tensors, group_);
    work->Record(event, tensors);
    work->source_rank_ = src;
    work->source_ = std::move(source);
    if (!device.is_cpu()) {
      // Device calls return at once, ordered on the stream.
      Enqueue(work, [p2p](void *s) {
        p2p.post(s);
        if (p2p.finish) p2p.finish();
      }, device, stream);
      return work;
    }
    work->MarkPosted();
    EnqueuePost(work, {std::move(p2p)});
    return work;
  }

  // Runs `f`; its exception (if any) as the Work's error, naming the call.
  static std::exception_ptr Capture(const c10::intrusive_ptr<WorkInfiniCCL> &work,
                                    const std::function<void()> &f) {
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

  void Run(const c10::intrusive_ptr<WorkInfiniCCL> &work, const Job &job, void *stream) {
    work->Begin();
    work->Done(Capture(work, [&] { job(stream); }));
  }

  enum class Kind { kCall, kPost, kFlush };
  struct Item {
    Kind kind;
    c10::intrusive_ptr<WorkInfiniCCL> work;
    Job job;                  // kCall
    std::vector<P2POp> p2p;   // kPost
  };
  // A Work posted into the open group, with its calls and the error of a
  // post that failed (the library leaves that call out of the group).
  struct Posted {
    c10::intrusive_ptr<WorkInfiniCCL> work;
    std::vector<P2POp> p2p;
    std::exception_ptr err;
  };

  // Host calls go to the worker; device calls run here once the queue is
  // empty and the worker's open group (host P2P) has completed.
  void Enqueue(const c10::intrusive_ptr<WorkInfiniCCL> &work, Job job, c10::Device device,
               void *stream, bool inline_host = false) {
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
      Run(work, job, stream);
      return;
    }
    queue_.push_back(Item{Kind::kCall, work, std::move(job), {}});
    lock.unlock();
    cv_.notify_one();
  }

  void EnqueuePost(const c10::intrusive_ptr<WorkInfiniCCL> &work, std::vector<P2POp> p2p) {
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

  void QueueFlush() {
    std::lock_guard<std::mutex> lock(mu_);
    QueueFlushLocked();
  }

  // Behind the calls already queued, so it completes every post queued
  // before the request (a flush already last in the queue does).
  void QueueFlushLocked() {
    if (!queue_.empty() && queue_.back().kind == Kind::kFlush) return;
    if (stop_ && !p2p_open_ && queue_.empty()) return;
    queue_.push_back(Item{Kind::kFlush, nullptr, nullptr, {}});
    cv_.notify_one();
  }

  // On the worker.
  void Post(Item &item) {
    item.work->Begin();
    bool open;
    {
      std::lock_guard<std::mutex> lock(mu_);
      open = p2p_open_;
    }
    if (!open) {
      std::exception_ptr err = Capture(item.work, [&] { Check(infinicclGroupStart()); });
      if (err) {
        item.work->Done(err);
        return;
      }
      std::lock_guard<std::mutex> lock(mu_);
      p2p_open_ = true;
    }
    std::exception_ptr err;
    for (const auto &op : item.p2p) {
      std::exception_ptr e = Capture(item.work, [&] { op.post(nullptr); });
      if (e && !err) err = e;
    }
    open_.push_back(Posted{item.work, std::move(item.p2p), err});
  }

  // On the worker: ends the open group and completes its Works.
  void Flush() {
    bool aborted;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!p2p_open_) return;
      aborted = aborted_;
    }
    // After abort_process_group the posted calls are given up: ending the
    // group would wait for peers that may never come.
    const infinicclResult_t rc = aborted ? infinicclInvalidUsage : infinicclGroupEnd();
    std::string msg;
    if (aborted) {
      msg = kAborted;
    } else if (rc != infinicclSuccess) {
      msg = infinicclGetLastError(nullptr);
      if (msg.empty()) msg = infinicclGetLastError(comm_);
      msg = std::string(infinicclGetErrorString(rc)) + ": " + msg;
    }
    std::vector<Posted> done = std::move(open_);
    open_.clear();
    {
      std::lock_guard<std::mutex> lock(mu_);
      p2p_open_ = false;
    }
    for (auto &p : done) {
      std::exception_ptr err = p.err;
      if (!err && rc != infinicclSuccess) {
        err = Capture(p.work, [&] { throw std::runtime_error(msg); });
      }
      if (!err) {
        err = Capture(p.work, [&] {
          for (const auto &op : p.p2p) {
            if (op.finish) op.finish();
          }
        });
      }
      p.work->Done(err);
    }
  }

  // A call on a group after destroy_process_group (shutdown) raises (Enqueue
  // checks the same under the lock it takes anyway).
  void Refuse(const char *what) {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) {
      Fail(std::string(what) + ": " + kDestroyed);
    }
  }

  void Loop() {
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

  infinicclComm_t comm_;
  Ms timeout_;
  std::string name_;
  std::vector<int64_t> ranks_;
  c10::intrusive_ptr<c10d::Store> store_;
  std::shared_ptr<GroupState> group_;
  const Ms watchdog_ = WatchdogTimeout();
  std::atomic<uint64_t> seq_{0};  // getSequenceNumberForGroup
  c10::intrusive_ptr<c10d::Store> nocolor_store_;  // the last split this rank joined none of
  uint64_t monitored_ = 0;  // monitored barriers so far: each one's store keys

  std::mutex mu_;
  std::condition_variable cv_, idle_cv_;
  std::deque<Item> queue_;
  bool busy_ = false;
  bool stop_ = false;
  bool aborted_ = false;
  bool p2p_open_ = false;     // the worker holds an open group of posted P2P calls
  std::vector<Posted> open_;  // the worker's only
  std::thread worker_;

  bool coalescing_ = false;
  std::vector<P2POp> batch_;
  std::vector<at::Tensor> batch_inputs_;  // the batch's inputs: its event's shapes
  c10::intrusive_ptr<WorkInfiniCCL> batch_work_;
  c10::Device batch_device_{c10::kCPU};
  void *batch_stream_ = nullptr;
};

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "torch.distributed backend 'infiniccl' (c10d::Backend over libinfiniccl)";
  py::module_::import("torch.distributed");
  py::class_<BackendInfiniCCL, c10d::Backend, c10::intrusive_ptr<BackendInfiniCCL>>(m, "Backend")
      .def(py::init([](int64_t comm, int rank, int size, int64_t timeout_ms, std::string name,
                       std::vector<int64_t> ranks, c10::intrusive_ptr<c10d::Store> store) {
             return c10::make_intrusive<BackendInfiniCCL>(comm, rank, size, timeout_ms,
                                                          std::move(name), std::move(ranks),
                                                          std::move(store));
           }),
           py::arg("comm"), py::arg("rank"), py::arg("size"), py::arg("timeout_ms"),
           py::arg("name"), py::arg("ranks"), py::arg("store") = py::none())
      .def("shutdown", &BackendInfiniCCL::Shutdown, py::call_guard<py::gil_scoped_release>(),
           "Finishes the queued calls and destroys the communicator.")
      .def_property_readonly("timeout_ms", &BackendInfiniCCL::timeoutMs);
}
