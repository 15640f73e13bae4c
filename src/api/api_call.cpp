#include "api/api_call.h"

#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/config.h"
#include "core/log.h"

namespace infiniccl {

namespace {
// A plain array, not a std::string: a thread_local with a destructor is
// destroyed before atexit handlers registered earlier run, so a call failing
// in such a handler (found by the fuzz driver, which finalises at exit) would
// write freed memory. Long messages are cut at 1 KiB.
thread_local char t_last_error[1024];
}

const char *ThreadLastError() { return t_last_error; }

Status StatusFromCurrentException() {
  try {
    throw;
  } catch (const std::bad_alloc &) {
    return Status(infinicclSystemError, "out of host memory");
  } catch (const std::exception &e) {
    return MakeStatus(infinicclInternalError, "internal error: %s", e.what());
  } catch (...) {
    return Status(infinicclUnhandledError, "unknown exception");
  }
}

infinicclResult_t FailCall(const CallContext &ctx, const Status &status) {
  try {
    std::string message = std::string(ctx.function) + ": " + status.message();
    // Printed only when INFINICCL_DEBUG asks (see Config::log_level_set);
    // the caller always has the code and infinicclGetLastError.
    if (LogReturnedErrors())
      LogPrint(LogLevel::kWarn, "%s (%s)", message.c_str(),
               infinicclGetErrorString(status.code()));
    if (ctx.comm) ctx.comm->SetLastError(message);
    std::snprintf(t_last_error, sizeof t_last_error, "%s", message.c_str());
  } catch (...) {
    // Out of memory while reporting: the code still gets back to the caller.
  }
  if (GlobalConfig().abort_on_error) {
    LogPrint(LogLevel::kWarn, "INFINICCL_ABORT_ON_ERROR=1: aborting after %s failed",
             ctx.function);
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (initialized && !finalized) MPI_Abort(MPI_COMM_WORLD, static_cast<int>(status.code()));
    std::abort();
  }
  return status.code();
}

}  // namespace infiniccl
