// Communicators born under MPI (infinicclCommInitAll, infinicclCommInitMpi)
// and among listed ranks of an MPI communicator (infinicclCommInitRanks, a
// shrink, a unique id's ranks: comm_unique_id.cpp).
#include <string>
#include <utility>
#include <vector>

#include "comm/comm_attach.h"
#include "comm/comm_init.h"
#include "mpi/mpi_error.h"
#include "mpi/mpi_tags.h"
#include "mpi/mpi_thread.h"

namespace infiniccl {

Status InitUnderMpi(MPI_Comm parent, int ndev, const int *devlist,
                    std::unique_ptr<Communicator> *out) {
  return InitUnderMpiAs(parent, ndev, devlist, BindAs(), out);
}

Status InitUnderMpiAs(MPI_Comm parent, int ndev, const int *devlist, const BindAs &as,
                      std::unique_ptr<Communicator> *out) {
  std::unique_ptr<Communicator> c = CommFactory::New();
  {
    mpi::SerialLock lock;
    int inter = 0;
    INFINICCL_RETURN_IF_ERROR(
        MpiCheck(MPI_Comm_test_inter(parent, &inter), "MPI_Comm_test_inter"));
    if (inter) {
      return Status(infinicclInvalidArgument,
                    "the MPI communicator is an inter-communicator; collectives need an "
                    "intra-communicator");
    }
    INFINICCL_RETURN_IF_ERROR(
        MpiCheck(MPI_Comm_dup(parent, &CommFactory::mpi_comm(*c)), "MPI_Comm_dup"));
  }
  INFINICCL_RETURN_IF_ERROR(CommFactory::FinishUnderMpi(*c));
  INFINICCL_RETURN_IF_ERROR(BindDevice(*c, ndev, devlist, as));
  PageLockShm(*c);
  INFINICCL_RETURN_IF_ERROR(AttachGroups(*c));
  PrimeStaging(*c);
  *out = std::move(c);
  return Status::Ok();
}

Status InitBoundAs(const Communicator &parent, MPI_Comm sub,
                   std::unique_ptr<Communicator> *out) {
  BindAs as;
  as.keep = &parent.binding();
  return InitUnderMpiAs(sub, 0, nullptr, as, out);
}

Status CommOfMembers(MPI_Comm base, const std::vector<int> &members, MPI_Comm *sub) {
  mpi::SerialLock lock;
  MPI_Group all = MPI_GROUP_NULL, some = MPI_GROUP_NULL;
  Status s = MpiCheck(MPI_Comm_group(base, &all), "MPI_Comm_group");
  if (s.ok()) {
    s = MpiCheck(MPI_Group_incl(all, static_cast<int>(members.size()), members.data(), &some),
                 "MPI_Group_incl");
  }
  if (s.ok()) {
    // Creations from one process are sequential, and no Send/Recv tag
    // equals this one (mpi/mpi_tags.h).
    s = MpiCheck(MPI_Comm_create_group(base, some, kMpiCreateGroupTag, sub),
                 "MPI_Comm_create_group");
  }
  if (some != MPI_GROUP_NULL) MPI_Group_free(&some);
  if (all != MPI_GROUP_NULL) MPI_Group_free(&all);
  return s;
}

Status InitAmong(const Communicator &parent, MPI_Comm base, const std::vector<int> &members,
                 std::unique_ptr<Communicator> *out) {
  MPI_Comm sub = MPI_COMM_NULL;
  INFINICCL_RETURN_IF_ERROR(CommOfMembers(base, members, &sub));
  Status s = InitBoundAs(parent, sub, out);
  mpi::SerialLock lock;
  MPI_Comm_free(&sub);  // InitUnderMpi keeps a duplicate
  return s;
}

}  // namespace infiniccl
