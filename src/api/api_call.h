// ApiCall: the frame around every public entry point. Runs the body, turns
// any exception into a status (none crosses the C API), and on failure
// records "infinicclX: message" for infinicclGetLastError on the calling
// thread and on the communicator, logs it at WARN, and aborts only when
// INFINICCL_ABORT_ON_ERROR=1.
#pragma once

#include <infiniccl/infiniccl.h>

#include <memory>
#include <new>
#include <stdexcept>

#include "comm/communicator.h"
#include "core/status.h"

namespace infiniccl {

struct CallContext {
  const char *function;
  std::shared_ptr<Communicator> comm;  // set once the handle is resolved
};

infinicclResult_t FailCall(const CallContext &ctx, const Status &status);
Status StatusFromCurrentException();

template <typename Body>
infinicclResult_t ApiCall(const char *function, Body &&body) noexcept {
  CallContext ctx{function, nullptr};
  Status status;
  try {
    status = body(ctx);
  } catch (...) {
    status = StatusFromCurrentException();
  }
  if (status.ok()) return infinicclSuccess;
  return FailCall(ctx, status);
}

// The thread's last error message (GetLastError(NULL)).
const char *ThreadLastError();

}  // namespace infiniccl
