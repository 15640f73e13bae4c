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
// torch's current stream of the tensor's device (torch's device-generic
// guard interface and c10::Stream::native_handle, so CUDA and privateuse1
// devices take one path and no CUDA headers are needed). NCCL's stream
// semantics: an event recorded after the call marks its end; wait() makes
// the current stream wait for it without blocking the host, synchronize()
// blocks, the future is device-aware, and the call's tensors are kept from
// the caching allocator until the stream has passed the call
// (WorkInfiniCCL::OnStream).
// Torch 2.7 or later. Where a torch lacks an interface, what needs it is left
// out of the build (INFINICCL_TORCH_AT_LEAST): before 2.9 split_group
// (torch's own is NCCL's alone there), before 2.11 device tensors (no
// c10::Stream::native_handle: refused with an error naming the version),
// before 2.15 the emulated device.
// torch.profiler: every call records an "infiniccl:<op>" event (gloo's op
// names) with its input tensors' shapes, from when the call starts running
// until it completes (see WorkInfiniCCL::Record).
//
// This header declares the backend (BackendInfiniCCL), its Work
// (WorkInfiniCCL) and what they share; their code is in four files:
//   work.cpp         the Work (completion, wait and its timeout, futures,
//                    the profiler's event), tensor types to the library's,
//                    errors;
//   collectives.cpp  the collectives, barrier and monitored_barrier;
//   p2p.cpp          send, recv, batches (startCoalescing/endCoalescing),
//                    the worker's open group of posted calls, all_to_all by
//                    Send/Recv;
//   backend.cpp      the backend's life (creation, worker and its queue,
//                    shutdown, abort, split, shrink, options) and the
//                    Python module.
// sim_device.cpp, apart from these, is the EMULATED torch device "sim"
// (infiniccl.torch_sim), the module's submodule "sim".
#pragma once

#include <ATen/ATen.h>
#include <ATen/ThreadLocalState.h>
#include <ATen/record_function.h>
#include <c10/core/Event.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <torch/version.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "infiniccl/infiniccl.h"

