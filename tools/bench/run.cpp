#include "run.h"

#include <cstdlib>
#include <memory>
#include <new>
#include <vector>

#include "errors.h"

namespace bench {
namespace {

char *At(void *base, size_t elements, size_t type_size) {
  return static_cast<char *>(base) + elements * type_size;
}

bool OnDevice(Family f) {
  return f == Family::kInfiniccl || f == Family::kStageAlloc || f == Family::kStageReuse ||
         f == Family::kReturnTime;
}

struct FreeDeleter {
  void operator()(void *p) const { std::free(p); }
};
using Malloced = std::unique_ptr<void, FreeDeleter>;

Malloced MallocOrThrow(size_t bytes) {
  Malloced p(std::malloc(bytes == 0 ? 1 : bytes));
  if (!p) throw std::bad_alloc();
  return p;
}

}  // namespace

BufferSet::BufferSet(const Env &env, size_t bytes)
    : host_send_(nullptr, bytes), host_recv_(nullptr, bytes) {
  if (!env.device->IsHostMemory()) {
    dev_send_ = Buffer(env.device, bytes);
    dev_recv_ = Buffer(env.device, bytes);
  }
}

ModeRun::ModeRun(const Mode &mode, const Env &env, const BufferSet &buffers,
                 size_t elements)
    : mode_(mode), env_(env), buffers_(buffers) {
  const Options &o = *env.opt;
  const size_t ts = o.dtype->size;
  layout_ = MakeLayout(mode.coll, elements, ts, env.nranks, env.rank, o.root,
                       o.inplace && SupportsInplace(mode));
  args_ = {mode.coll, &layout_, o.dtype, o.op->id, o.root, env.rank, env.nranks};
  expect_ = {mode.coll, &layout_, o.dtype, o.op->id, env.rank, env.nranks, o.root};
  on_device_ = OnDevice(mode.family);
  void *send_base = on_device_ ? buffers.dev_send() : buffers.host_send();
  void *recv_base = on_device_ ? buffers.dev_recv() : buffers.host_recv();
  base_ = recv_base;
  if (layout_.inplace) {
    send_ = At(recv_base, layout_.send_offset, ts);
    recv_ = At(recv_base, layout_.recv_offset, ts);
  } else {
    send_ = send_base;
    recv_ = recv_base;
  }
  switch (mode.family) {
    case Family::kHost: unavailable_ = MpiUnsupported(args_, layout_.inplace); break;
    case Family::kStageAlloc:
    case Family::kStageReuse:  // MPI out of place on the staging buffers
      unavailable_ = MpiUnsupported(args_, false);
      break;
    case Family::kInfiniccl:
    case Family::kReturnTime: unavailable_ = IcclUnsupported(args_); break;
    case Family::kReduceScatterVariant:
      unavailable_ = RsUnsupported(mode.rs, args_);
      break;
    default: break;
  }
}

void ModeRun::Prepare() {
  const size_t ts = layout_.count == 0 ? 0 : env_.opt->dtype->size;
  switch (mode_.family) {
    case Family::kStageReuse:
      stage_send_ = Buffer::HostStaging(env_.device, layout_.send_count * ts);
      stage_recv_ = Buffer::HostStaging(env_.device, layout_.recv_count * ts);
      break;
    case Family::kCopyRoundtrip: roundtrip_ = Buffer(nullptr, layout_.count * ts); break;
    case Family::kReduceScatterVariant: RsPrepare(mode_.rs, args_, &rs_); break;
    default: break;
  }
  FillInputs(false);
}

void ModeRun::Iterate() {
  const size_t bytes = layout_.count * env_.opt->dtype->size;
  Device &dev = *env_.device;
  result_on_device_ = on_device_;
  switch (mode_.family) {
    case Family::kHost:
      result_ = MpiCall(args_, env_.mpi_comm, send_, recv_, layout_.inplace);
      break;
    case Family::kInfiniccl:
    case Family::kReturnTime:
      IcclCall(args_, env_.comm, send_, recv_, dev.Stream());
      result_ = recv_;
      break;
    case Family::kOverlap: break;  // overlap.cpp
    case Family::kStageAlloc: {
      const size_t ts = env_.opt->dtype->size;
      Malloced hs = MallocOrThrow(layout_.send_count * ts);
      Malloced hr = MallocOrThrow(layout_.recv_count * ts);
      Stage(hs.get(), hr.get());
      break;
    }
    case Family::kStageReuse: Stage(stage_send_.data(), stage_recv_.data()); break;
    case Family::kCopyD2H:
      dev.CopyToHost(buffers_.host_recv(), buffers_.dev_send(), bytes);
      result_ = buffers_.host_recv();
      result_on_device_ = false;
      break;
    case Family::kCopyH2D:
      dev.CopyFromHost(buffers_.dev_recv(), buffers_.host_send(), bytes);
      result_ = buffers_.dev_recv();
      result_on_device_ = true;
      break;
    case Family::kCopyRoundtrip:
      dev.CopyToHost(roundtrip_.data(), buffers_.dev_send(), bytes);
      dev.Synchronize();
      dev.CopyFromHost(buffers_.dev_recv(), roundtrip_.data(), bytes);
      result_ = buffers_.dev_recv();
      result_on_device_ = true;
      break;
    case Family::kReduceScatterVariant:
      RsCall(mode_.rs, args_, env_.mpi_comm, send_, recv_, &rs_);
      result_ = recv_;
      break;
  }
}

// Device buffers through host staging buffers around the raw MPI call.
void ModeRun::Stage(void *host_send, void *host_recv) {
  const size_t ts = env_.opt->dtype->size;
  const size_t send_bytes = layout_.send_count * ts;
  const size_t recv_bytes = layout_.recv_count * ts;
  Device &dev = *env_.device;
  if (layout_.send_used && send_bytes) {
    dev.CopyToHost(host_send, send_, send_bytes);
    dev.Synchronize();
  }
  const void *res = MpiCall(args_, env_.mpi_comm, host_send, host_recv, false);
  if (layout_.recv_used && recv_bytes) {
    dev.CopyFromHost(recv_, res, recv_bytes);
    dev.Synchronize();
  }
  result_ = recv_;
}

void ModeRun::Wait() {
  if (mode_.family != Family::kHost && mode_.family != Family::kReduceScatterVariant)
    env_.device->Synchronize();
}

size_t ModeRun::Validate() {
  FillInputs(true);
  Iterate();
  Wait();
  const size_t bytes = layout_.recv_count * env_.opt->dtype->size;
  if (!layout_.recv_used || bytes == 0) return 0;
  if (!result_on_device_ || env_.device->HostAccessible())
    return CountWrong(expect_, result_);
  std::vector<unsigned char> host(bytes);
  env_.device->CopyToHost(host.data(), result_, bytes);
  env_.device->Synchronize();
  return CountWrong(expect_, host.data());
}

// Inputs go where the mode reads them; with `poison_outputs` the places the
// result will be written are first filled with 0xff bytes, so a call that
// writes nothing cannot pass on the previous call's result.
void ModeRun::FillInputs(bool poison_outputs) {
  const size_t ts = env_.opt->dtype->size;
  const size_t n = layout_.count;
  switch (mode_.family) {
    case Family::kCopyD2H:
      if (poison_outputs) PoisonAt(buffers_.host_recv(), false, n * ts);
      Fill(buffers_.dev_send(), true, n);
      return;
    case Family::kCopyH2D:
      if (poison_outputs) PoisonAt(buffers_.dev_recv(), true, n * ts);
      Fill(buffers_.host_send(), false, n);
      return;
    case Family::kCopyRoundtrip:
      if (poison_outputs) PoisonAt(buffers_.dev_recv(), true, n * ts);
      Fill(buffers_.dev_send(), true, n);
      return;
    default: break;
  }
  if (poison_outputs) {
    // In place the whole shared buffer is poisoned before the input is
    // written into its send part.
    PoisonAt(layout_.inplace ? base_ : recv_, on_device_,
             (layout_.inplace ? layout_.buffer_count : layout_.recv_count) * ts);
  }
  Fill(send_, on_device_, layout_.send_count);
}

void ModeRun::Fill(void *p, bool on_device, size_t count) {
  if (count == 0) return;
  if (!on_device || env_.device->HostAccessible()) {
    FillInput(expect_, p, count);
    return;
  }
  std::vector<unsigned char> host(count * env_.opt->dtype->size);
  FillInput(expect_, host.data(), count);
  env_.device->CopyFromHost(p, host.data(), host.size());
  env_.device->Synchronize();
}

void ModeRun::PoisonAt(void *p, bool on_device, size_t bytes) {
  if (bytes == 0) return;
  if (!on_device || env_.device->HostAccessible()) {
    Poison(p, bytes);
    return;
  }
  std::vector<unsigned char> host(bytes);
  Poison(host.data(), bytes);
  env_.device->CopyFromHost(p, host.data(), bytes);
  env_.device->Synchronize();
}

}  // namespace bench
