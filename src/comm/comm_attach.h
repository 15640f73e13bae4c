// The steps that every way of making a communicator shares, for the files
// of comm/ that make them: CommFactory (the only code that fills in a
// Communicator's private parts), the device binding, the groups and the CCL
// communicator. comm_init.cpp and comm_groups.cpp define them; comm_create.cpp
// (under MPI, by unique id, among listed ranks), comm_split.cpp and
// comm_shrink_grow.cpp use them. Not for use outside comm/.
#pragma once

#include <mpi.h>

#include <memory>
#include <vector>

#include "comm/communicator.h"
#include "core/exchange.h"
#include "core/status.h"

namespace infiniccl {

// Fills in a Communicator's private parts: the only code that does.
class CommFactory {
 public:
  static std::unique_ptr<Communicator> New() {
    return std::unique_ptr<Communicator>(new Communicator());
  }
  static MPI_Comm &mpi_comm(Communicator &c) { return c.comm_; }
  static void SetPlace(Communicator &c, int rank, int size) {
    c.rank_ = rank;
    c.size_ = size;
  }
  // Everything after the MPI communicator exists: error handler, rank,
  // size, the MPI backend, the check agreement, the node's sequence board,
  // shared memory among the ranks, the watchdog. Collective over c.comm_
  // (the board is shared memory among the node's ranks).
  static Status FinishUnderMpi(Communicator &c);
  // The same for a communicator without MPI, all of whose ranks share this
  // node (made through the bootstrap, comm_unique_id.cpp): rank and size
  // from `ex`, the check agreement, the board and shared memory over it,
  // the watchdog. Shared memory is not optional here: it is every call's
  // path (InvalidUsage with INFINICCL_SHM=0, SystemError when the segment
  // cannot be made). The binding and a CCL are the caller's. Collective
  // over `ex`.
  static Status FinishOnNode(Communicator &c, Exchange &ex);

 private:
  static Status AgreeOnSettings(Communicator &c, Exchange &ex);
  static Status AttachShm(Communicator &c);
};

// How BindDevice chooses. `keep`: the binding of the communicator this
// process comes from, kept as it is. `comm_local_rank`: the local rank is
// this rank's place among the communicator's ranks on its node, not the
// launcher's (a process MPI_Comm_spawn started is local rank 0 of its own
// job). Collective over c's MPI communicator whatever the choice.
// `current_device`: the calling thread's current device of the first active
// runtime (infinicclCommInitRank, as ncclCommInitRank).
struct BindAs {
  const Communicator::Binding *keep = nullptr;
  bool comm_local_rank = false;
  bool current_device = false;
};

// Binds this rank to a device of the first active device runtime (vendor
// runtimes before the emulated one); host-only when there is none.
Status BindDevice(Communicator &c, int ndev, const int *devlist, const BindAs &as = BindAs());

// The communicator of `members` (ranks of `base`, in this order), made by
// those ranks alone (MPI_Comm_create_group); the caller frees it.
Status CommOfMembers(MPI_Comm base, const std::vector<int> &members, MPI_Comm *sub);

// InitUnderMpi with the device chosen as `as` says.
Status InitUnderMpiAs(MPI_Comm parent, int ndev, const int *devlist, const BindAs &as,
                      std::unique_ptr<Communicator> *out);

// The first pinned staging slot of a communicator whose device buffers go
// through MPI (comm_init.cpp).
void PrimeStaging(Communicator &c);

// The shared-memory segment page-locked with the bound device's runtime.
void PageLockShm(Communicator &c);

// A communicator made under MPI: its groups, a CCL communicator over every
// rank when they all can have one (unless it has one already, split from
// its parent's), otherwise the two-level path where the groups allow it.
// Collective over c's MPI communicator (comm_groups.cpp).
Status AttachGroups(Communicator &c);

// InitUnderMpi over `sub`, each rank keeping the device it has in `parent`
// (comm_create.cpp).
Status InitBoundAs(const Communicator &parent, MPI_Comm sub,
                   std::unique_ptr<Communicator> *out);

}  // namespace infiniccl
