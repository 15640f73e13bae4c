// Entry points for initialisation, communicators, queries and errors.
#include <infiniccl/infiniccl.h>

#include <mpi.h>

#include <cstring>
#include <string>

#include "api/api_call.h"
#include "api/cross_check.h"
#include "comm/comm_init.h"
#include "comm/group.h"
#include "comm/runtime.h"
#include "device/registry.h"
#include "staging/staging_pool.h"

using namespace infiniccl;

namespace {

Status CheckOut(const void *p, const char *name) {
  if (p == nullptr) return MakeStatus(infinicclInvalidArgument, "%s is NULL", name);
  return Status::Ok();
}

}  // namespace

extern "C" {

infinicclResult_t infinicclInit(int *argc, char ***argv) {
  return ApiCall("infinicclInit", [&](CallContext &) { return Runtime::Init(argc, argv); });
}

infinicclResult_t infinicclFinalize(void) {
  return ApiCall("infinicclFinalize", [&](CallContext &) -> Status {
    // Its pending operations would outlive MPI.
    if (Group::Current().active()) {
      return Status(infinicclInvalidUsage,
                    "called inside a group; call infinicclGroupEnd first");
    }
    return Runtime::Finalize();
  });
}

infinicclResult_t infinicclGetRank(int *rank) {
  return ApiCall("infinicclGetRank", [&](CallContext &) -> Status {
    INFINICCL_RETURN_IF_ERROR(CheckOut(rank, "rank"));
    INFINICCL_RETURN_IF_ERROR(Runtime::CheckActive());
    *rank = Runtime::world_rank();
    return Status::Ok();
  });
}

infinicclResult_t infinicclGetSize(int *size) {
  return ApiCall("infinicclGetSize", [&](CallContext &) -> Status {
    INFINICCL_RETURN_IF_ERROR(CheckOut(size, "size"));
    INFINICCL_RETURN_IF_ERROR(Runtime::CheckActive());
    *size = Runtime::world_size();
    return Status::Ok();
  });
}

infinicclResult_t infinicclGetUniqueId(infinicclUniqueId *id) {
  // No CheckActive: like ncclGetUniqueId this is the bootstrap's id, made
  // without infinicclInit (launchers exchange it themselves).
  return ApiCall("infinicclGetUniqueId", [&](CallContext &) -> Status {
    INFINICCL_RETURN_IF_ERROR(CheckOut(id, "id"));
    return NewUniqueId(id);
  });
}

infinicclResult_t infinicclCommInitRank(infinicclComm_t *comm, int nranks,
                                        infinicclUniqueId id, int rank) {
  return ApiCall("infinicclCommInitRank", [&](CallContext &) -> Status {
    INFINICCL_RETURN_IF_ERROR(CheckOut(comm, "comm"));
    *comm = nullptr;
    // A rank out of range still joins: the root names it to every rank.
    if (nranks < 1) {
      return MakeStatus(infinicclInvalidArgument, "nranks %d is less than 1", nranks);
    }
    std::unique_ptr<Communicator> c;
    INFINICCL_RETURN_IF_ERROR(InitWithUniqueId(nranks, id, rank, &c));
    *comm = Runtime::Register(std::move(c));
    return Status::Ok();
  });
}

infinicclResult_t infinicclCommInitAll(infinicclComm_t *comm, int ndev,
                                       const int *devlist) {
  return ApiCall("infinicclCommInitAll", [&](CallContext &) -> Status {
    INFINICCL_RETURN_IF_ERROR(CheckOut(comm, "comm"));
    *comm = nullptr;
    // Upstream's convention: ndev is the world size and devlist NULL (each
    // rank takes its local rank's device); with a list, devlist[local rank].
    if (ndev < 0) return MakeStatus(infinicclInvalidArgument, "ndev %d is negative", ndev);
    for (int i = 0; devlist != nullptr && i < ndev; ++i) {
      if (devlist[i] < 0) {
        return MakeStatus(infinicclInvalidArgument, "devlist[%d] = %d is negative", i,
                          devlist[i]);
      }
    }
    INFINICCL_RETURN_IF_ERROR(Runtime::CheckActive());
    std::unique_ptr<Communicator> c;
    INFINICCL_RETURN_IF_ERROR(InitUnderMpi(MPI_COMM_WORLD, ndev, devlist, &c));
    *comm = Runtime::Register(std::move(c));
    return Status::Ok();
  });
}

// CommInitAll over the caller's communicator instead of MPI_COMM_WORLD; the
// handle travels as MPI_Fint so the public header needs no mpi.h.
infinicclResult_t infinicclCommInitMpi(infinicclComm_t *comm, long mpi_comm_fint) {
  return ApiCall("infinicclCommInitMpi", [&](CallContext &) -> Status {
    INFINICCL_RETURN_IF_ERROR(CheckOut(comm, "comm"));
    *comm = nullptr;
    INFINICCL_RETURN_IF_ERROR(Runtime::CheckActive());
    const auto fint = static_cast<MPI_Fint>(mpi_comm_fint);
    if (static_cast<long>(fint) != mpi_comm_fint) {
      return MakeStatus(infinicclInvalidArgument,
                        "mpi_comm_fint %ld is not a Fortran handle (MPI_Comm_c2f)",
                        mpi_comm_fint);
    }
    const MPI_Comm parent = MPI_Comm_f2c(fint);
    if (parent == MPI_COMM_NULL) {
      return MakeStatus(infinicclInvalidArgument,
                        "mpi_comm_fint %ld is MPI_COMM_NULL or not a communicator",
                        mpi_comm_fint);
    }
    std::unique_ptr<Communicator> c;
    INFINICCL_RETURN_IF_ERROR(InitUnderMpi(parent, 0, nullptr, &c));
    *comm = Runtime::Register(std::move(c));
    return Status::Ok();
  });
}

infinicclResult_t infinicclCommDestroy(infinicclComm_t comm) {
  return ApiCall("infinicclCommDestroy", [&](CallContext &) -> Status {
    std::shared_ptr<Communicator> c;
    INFINICCL_RETURN_IF_ERROR(Runtime::LookupUsable(comm, &c));
    if (c->group_users() > 0) {
      return Status(infinicclInvalidUsage,
                    "the communicator has operations pending in a group; call "
                    "infinicclGroupEnd first");
    }
    // Another thread is inside a call on it: freeing it now would fail that
    // thread's next step and leave its peers waiting (as CommAbort, which
    // detects the same case, explains).
    if (const int busy = c->calls_in_flight(); busy > 0) {
      return MakeStatus(infinicclInvalidUsage,
                        "another thread has %d call(s) in flight on the communicator "
                        "(last entered: %s); destroy it once they have returned",
                        busy, c->last_call());
    }
    // INFINICCL_CHECK: the ranks compare this CommDestroy with what their
    // peers are doing, which is where a skipped collective shows at the latest.
    // Not after a shrink or a revoke: a rank that left would never join.
    const bool exchange = c->check() && c->has_mpi() && !c->diverged() && !c->aborted() &&
                          !c->shrunk() && !c->revoked();
    const uint64_t collectives = c->seq();
    // A destroy that exchanges waits for every rank: watched as a collective
    // (Communicator::CommCallGuard), with a sequence number of its own.
    std::unique_ptr<Communicator::CommCallGuard> watched;
    if (exchange) watched = std::make_unique<Communicator::CommCallGuard>(*c, CommCall::kDestroy);
    // Queued work finishes first, as ncclCommDestroy's does; its failure is
    // the communicator's asynchronous error (CommGetAsyncError, the next
    // call) and does not stop the destroy.
    (void)c->DrainQueued();
    Status checked = Status::Ok();
    if (exchange) {
      checked = CrossCheckDestroy(*c, collectives);
      watched->Returned(checked);
    }
    watched.reset();
    INFINICCL_RETURN_IF_ERROR(Runtime::Unregister(comm));
    return checked;
  });
}

infinicclResult_t infinicclCommCount(infinicclComm_t comm, int *count) {
  return ApiCall("infinicclCommCount", [&](CallContext &ctx) -> Status {
    INFINICCL_RETURN_IF_ERROR(Runtime::LookupUsable(comm, &ctx.comm));
    INFINICCL_RETURN_IF_ERROR(CheckOut(count, "count"));
    *count = ctx.comm->size();
    return Status::Ok();
  });
}

infinicclResult_t infinicclCommUserRank(infinicclComm_t comm, int *rank) {
  return ApiCall("infinicclCommUserRank", [&](CallContext &ctx) -> Status {
    INFINICCL_RETURN_IF_ERROR(Runtime::LookupUsable(comm, &ctx.comm));
    INFINICCL_RETURN_IF_ERROR(CheckOut(rank, "rank"));
    *rank = ctx.comm->rank();
    return Status::Ok();
  });
}

infinicclResult_t infinicclGetVersion(int *version) {
  return ApiCall("infinicclGetVersion", [&](CallContext &) -> Status {
    INFINICCL_RETURN_IF_ERROR(CheckOut(version, "version"));
    *version = INFINICCL_VERSION_CODE;
    return Status::Ok();
  });
}

infinicclResult_t infinicclGetDeviceRuntimes(char *names, size_t bytes) {
  return ApiCall("infinicclGetDeviceRuntimes", [&](CallContext &) -> Status {
    INFINICCL_RETURN_IF_ERROR(CheckOut(names, "names"));
    // The registry's list, as infiniccl-info prints it.
    std::string list;
    for (DeviceKind k : DeviceRegistry::Built()) {
      if (!list.empty()) list += ',';
      list += DeviceKindName(k);
    }
    if (bytes < list.size() + 1) {
      return MakeStatus(infinicclInvalidArgument,
                        "names holds %zu bytes; the list \"%s\" needs %zu", bytes,
                        list.c_str(), list.size() + 1);
    }
    std::memcpy(names, list.c_str(), list.size() + 1);
    return Status::Ok();
  });
}

infinicclResult_t infinicclGetStagingStats(infinicclStagingStats *stats) {
  return ApiCall("infinicclGetStagingStats", [&](CallContext &) -> Status {
    INFINICCL_RETURN_IF_ERROR(Runtime::CheckActive());  // as MemTrim
    INFINICCL_RETURN_IF_ERROR(CheckOut(stats, "stats"));
    *stats = StagingPool::Global().Stats();
    return Status::Ok();
  });
}

infinicclResult_t infinicclMemTrim(void) {
  return ApiCall("infinicclMemTrim", [&](CallContext &) -> Status {
    INFINICCL_RETURN_IF_ERROR(Runtime::CheckActive());
    StagingPool::Global().Trim();
    return Status::Ok();
  });
}

const char *infinicclGetErrorString(infinicclResult_t result) {
  // A C caller may pass any int (found by the fuzzer under clang's
  // -fsanitize=enum): look at the raw bits, not at the enum value.
  int code;
  std::memcpy(&code, &result, sizeof code);
  switch (code) {
    case infinicclSuccess: return "no error";
    case infinicclUnhandledError: return "unhandled error";
    case infinicclSystemError: return "system error (an MPI, OS or device runtime call failed)";
    case infinicclInternalError: return "internal error (a bug in InfiniCCL)";
    case infinicclInvalidArgument: return "invalid argument";
    case infinicclInvalidUsage: return "invalid usage";
    case infinicclRemoteError: return "remote error (another rank failed or disagreed)";
    case infinicclInProgress: return "operation in progress";
    case infinicclNotSupported: return "not supported";
    default: return "unknown result code";
  }
}

const char *infinicclGetLastError(infinicclComm_t comm) {
  if (comm == nullptr) return ThreadLastError();
  try {
    std::shared_ptr<Communicator> c;
    const Status st = Runtime::Lookup(comm, &c);
    if (st.ok()) return c->LastError();
    // Not this thread's last message, which may be about anything else.
    if (st.code() == infinicclInvalidArgument) return "unknown communicator";
    // Destroyed or aborted: say so (kept per thread, valid until the next
    // such query on this thread).
    thread_local std::string gone;
    gone = st.message();
    return gone.c_str();
  } catch (...) {
    return "unknown communicator";
  }
}

}  // extern "C"
