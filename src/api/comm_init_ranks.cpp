// infinicclCommInitRanks: a communicator among some ranks of another, made by
// those ranks alone (MPI_Comm_create_group), for frameworks that create a
// subgroup only on its members (torch.distributed's new_group).
#include <infiniccl/infiniccl.h>
#include <mpi.h>

#include <memory>
#include <vector>

#include "api/api_call.h"
#include "comm/comm_init.h"
#include "comm/runtime.h"
#include "core/log.h"

using namespace infiniccl;

namespace {

Status CheckRanks(const Communicator &parent, int nranks, const int *ranks, int *me) {
  if (nranks < 1 || ranks == nullptr) {
    return MakeStatus(infinicclInvalidArgument, "nranks is %d and ranks %s: at least one rank",
                      nranks, ranks == nullptr ? "NULL" : "given");
  }
  std::vector<char> seen(parent.size(), 0);
  *me = -1;
  for (int i = 0; i < nranks; ++i) {
    const int r = ranks[i];
    if (r < 0 || r >= parent.size()) {
      return MakeStatus(infinicclInvalidArgument,
                        "ranks[%d] = %d is not a rank of the parent (size %d)", i, r,
                        parent.size());
    }
    if (seen[r]) {
      return MakeStatus(infinicclInvalidArgument, "rank %d is listed twice (ranks[%d])", r,
                        i);
    }
    seen[r] = 1;
    if (r == parent.rank()) *me = i;
  }
  if (*me < 0) {
    return MakeStatus(infinicclInvalidArgument,
                      "this rank (%d of the parent) is not among the %d listed: only the "
                      "listed ranks call infinicclCommInitRanks",
                      parent.rank(), nranks);
  }
  return Status::Ok();
}

}  // namespace

extern "C" {

infinicclResult_t infinicclCommInitRanks(infinicclComm_t parent, int nranks,
                                         const int *ranks, infinicclComm_t *newcomm) {
  return ApiCall("infinicclCommInitRanks", [&](CallContext &ctx) -> Status {
    if (newcomm == nullptr) return Status(infinicclInvalidArgument, "newcomm is NULL");
    *newcomm = nullptr;
    INFINICCL_RETURN_IF_ERROR(Runtime::LookupUsable(parent, &ctx.comm));
    if (!ctx.comm->has_mpi()) {
      return Status(infinicclNotSupported,
                    "the parent communicator has no MPI communicator (made by "
                    "infinicclCommInitRank); use infinicclCommSplit");
    }
    int me = -1;
    INFINICCL_RETURN_IF_ERROR(CheckRanks(*ctx.comm, nranks, ranks, &me));
    Communicator::CallGuard guard;
    INFINICCL_RETURN_IF_ERROR(ctx.comm->Enter("infinicclCommInitRanks", &guard));
    // An MPI call on the parent: after its queued work.
    INFINICCL_RETURN_IF_ERROR(ctx.comm->DrainQueued());
    INFINICCL_RETURN_IF_ERROR(ctx.comm->CheckDrained("MPI_Comm_create_group"));
    std::unique_ptr<Communicator> c;
    INFINICCL_RETURN_IF_ERROR(
        InitAmong(*ctx.comm, ctx.comm->mpi_comm(), std::vector<int>(ranks, ranks + nranks), &c));
    INFINICCL_INFO("CommInitRanks: rank %d of %d (rank %d of %d in the parent)", c->rank(),
                   c->size(), ctx.comm->rank(), ctx.comm->size());
    *newcomm = Runtime::Register(std::move(c));
    return Status::Ok();
  });
}

}  // extern "C"
