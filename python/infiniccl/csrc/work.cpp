// The Work of a call (WorkInfiniCCL): its completion, wait() and its
// timeout, its future and its torch.profiler event; and what every call
// uses: tensor types to the library's, errors (see backend.h).

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <sstream>

#include "backend.h"

#include <c10/core/impl/VirtualGuardImpl.h>

#pragma GCC visibility push(hidden)
namespace infiniccl_c10d {

[[noreturn]] void Fail(const std::string &msg) {
  C10_THROW_ERROR(DistBackendError, "infiniccl (torch.distributed): " + msg);
}

const std::vector<std::string> &LibraryRuntimes() {
  static const std::vector<std::string> runtimes = [] {
    std::vector<std::string> out;
    char names[INFINICCL_DEVICE_RUNTIMES_BYTES] = "";
    if (infinicclGetDeviceRuntimes(names, sizeof names) != infinicclSuccess) {
      Fail(std::string("infinicclGetDeviceRuntimes: ") + infinicclGetLastError(nullptr));
    }
    std::stringstream list(names);
    for (std::string name; std::getline(list, name, ',');) out.push_back(name);
    return out;
  }();
  return runtimes;
}

std::vector<std::string> RuntimesForDeviceType(const std::string &type) {
  if (type == "cpu") return {"cpu"};
  if (type == "cuda") return {"cuda", "hip", "metax", "iluvatar"};
  if (type == "hip") return {"hip"};
  if (type == "sim") return {"sim"};
  if (type == "npu") return {"ascend"};
  if (type == "mlu") return {"cambricon"};
  if (type == "musa") return {"moore"};
  return {};
}

void CheckDeviceRuntime(const c10::Device &device) {
  if (device.is_cpu()) return;
  const std::string type = c10::DeviceTypeName(device.type(), /*lower_case=*/true);
  const std::vector<std::string> &have = LibraryRuntimes();
  const std::vector<std::string> want = RuntimesForDeviceType(type);
  for (const std::string &w : want) {
    if (std::find(have.begin(), have.end(), w) != have.end()) return;
  }
  std::string has;
  for (const std::string &h : have) has += (has.empty() ? "" : ", ") + h;
  std::string msg = "a tensor on device " + device.str() +
                    ": the infiniccl library has no device runtime for " + type +
                    " tensors (its runtimes: " + has + ")";
  if (!want.empty()) {
    std::string need;
    for (const std::string &w : want) need += (need.empty() ? "" : " or ") + w;
    msg += "; " + type + " tensors need a library built with " + need;
  }
  Fail(msg);
}

Ms WatchdogTimeout() {
  const char *v = std::getenv("INFINICCL_TIMEOUT_SEC");
  if (v == nullptr || *v == '\0') return Ms(1800 * 1000);
  char *end = nullptr;
  const long sec = std::strtol(v, &end, 10);
  return *end == '\0' && sec > 0 ? Ms(sec * 1000) : Ms(0);
}

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

Buf Raw(const at::Tensor &t) {
  int type = TypeOf(t);
  if (type >= 0) return {t.data_ptr(), static_cast<size_t>(t.numel()), type};
  return {t.data_ptr(), static_cast<size_t>(t.numel()) * t.element_size(), kUInt8};
}

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
    static const char *names[] = {"SUM",  "AVG", "PRODUCT", "MIN",        "MAX",
                                  "BAND", "BOR", "BXOR",    "PREMUL_SUM", "UNUSED"};
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

void SameType(const at::Tensor &a, const at::Tensor &b, const char *what) {
  if (a.scalar_type() != b.scalar_type()) {
    Fail(std::string(what) + ": " + c10::toString(a.scalar_type()) + " and " +
         c10::toString(b.scalar_type()) + " differ in data type");
  }
}

std::string InFlightText(infinicclComm_t comm) {
  char text[2048] = "";
  if (infinicclCommDescribeWait(comm, text, sizeof text) != infinicclSuccess) return "";
  std::string s(text);
  for (char &ch : s) {
    if (ch == '\n') ch = ';';
  }
  return s;
}

void WorkInfiniCCL::Record(const char *title, const std::vector<at::Tensor> &inputs) {
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

void WorkInfiniCCL::Begin() {
  if (!event_begin_) return;
  auto begin = std::move(event_begin_);
  event_begin_ = nullptr;
  begin();
}

void WorkInfiniCCL::Done(std::exception_ptr err) {
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

void WorkInfiniCCL::OnStream(c10::Device device, const c10::Stream &stream,
                             const std::vector<at::Tensor> &keep) {
  c10::impl::VirtualGuardImpl impl(device.type());
  for (const auto &t : keep) {
    if (t.defined() && t.device() == device && t.has_storage()) {
      impl.recordDataPtrOnStream(t.storage().data_ptr(), stream);
    }
  }
  auto event = std::make_unique<c10::Event>(device.type());
  event->record(stream);
  std::lock_guard<std::mutex> lock(mutex_);
  device_ = device;
  stream_ = stream;
  event_ = std::move(event);
}

bool WorkInfiniCCL::isCompleted() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (completed_ && event_) return event_->query();
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (completed_ || !posted_) return completed_;
  }
  group_->RequestFlush();
  std::lock_guard<std::mutex> lock(mutex_);
  return completed_;
}

void WorkInfiniCCL::synchronize() {
  wait(Ms(0));  // a device call is complete for the host: wait() only orders
  if (event_) event_->synchronize();
}

bool WorkInfiniCCL::wait(Ms timeout) {
  if (event_) {
    // Device calls complete for the host when the library has queued them
    // (see OnStream): the current stream waits for the call's event.
    if (exception_) std::rethrow_exception(exception_);
    c10::impl::VirtualGuardImpl impl(device_.type());
    event_->block(impl.getStream(device_));
    return true;
  }
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

c10::intrusive_ptr<c10::ivalue::Future> WorkInfiniCCL::getFuture() {
  if (posted_ && !Completed()) group_->RequestFlush();
  std::unique_lock<std::mutex> lock(mutex_);
  if (future_) return future_;
  // A device call's future is device-aware: its callbacks and waits are
  // ordered after the call's stream (torch's CUDA-style futures).
  std::vector<c10::Device> devices;
  if (!device_.is_cpu()) devices.push_back(device_);
  future_ = c10::make_intrusive<c10::ivalue::Future>(TensorListType(), std::move(devices));
  auto future = future_;
  const bool done = completed_;
  lock.unlock();
  if (done) Complete(*future);
  return future;
}

void WorkInfiniCCL::Complete(c10::ivalue::Future &future) {
  if (exception_) {
    future.setError(exception_);
  } else if (stream_) {
    // The future records its events on the current streams: the call's.
    c10::impl::VirtualGuardImpl impl(device_.type());
    c10::Stream prev = impl.exchangeStream(*stream_);
    try {
      future.markCompleted(c10::IValue(outputs_));
    } catch (...) {
      impl.exchangeStream(prev);
      throw;
    }
    impl.exchangeStream(prev);
  } else {
    future.markCompleted(c10::IValue(outputs_));
  }
}

}  // namespace infiniccl_c10d
#pragma GCC visibility pop