// Whether the torch this is built against is MAJOR.MINOR or later.
#define INFINICCL_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) ||            \
   (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

// Hidden, as pybind11's own types are: the module exports only its init.
#pragma GCC visibility push(hidden)
namespace infiniccl_c10d {

using c10d::OpType;
using Ms = std::chrono::milliseconds;

constexpr int kUInt8 = infinicclUInt8;

// A call on a group after destroy_process_group (shutdown) raises this; it
// would otherwise wait for a worker that has ended.
constexpr const char *kDestroyed = "the process group was destroyed (destroy_process_group)";
constexpr const char *kAborted = "the process group was aborted (abort_process_group)";

[[noreturn]] void Fail(const std::string &msg);

// The device runtimes the library was built with (infinicclGetDeviceRuntimes:
// "cpu", ..., "sim"), read once.
const std::vector<std::string> &LibraryRuntimes();

// The library's runtimes that may own memory of torch device type `type`
// (torch's name of it: "cuda", "npu", "sim", ...): "cuda" tensors are CUDA's,
// HIP's, MACA's or CoreX's, as each vendor's torch names its device cuda.
// Empty for a type no runtime serves (meta, xpu, ...); "cpu" for cpu.
std::vector<std::string> RuntimesForDeviceType(const std::string &type);

// Fails (torch's DistBackendError, a RuntimeError) for a device whose
// runtime the library lacks, naming the device and the runtimes it has: its
// memory would otherwise reach MPI as host memory.
void CheckDeviceRuntime(const c10::Device &device);

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
Ms WatchdogTimeout();

// Library type of a tensor for a reduction (bool as uint8, its reductions
// logical), or -1.
int TypeOf(const at::Tensor &t);

// A contiguous tensor as the library sees it: pointer, count, type.
struct Buf {
  void *ptr;
  size_t count;
  int type;
};

// Moved, not combined: any type travels as bytes.
Buf Raw(const at::Tensor &t);

// Combined by `op`: the library's type and reduction.
Buf Reduced(const at::Tensor &t, const c10d::ReduceOp &rop, int *op);

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

void SameType(const at::Tensor &a, const at::Tensor &b, const char *what);

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
std::string InFlightText(infinicclComm_t comm);

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
  void Record(const char *title, const std::vector<at::Tensor> &inputs);

  // The call starts running (the thread that runs it calls this first).
  void Begin();

  // Called once, by whoever ran the call.
  void Done(std::exception_ptr err);

  // A P2P call posted into the worker's open group completes when the
  // group is flushed: waiting for it (wait, isCompleted, getFuture) asks for
  // that.
  void MarkPosted() { posted_ = true; }

  // A device call, once the library has queued it on `stream` (torch's
  // current stream of `device`, on the caller's thread): an event recorded
  // there marks its end, and every tensor of `keep` is kept from its
  // device's caching allocator until the stream passes it
  // (recordDataPtrOnStream, Tensor.record_stream's hook), so a tensor freed
  // right after the call is not reused before the call has read it.
  void OnStream(c10::Device device, const c10::Stream &stream,
                const std::vector<at::Tensor> &keep);

  // Host calls: complete. Device calls: whether the stream has passed the
  // call (its event).
  bool isCompleted() override;

  // Host calls: blocks until the call completes (within the timeout) and
  // raises its error. Device calls (NCCL's semantics): the current stream
  // of the call's device waits for the call's event, and wait() returns
  // without blocking the host.
  bool wait(Ms timeout) override;

  // Blocks the host until the call has completed; for a device call, until
  // its stream has passed it.
  void synchronize() override;

  std::vector<at::Tensor> result() override { return outputs_; }
  // Made on the first request (DDP's comm hooks ask; most callers never do):
  // completed here when the call is already done, else by Done.
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;
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
  void Complete(c10::ivalue::Future &future);

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
  // Device calls (OnStream): the device and the event after the call.
  c10::Device device_{c10::kCPU};
  std::optional<c10::Stream> stream_;
  std::unique_ptr<c10::Event> event_;
};

class BackendInfiniCCL : public c10d::Backend {
 public:
  BackendInfiniCCL(int64_t comm, int rank, int size, int64_t timeout_ms, std::string name,
                   std::vector<int64_t> ranks, c10::intrusive_ptr<c10d::Store> store);

  ~BackendInfiniCCL() override { Shutdown(); }

  // destroy_process_group: the queued calls finish, the communicator is
  // destroyed, and later calls on the group are refused.
  void shutdown() override { Shutdown(); }

  // A call of the group that timed out and still runs (its peers never came)
  // would hold the worker forever: the communicator is aborted instead, which
  // makes a call waiting in the node's shared memory return, and ends the
  // job where the call is inside MPI (as torch's NCCL backend tears the
  // process down after a timeout).
  void Shutdown();

  void JoinWorker();

  const std::string getBackendName() const override { return "infiniccl"; }

  // dist.abort_process_group: the communicator is aborted
  // (infinicclCommAbort) without waiting for the other ranks; a call of the
  // group waiting in the node's shared memory returns with an error, which
  // its Work raises, queued calls fail the same way, and later calls are
  // refused. A call blocked inside MPI cannot be cancelled: the library then
  // ends the job after one second (see infinicclCommAbort).
  void abort() override { Abort(); }

  void Abort();

#if INFINICCL_TORCH_AT_LEAST(2, 7)
  c10d::ErrorType getError() override {
    if (group_->timed_out.load()) return c10d::ErrorType::TIMEOUT;
    std::lock_guard<std::mutex> lock(mu_);
    return aborted_ ? c10d::ErrorType::COMM_ERROR : c10d::ErrorType::SUCCESS;
  }
#endif

  // Runs `fn` on the group's worker, after the group's earlier calls and
  // the open group of point-to-point calls, and waits for it (without the
  // GIL); its error raises here. For calls that make a communicator.
  void OnWorker(const char *what, const std::function<void()> &fn);

  // dist.split_group: every rank of this group calls it with the ranks (of
  // this group, in the new group's order) of the one new group it joins, or
  // of the first one when it joins none; infinicclCommSplit makes the new
  // communicators (color: the smallest rank of a new group, which the
  // disjoint groups do not share; key: the position in it). Runs on the
  // group's worker, in call order with the group's other calls.
  // Torch before 2.9 has neither (its split_group is NCCL's alone).
#if INFINICCL_TORCH_AT_LEAST(2, 9)
  bool supportsSplitting() const override { return true; }

  c10::intrusive_ptr<c10d::Backend::Options> getBackendOptions() override;

  c10::intrusive_ptr<c10d::Backend> split(const c10::intrusive_ptr<c10d::Store> &store,
                                          const std::vector<int> &ranks,
                                          const c10::intrusive_ptr<Options> &opts) override;
#endif

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
                                           const c10::intrusive_ptr<Options> &opts = nullptr);

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
                                           const c10d::AllreduceOptions &opts) override;

  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor> &tensors, const c10d::AllreduceCoalescedOptions &opts) override {
    return allreduce(tensors, opts);
  }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor> &tensors,
                                           const c10d::BroadcastOptions &opts) override;

  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor> &tensors,
                                        const c10d::ReduceOptions &opts) override;

  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>> &outputs,
                                           std::vector<at::Tensor> &inputs,
                                           const c10d::AllgatherOptions &opts) override;

  // output_lists[r][i] receives rank r's inputs[i].
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(
      std::vector<std::vector<at::Tensor>> &output_lists, std::vector<at::Tensor> &inputs,
      const c10d::AllgatherOptions &opts) override;

  // The output of an all-gather of `input`, or the input of a
  // reduce-scatter into `output`: the other's size times the group's.
  void CheckTimesGroup(const at::Tensor &big, const at::Tensor &small, const char *what,
                       const char *big_name, const char *small_name) const;

  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor &output, at::Tensor &input,
                                                 const c10d::AllgatherOptions &opts) override;

  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(
      std::vector<at::Tensor> &outputs, std::vector<at::Tensor> &inputs,
      const c10d::AllgatherOptions &opts) override;

  c10::intrusive_ptr<c10d::Work> reduce_scatter(
      std::vector<at::Tensor> &outputs, std::vector<std::vector<at::Tensor>> &inputs,
      const c10d::ReduceScatterOptions &opts) override;

  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor &output, at::Tensor &input, const c10d::ReduceScatterOptions &opts) override;

  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(
      std::vector<at::Tensor> &outputs, std::vector<at::Tensor> &inputs,
      const c10d::ReduceScatterOptions &opts) override;

  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor &output, at::Tensor &input,
                                               std::vector<int64_t> &out_splits,
                                               std::vector<int64_t> &in_splits,
                                               const c10d::AllToAllOptions &opts) override;

  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor> &outputs,
                                          std::vector<at::Tensor> &inputs,
                                          const c10d::AllToAllOptions &opts) override;

  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>> &outputs,
                                        std::vector<at::Tensor> &inputs,
                                        const c10d::GatherOptions &opts) override;

  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor> &outputs,
                                         std::vector<std::vector<at::Tensor>> &inputs,
                                         const c10d::ScatterOptions &opts) override;

  // gloo's monitored barrier, through the group's store: every other rank
  // checks in with rank 0, which waits for each within the timeout and then
  // releases them. A rank that does not arrive in time makes rank 0 raise
  // naming it (with wait_all_ranks, every such rank); the ranks waiting for
  // the release then raise at their own timeout.
  void monitoredBarrier(const c10d::BarrierOptions &opts, bool wait_all_ranks) override;

  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions &opts) override;

  // ---- point to point ----
  // Tags are the library's (infinicclSendTagged/RecvTagged, 0..INFINICCL_TAG_MAX):
  // a recv takes only a send of its tag; tag 0 (torch's default) is the
  // library's plain Send/Recv.
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor> &tensors, int dst,
                                      int tag) override;

  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor> &tensors, int src,
                                      int tag) override;

  // recv without src (as gloo's): the first message of `tag` from any rank;
  // the Work's sourceRank() (dist.recv's return value, irecv's
  // work._source_rank()) is its sender once it has completed. Device
  // tensors: the call waits for the stream, so that the sender is known
  // when the Work is.
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor> &tensors,
                                               int tag) override;

  // batch_isend_irecv and _coalescing_manager: the sends, receives and
  // collectives between startCoalescing and endCoalescing run as one group
  // (infinicclGroupStart/End), as NCCL runs them: every rank may send before
  // it receives, collectives run in call order inside the group, and each
  // call returns the batch's Work, complete when the group has ended.
  void startCoalescing() override;

  c10::intrusive_ptr<c10d::Work> endCoalescing() override;

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

  std::string Where() const;

  void Check(infinicclResult_t rc);

  int Root(int64_t root, const char *what);

  void Peer(int peer, const char *what);

  static void Tag(int tag, const char *what);

  static void One(const std::vector<at::Tensor> &v, const char *what) {
    if (v.size() != 1) {
      Fail(std::string(what) + " takes one tensor per process, got " + std::to_string(v.size()));
    }
  }

  // As gloo: a call on no tensor raises; broadcast's and reduce's root
  // tensor (their options' rootTensor) is an index into the list.
  static void NonEmpty(const std::vector<at::Tensor> &tensors, const char *what);

  static void RootTensor(const std::vector<at::Tensor> &tensors, int64_t root_tensor,
                         const char *what);

  void CheckList(const std::vector<at::Tensor> &lst, const at::Tensor &like, const char *what);

  std::vector<at::Tensor> Split(const at::Tensor &t, const std::vector<int64_t> &splits,
                                const char *what);

  static at::Tensor Flatten(const std::vector<at::Tensor> &ts);

  static void Unflatten(const at::Tensor &flat, const std::vector<at::Tensor> &outs);

  void GatherInto(const at::Tensor &output, const at::Tensor &input, void *stream);

  void ScatterFrom(const at::Tensor &output, const at::Tensor &flat, const c10d::ReduceOp &rop,
                   void *stream);

  // sends[j] to rank j, recvs[j] from rank j, as one group.
  void Exchange(const std::vector<at::Tensor> &sends, const std::vector<at::Tensor> &recvs,
                void *stream);

  // The device the call runs for (CPU, or one device for all its tensors)
  // and torch's current stream there.
  void *StreamOf(const std::vector<at::Tensor> &a, const std::vector<at::Tensor> &b,
                 c10::Device *device);

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
    if (device.is_cpu()) {
      Enqueue(work, std::move(job), device, stream, !AsyncOf(opts) && Inlinable(limit));
    } else {
      std::vector<at::Tensor> keep(inputs);
      keep.insert(keep.end(), outputs.begin(), outputs.end());
      Enqueue(work, std::move(job), device, stream, false, keep);
    }
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
                                     std::shared_ptr<int> source = nullptr);

  // Runs `f`; its exception (if any) as the Work's error, naming the call.
  static std::exception_ptr Capture(const c10::intrusive_ptr<WorkInfiniCCL> &work,
                                    const std::function<void()> &f);

  void Run(const c10::intrusive_ptr<WorkInfiniCCL> &work, const Job &job, void *stream);

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
  // `keep`: a device call's tensors (see WorkInfiniCCL::OnStream).
  void Enqueue(const c10::intrusive_ptr<WorkInfiniCCL> &work, Job job, c10::Device device,
               void *stream, bool inline_host = false,
               const std::vector<at::Tensor> &keep = {});

  void EnqueuePost(const c10::intrusive_ptr<WorkInfiniCCL> &work, std::vector<P2POp> p2p);

  void QueueFlush() {
    std::lock_guard<std::mutex> lock(mu_);
    QueueFlushLocked();
  }

  // Behind the calls already queued, so it completes every post queued
  // before the request (a flush already last in the queue does).
  void QueueFlushLocked();

  // On the worker.
  void Post(Item &item);

  // On the worker: ends the open group and completes its Works.
  void Flush();

  // A call on a group after destroy_process_group (shutdown) raises (Enqueue
  // checks the same under the lock it takes anyway).
  void Refuse(const char *what);

  void Loop();

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

}  // namespace infiniccl_c10d
#pragma GCC visibility pop
