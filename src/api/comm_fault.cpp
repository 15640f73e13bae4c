// infinicclCommRevoke, infinicclCommGetFailedRanks, infinicclCommShrink and
// infinicclCommGrow: going on after a rank failed, and taking new processes
// in (NCCL's ncclCommRevoke, ncclCommShrink and ncclCommGrow).
// With an MPI that tolerates failures (ULFM) the MPI communicator is revoked
// and shrunk as well; without one they act on this process and its node.
#include <infiniccl/infiniccl.h>
#include <mpi.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "api/api_call.h"
#include "comm/comm_init.h"
#include "comm/runtime.h"
#include "core/log.h"
#include "mpi/fault_tolerance.h"
#include "mpi/mpi_thread.h"

using namespace infiniccl;

namespace {

// Refuses later calls and ends what is in flight on this rank: queued device
// work is dropped (its streams released), waits in the node's shared memory
// return; with a fault-tolerant MPI the MPI communicator is revoked, which
// ends the other ranks' calls on it and this rank's call inside MPI.
void RevokeHere(Communicator &c) {
  c.MarkRevoked();
  // The library's own MPI waits on it end too (any MPI: mpi_thread.h).
  if (c.has_mpi()) mpi::RevokeLocally(c.mpi_comm());
  if (ProgressEngine *engine = c.engine_if_started()) engine->Cancel(/*revoked=*/true);
  if (ShmBackend *shm = c.shm_backend()) shm->Revoke();
  if (Topology *t = c.topology()) t->Revoke();
  if (Backend *ccl = c.ccl_backend()) ccl->Revoke();
  if (c.has_mpi() && mpi::FtCompiled()) {
    const Status st = mpi::Revoke(c.mpi_comm());
    if (!st.ok()) INFINICCL_INFO("CommRevoke: %s", st.message().c_str());
  }
}

// The ranks of this node whose process is gone, as the communicator's
// shared memory (and its two-level group's) sees them.
void GoneOnNode(Communicator &c, std::vector<int> *gone) {
  if (ShmBackend *shm = c.shm_backend()) shm->GoneRanks(gone);
  if (Topology *t = c.topology(); t != nullptr && t->group_shm) t->group_shm->GoneRanks(gone);
}

// The failed ranks this rank knows of: MPI's (a fault-tolerant MPI) and
// shared memory's (GoneOnNode). With a fault-tolerant MPI, the union of
// every survivor's, agreed by MPIX_Comm_agree (a bitwise AND of "alive"
// bits, 32 ranks a call), so every survivor returns the same list. A
// failure that MPI reports during the agreement starts it again (every
// process gets the same report), a bounded number of times. Without one,
// this rank's own view.
Status KnownFailed(Communicator &c, std::vector<int> *failed) {
  failed->clear();
  std::vector<int> on_node;
  GoneOnNode(c, &on_node);
  if (!c.has_mpi() || !mpi::FtCompiled()) {
    std::vector<char> dead(static_cast<size_t>(c.size()), 0);
    for (int r : on_node) {
      if (r >= 0 && r < c.size()) dead[static_cast<size_t>(r)] = 1;
    }
    for (int r = 0; r < c.size(); ++r) {
      if (dead[static_cast<size_t>(r)]) failed->push_back(r);
    }
    return Status::Ok();
  }
  constexpr int kRounds = 16;
  for (int round = 0;; ++round) {
    INFINICCL_RETURN_IF_ERROR(mpi::FailedRanks(c.mpi_comm(), failed));
    std::vector<char> dead(static_cast<size_t>(c.size()), 0);
    for (int r : *failed) dead[static_cast<size_t>(r)] = 1;
    for (int r : on_node) {
      if (r >= 0 && r < c.size()) dead[static_cast<size_t>(r)] = 1;
    }
    bool again = false;
    for (int base = 0; base < c.size(); base += 32) {
      unsigned alive = ~0u;
      for (int r = base; r < std::min(base + 32, c.size()); ++r) {
        if (dead[static_cast<size_t>(r)]) alive &= ~(1u << (r - base));
      }
      int flag = static_cast<int>(alive);
      bool new_failure = false;
      INFINICCL_RETURN_IF_ERROR(mpi::Agree(c.mpi_comm(), &flag, &new_failure));
      again = again || new_failure;
      const unsigned agreed = static_cast<unsigned>(flag);
      for (int r = base; r < std::min(base + 32, c.size()); ++r) {
        if (!(agreed & (1u << (r - base)))) dead[static_cast<size_t>(r)] = 1;
      }
    }
    failed->clear();
    for (int r = 0; r < c.size(); ++r) {
      if (dead[static_cast<size_t>(r)]) failed->push_back(r);
    }
    if (!again || round + 1 == kRounds) return Status::Ok();
  }
}

Status CheckExcluded(const Communicator &c, const int *ranks, int count,
                     std::vector<int> *out) {
  if (count < 0 || (count > 0 && ranks == nullptr)) {
    return MakeStatus(infinicclInvalidArgument, "excludeRanks is %s and excludeCount %d",
                      ranks == nullptr ? "NULL" : "given", count);
  }
  std::vector<char> seen(static_cast<size_t>(c.size()), 0);
  for (int i = 0; i < count; ++i) {
    const int r = ranks[i];
    if (r < 0 || r >= c.size()) {
      return MakeStatus(infinicclInvalidArgument,
                        "excludeRanks[%d] = %d is not a rank of the communicator (size %d)", i,
                        r, c.size());
    }
    if (seen[static_cast<size_t>(r)]) {
      return MakeStatus(infinicclInvalidArgument, "rank %d is listed twice (excludeRanks[%d])",
                        r, i);
    }
    if (r == c.rank()) {
      return MakeStatus(infinicclInvalidArgument,
                        "excludeRanks[%d] is this rank (%d): an excluded rank does not call "
                        "infinicclCommShrink",
                        i, r);
    }
    seen[static_cast<size_t>(r)] = 1;
    out->push_back(r);
  }
  std::sort(out->begin(), out->end());
  return Status::Ok();
}

}  // namespace

