#include "api/api_call.h"

#include <mpi.h>

#include <cstdlib>
#include <string>

#include "core/config.h"
#include "core/log.h"

namespace infiniccl {

namespace {
thread_local std::string t_last_error;
}

const char *ThreadLastError() { return t_last_error.c_str(); }

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
    INFINICCL_WARN("%s (%s)", message.c_str(), infinicclGetErrorString(status.code()));
    if (ctx.comm) ctx.comm->SetLastError(message);
    t_last_error = std::move(message);
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
