// infinicclCommShrink and infinicclCommGrow: a communicator of a parent's
// surviving ranks, and one of a parent's ranks with processes it started.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "comm/comm_attach.h"
#include "comm/comm_init.h"
#include "mpi/fault_tolerance.h"
#include "mpi/mpi_error.h"
#include "mpi/mpi_thread.h"

namespace infiniccl {

namespace {

// The survivors' lists must be one list: each rank's count and a hash of
// its sorted list, gathered on the new communicator.
Status AgreeOnExcluded(Communicator &c, const std::vector<int> &exclude) {
  uint64_t mine[2] = {exclude.size(), 1469598103934665603ull};
  for (int r : exclude) mine[1] = (mine[1] ^ static_cast<uint64_t>(r)) * 1099511628211ull;
  std::vector<uint64_t> all(2 * static_cast<size_t>(c.size()));
  INFINICCL_RETURN_IF_ERROR(MpiCheck(MPI_Allgather(mine, 2, MPI_UINT64_T, all.data(), 2,
                                                   MPI_UINT64_T, c.mpi_comm()),
                                     "MPI_Allgather"));
  std::string differ;
  for (int r = 0; r < c.size(); ++r) {
    const uint64_t *theirs = &all[2 * static_cast<size_t>(r)];
    if (theirs[0] != all[0] || theirs[1] != all[1]) differ += " " + std::to_string(r);
  }
  if (differ.empty()) return Status::Ok();
  return Status(infinicclInvalidUsage,
                "the surviving ranks passed different lists of ranks to exclude: the new "
                "communicator's ranks" + differ + " differ from its rank 0 (pass the same "
                "excludeRanks on every surviving rank)");
}

}  // namespace

Status ShrinkComm(Communicator &parent, const std::vector<int> &exclude, bool abort_first,
                  std::unique_ptr<Communicator> *out) {
  std::vector<char> excluded(static_cast<size_t>(parent.size()), 0);
  for (int r : exclude) excluded[static_cast<size_t>(r)] = 1;
  std::vector<int> survivors;
  for (int r = 0; r < parent.size(); ++r) {
    if (!excluded[static_cast<size_t>(r)]) survivors.push_back(r);
  }
  std::unique_ptr<Communicator> c;
  if (abort_first && mpi::FtCompiled()) {
    // The parent is revoked: only MPI's shrink still works on it, and it
    // takes every live process, so the excluded ranks are the failed ones.
    MPI_Comm live = MPI_COMM_NULL;
    INFINICCL_RETURN_IF_ERROR(mpi::Shrink(parent.mpi_comm(), &live));
    int live_size = 0;
    MPI_Comm_size(live, &live_size);
    Status s = Status::Ok();
    if (live_size != static_cast<int>(survivors.size())) {
      s = MakeStatus(infinicclInvalidUsage,
                     "%d ranks of the parent's %d are alive, and %zu were to stay: with "
                     "INFINICCL_SHRINK_ABORT the excluded ranks are the failed ones "
                     "(infinicclCommGetFailedRanks); every live rank calls the shrink",
                     live_size, parent.size(), survivors.size());
    }
    if (s.ok()) s = InitBoundAs(parent, live, &c);
    {
      mpi::SerialLock lock;
      MPI_Comm_free(&live);  // InitUnderMpi keeps a duplicate
    }
    INFINICCL_RETURN_IF_ERROR(s);
  } else {
    INFINICCL_RETURN_IF_ERROR(InitAmong(parent, parent.mpi_comm(), survivors, &c));
  }
  INFINICCL_RETURN_IF_ERROR(AgreeOnExcluded(*c, exclude));
  *out = std::move(c);
  return Status::Ok();
}

Status GrowComm(Communicator *parent, int count, const char *command, char *const *argv,
                std::unique_ptr<Communicator> *out) {
  MPI_Comm inter = MPI_COMM_NULL, merged = MPI_COMM_NULL;
  {
    mpi::SerialLock lock;
    if (parent == nullptr) {
      INFINICCL_RETURN_IF_ERROR(MpiCheck(MPI_Comm_get_parent(&inter), "MPI_Comm_get_parent"));
      if (inter == MPI_COMM_NULL) {
        return Status(infinicclInvalidUsage,
                      "comm is NULL but no communicator started this process "
                      "(MPI_Comm_get_parent): only a process started by "
                      "infinicclCommGrow joins with a NULL comm");
      }
    } else {
      std::vector<int> errcodes(static_cast<size_t>(count), MPI_SUCCESS);
      INFINICCL_RETURN_IF_ERROR(MpiCheck(
          MPI_Comm_spawn(command, const_cast<char **>(argv), count, MPI_INFO_NULL, 0,
                         parent->mpi_comm(), &inter, errcodes.data()),
          "MPI_Comm_spawn"));
    }
    MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
    // The parent's ranks first (high = 0), the started processes after them.
    const Status merge =
        MpiCheck(MPI_Intercomm_merge(inter, parent == nullptr ? 1 : 0, &merged),
                 "MPI_Intercomm_merge");
    // The two jobs stay connected through the merged communicator only.
    MPI_Comm_disconnect(&inter);
    INFINICCL_RETURN_IF_ERROR(merge);
  }
  Status s = InitUnderMpi(merged, 0, nullptr, out);
  mpi::SerialLock lock;
  MPI_Comm_free(&merged);  // InitUnderMpi keeps a duplicate
  return s;
}

}  // namespace infiniccl