extern "C" {

infinicclResult_t infinicclCommRevoke(infinicclComm_t comm, int flags) {
  return ApiCall("infinicclCommRevoke", [&](CallContext &ctx) -> Status {
    INFINICCL_RETURN_IF_ERROR(Runtime::LookupUsable(comm, &ctx.comm));
    if (flags != 0) {
      return MakeStatus(infinicclInvalidArgument, "flags is %d: no flags are defined (pass 0)",
                        flags);
    }
    // No Enter(): meant for another thread while a call on `comm` is blocked.
    RevokeHere(*ctx.comm);
    INFINICCL_INFO("CommRevoke: comm %p revoked on rank %d of %d%s", comm, ctx.comm->rank(),
                   ctx.comm->size(),
                   mpi::FtCompiled() ? " (and its MPI communicator)"
                                     : " (this MPI has no fault-tolerance extension: on "
                                       "this rank and in the node's shared memory only)");
    return Status::Ok();
  });
}

infinicclResult_t infinicclCommGetFailedRanks(infinicclComm_t comm, int *ranks, int *count) {
  return ApiCall("infinicclCommGetFailedRanks", [&](CallContext &ctx) -> Status {
    INFINICCL_RETURN_IF_ERROR(Runtime::LookupUsable(comm, &ctx.comm));
    if (count == nullptr) return Status(infinicclInvalidArgument, "count is NULL");
    if (*count < 0 || (*count > 0 && ranks == nullptr)) {
      return MakeStatus(infinicclInvalidArgument, "ranks is %s and *count %d",
                        ranks == nullptr ? "NULL" : "given", *count);
    }
    std::vector<int> failed;
    INFINICCL_RETURN_IF_ERROR(KnownFailed(*ctx.comm, &failed));
    const size_t n = std::min(failed.size(), static_cast<size_t>(*count));
    std::copy(failed.begin(), failed.begin() + static_cast<long>(n), ranks);
    *count = static_cast<int>(failed.size());
    return Status::Ok();
  });
}

infinicclResult_t infinicclCommShrink(infinicclComm_t comm, const int *excludeRanks,
                                      int excludeCount, infinicclComm_t *newcomm, int flags) {
  return ApiCall("infinicclCommShrink", [&](CallContext &ctx) -> Status {
    if (newcomm == nullptr) return Status(infinicclInvalidArgument, "newcomm is NULL");
    *newcomm = nullptr;
    INFINICCL_RETURN_IF_ERROR(Runtime::LookupUsable(comm, &ctx.comm));
    Communicator &c = *ctx.comm;
    if (flags != INFINICCL_SHRINK_DEFAULT && flags != INFINICCL_SHRINK_ABORT) {
      return MakeStatus(infinicclInvalidArgument,
                        "flags is %d: INFINICCL_SHRINK_DEFAULT or INFINICCL_SHRINK_ABORT", flags);
    }
    if (!c.has_mpi()) {
      return Status(infinicclNotSupported,
                    "the communicator has no MPI communicator (made by "
                    "infinicclCommInitRank); shrink needs one");
    }
    std::vector<int> exclude;
    INFINICCL_RETURN_IF_ERROR(CheckExcluded(c, excludeRanks, excludeCount, &exclude));
    // A revoked MPI communicator takes only MPI's shrink: the aborting form.
    const bool abort_first = flags == INFINICCL_SHRINK_ABORT || c.revoked();
    std::unique_ptr<Communicator> child;
    if (abort_first) {
      RevokeHere(c);
      INFINICCL_RETURN_IF_ERROR(ShrinkComm(c, exclude, true, &child));
    } else {
      Communicator::CallGuard guard;
      INFINICCL_RETURN_IF_ERROR(c.Enter("infinicclCommShrink", &guard));
      // An MPI call on the parent: after its queued work.
      INFINICCL_RETURN_IF_ERROR(c.DrainQueued());
      INFINICCL_RETURN_IF_ERROR(c.CheckDrained("MPI_Comm_create_group"));
      INFINICCL_RETURN_IF_ERROR(ShrinkComm(c, exclude, false, &child));
    }
    INFINICCL_INFO("CommShrink: rank %d of %d (rank %d of %d in the parent, %d excluded%s)",
                   child->rank(), child->size(), c.rank(), c.size(), excludeCount,
                   abort_first ? ", parent aborted" : "");
    *newcomm = Runtime::Register(std::move(child));
    return Status::Ok();
  });
}

infinicclResult_t infinicclCommGrow(infinicclComm_t comm, int newRanks, const char *command,
                                    char *const *argv, infinicclComm_t *newcomm) {
  return ApiCall("infinicclCommGrow", [&](CallContext &ctx) -> Status {
    if (newcomm == nullptr) return Status(infinicclInvalidArgument, "newcomm is NULL");
    *newcomm = nullptr;
    std::unique_ptr<Communicator> grown;
    if (comm == nullptr) {
      INFINICCL_RETURN_IF_ERROR(Runtime::CheckActive());
      if (newRanks != 0) {
        return MakeStatus(infinicclInvalidArgument,
                          "newRanks is %d with a NULL comm (a started process joining "
                          "passes 0)",
                          newRanks);
      }
      INFINICCL_RETURN_IF_ERROR(GrowComm(nullptr, 0, nullptr, nullptr, Status::Ok(), &grown));
    } else {
      INFINICCL_RETURN_IF_ERROR(Runtime::LookupUsable(comm, &ctx.comm));
      Communicator &c = *ctx.comm;
      if (!c.has_mpi()) {
        return Status(infinicclNotSupported,
                      "the communicator has no MPI communicator (made by "
                      "infinicclCommInitRank); grow needs one");
      }
      // Checked by every rank together (GrowComm): a rank that returned
      // alone would leave the others waiting in MPI_Comm_spawn.
      Status args = Status::Ok();
      if (newRanks < 1) {
        args = MakeStatus(infinicclInvalidArgument, "newRanks is %d: at least 1", newRanks);
      } else if (c.rank() == 0 && (command == nullptr || command[0] == '\0')) {
        args = Status(infinicclInvalidArgument, "command is NULL or empty on rank 0");
      }
      Communicator::CallGuard guard;
      INFINICCL_RETURN_IF_ERROR(c.Enter("infinicclCommGrow", &guard));
      // An MPI call on the parent: after its queued work.
      INFINICCL_RETURN_IF_ERROR(c.DrainQueued());
      INFINICCL_RETURN_IF_ERROR(c.CheckDrained("MPI_Comm_spawn"));
      INFINICCL_RETURN_IF_ERROR(GrowComm(&c, newRanks, command, argv, args, &grown));
    }
    INFINICCL_INFO("CommGrow: rank %d of %d%s", grown->rank(), grown->size(),
                   comm == nullptr ? " (a started process)" : "");
    *newcomm = Runtime::Register(std::move(grown));
    return Status::Ok();
  });
}

}  // extern "C"
