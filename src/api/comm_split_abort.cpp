// infinicclCommSplit, infinicclCommAbort, infinicclCommGetAsyncError and
// infinicclCommDescribeWait: making a communicator from another, asking
// whether its queued device work failed or what its calls wait for, and
// giving it up without the other ranks.
#include <infiniccl/infiniccl.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "api/api_call.h"
#include "comm/comm_init.h"
#include "core/log.h"
#include "comm/runtime.h"
#include "comm/watchdog.h"
#include "mpi/fault_tolerance.h"
#include "mpi/mpi_thread.h"

using namespace infiniccl;

namespace {

// How long CommAbort lets a call that is still running on the communicator
// finish by itself before ending the job: long enough for a call that was
// merely about to return, short next to any timeout a user would set.
constexpr std::chrono::milliseconds kAbortGrace{1000};

}  // namespace

extern "C" {

infinicclResult_t infinicclCommSplit(infinicclComm_t comm, int color, int key,
                                     infinicclComm_t *newcomm) {
  return ApiCall("infinicclCommSplit", [&](CallContext &ctx) -> Status {
    // A communicator of the CCL alone (CommInitRank) splits without Init,
    // as ncclCommSplit does: LookupUsable lets exactly those through.
    INFINICCL_RETURN_IF_ERROR(Runtime::LookupUsable(comm, &ctx.comm));
    if (newcomm != nullptr) *newcomm = nullptr;
    Communicator::CallGuard guard;
    INFINICCL_RETURN_IF_ERROR(ctx.comm->Enter("infinicclCommSplit", &guard));
    // The split is an MPI call on the parent: after its queued work (an
    // AllReduce just queued may still be inside MPI on the engine's thread).
    INFINICCL_RETURN_IF_ERROR(ctx.comm->DrainQueued());
    // A NULL newcomm still takes part (without a color): the split is
    // collective, and the other ranks would otherwise wait for this one.
    std::unique_ptr<Communicator> child;
    INFINICCL_RETURN_IF_ERROR(
        SplitComm(*ctx.comm, newcomm == nullptr ? -1 : color, key, &child));
    if (newcomm == nullptr) {
      return Status(infinicclInvalidArgument,
                    "newcomm is NULL (this rank took part in the split without a color)");
    }
    if (child == nullptr) {
      INFINICCL_INFO("CommSplit: color %d key %d: no communicator (negative color)",
                     color, key);
      return Status::Ok();
    }
    INFINICCL_INFO(
        "CommSplit: color %d key %d: rank %d of %d (rank %d of %d in the parent)", color,
        key, child->rank(), child->size(), ctx.comm->rank(), ctx.comm->size());
    *newcomm = Runtime::Register(std::move(child));
    return Status::Ok();
  });
}

infinicclResult_t infinicclCommGetAsyncError(infinicclComm_t comm,
                                             infinicclResult_t *asyncError) {
  return ApiCall("infinicclCommGetAsyncError", [&](CallContext &ctx) -> Status {
    INFINICCL_RETURN_IF_ERROR(Runtime::LookupUsable(comm, &ctx.comm));
    if (asyncError == nullptr) {
      return Status(infinicclInvalidArgument, "asyncError is NULL");
    }
    *asyncError = infinicclSuccess;
    // No Enter(): meant to be called while another thread uses the comm.
    // Queued work through MPI first (the progress engine), then the CCL's.
    const Backend *ccl = ctx.comm->ccl_backend();
    Status async = ctx.comm->QueuedError();
    if (async.ok() && ccl != nullptr) async = ccl->AsyncError();
    if (!async.ok()) {
      *asyncError = async.code();
      ctx.comm->SetLastError(async.message());
    }
    return Status::Ok();
  });
}

infinicclResult_t infinicclCommDescribeWait(infinicclComm_t comm, char *desc, size_t len) {
  return ApiCall("infinicclCommDescribeWait", [&](CallContext &ctx) -> Status {
    INFINICCL_RETURN_IF_ERROR(Runtime::LookupUsable(comm, &ctx.comm));
    if (desc == nullptr || len == 0) {
      return Status(infinicclInvalidArgument, "desc is NULL or len is 0");
    }
    // No Enter(), as GetAsyncError: called while another thread waits in a call.
    const std::string text = Watchdog::DescribeWait(*ctx.comm);
    const size_t n = std::min(text.size(), len - 1);
    std::memcpy(desc, text.data(), n);
    desc[n] = '\0';
    return Status::Ok();
  });
}

infinicclResult_t infinicclCommAbort(infinicclComm_t comm) {
  return ApiCall("infinicclCommAbort", [&](CallContext &) -> Status {
    std::shared_ptr<Communicator> c;
    // Without Init only a communicator of the CCL alone exists (as in Split).
    INFINICCL_RETURN_IF_ERROR(Runtime::LookupUsable(comm, &c));
    c.reset();
    INFINICCL_RETURN_IF_ERROR(Runtime::Abort(comm, &c));
    // Queued work that has not started (queued, or waiting for its stream
    // behind a kernel) is dropped and its streams released; an operation
    // the engine has started counts as a call in flight.
    // Sealed: a call racing this abort starts no engine after this read
    // (its engine would run on after the communicator is freed).
    ProgressEngine *engine = c->SealEngine();
    if (engine != nullptr) engine->Cancel();
    // A call waiting in the node's shared memory sees this within a sleep
    // slice and returns InvalidUsage: it is not in flight for long.
    if (ShmBackend *shm = c->shm_backend()) shm->Abort();
    if (Topology *t = c->topology(); t != nullptr && t->group_shm) t->group_shm->Abort();
    // The library's own MPI waits on it and on its two-level communicators
    // end (mpi_thread.h), on any MPI.
    if (c->has_mpi()) mpi::RevokeLocally(c->mpi_comm(), /*aborted=*/true);
    if (Topology *t = c->topology()) t->AbortMpi(/*ft_revoke=*/false);
    // Send/Recv posted in a group that has not ended are calls in flight as
    // well: their MPI requests cannot be withdrawn either.
    auto busy = [&] {
      return c->calls_in_flight() + c->group_users() +
             (engine != nullptr && engine->started() ? 1 : 0);
    };
    const auto deadline = std::chrono::steady_clock::now() + kAbortGrace;
    while (busy() > 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (busy() > 0 && c->has_mpi() && mpi::FtCompiled() && mpi::Revoke(c->mpi_comm()).ok()) {
      // A fault-tolerant MPI ends the calls blocked on a revoked communicator;
      // a two-level call may be blocked in a group or leader step.
      if (Topology *t = c->topology()) t->AbortMpi(/*ft_revoke=*/true);
      const auto revoked = std::chrono::steady_clock::now() + kAbortGrace;
      while (busy() > 0 && std::chrono::steady_clock::now() < revoked) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
    if (busy() > 0) {
      // MPI cannot cancel a blocking (or started nonblocking) collective, and
      // leaving the thread blocked forever is the hang the abort was called
      // to end. NCCL's abort makes the blocked call return; the nearest MPI
      // can do is end the job, which is also what NCCL users do next.
      LogPrint(LogLevel::kWarn,
               "infinicclCommAbort: comm %p (rank %d of %d) still has %d call(s) in "
               "flight (or in an open group) after %lld ms (last entered: %s, collective "
               "sequence number %llu); "
               "MPI cannot cancel it, so the job ends now through MPI_Abort on this "
               "communicator",
               comm, c->rank(), c->size(), busy(),
               static_cast<long long>(kAbortGrace.count()), c->last_call(),
               static_cast<unsigned long long>(c->seq()));
      // A communicator made without MPI (CCL only) has no MPI communicator
      // of its own: the world's, when MPI runs at all.
      int up = 0, down = 1;
      MPI_Initialized(&up);
      MPI_Finalized(&down);
      if (c->has_mpi()) MPI_Abort(c->mpi_comm(), 1);
      if (up && !down) MPI_Abort(MPI_COMM_WORLD, 1);
      std::_Exit(1);
    }
    INFINICCL_INFO(
        "CommAbort: comm %p aborted (rank %d of %d); its MPI communicator is "
        "left to infinicclFinalize",
        comm, c->rank(), c->size());
    // The CCL communicator is aborted (ncclCommAbort), not destroyed, which
    // would wait for queued and possibly hung work; `c` goes here: backends
    // and staging buffers freed.
    if (Backend *ccl = c->ccl_backend()) ccl->Abort();
    if (Topology *t = c->topology(); t != nullptr && t->group_ccl) t->group_ccl->Abort();
    return Status::Ok();
  });
}

}  // extern "C"
