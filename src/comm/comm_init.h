// How communicators are made, as NCCL's init.cc (comm/comm_*.cpp): the MPI
// communicator (errors returned, not fatal), the device binding, the
// agreement on INFINICCL_CHECK, the node's sequence board, the watchdog, and
// the native CCL communicator where every rank can have one. api/ calls
// these from thin C frames; route/ only ever sees finished communicators.
#pragma once

#include <infiniccl/infiniccl.h>
#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "core/status.h"

namespace infiniccl {

// infinicclCommInitAll (parent MPI_COMM_WORLD) and infinicclCommInitMpi:
// collective over `parent`, which must be an intra-communicator. Each rank
// binds a device per ndev/devlist (upstream's convention, comm/binding.h;
// ndev 0 and devlist NULL: its local rank's device) and the ranks get a CCL
// communicator when all can have one (INFINICCL_BACKEND permitting).
Status InitUnderMpi(MPI_Comm parent, int ndev, const int *devlist,
                    std::unique_ptr<Communicator> *out);

// infinicclGetUniqueId: a bootstrap id whose listener lives in this process
// (bootstrap/rendezvous.h), as ncclGetUniqueId's.
Status NewUniqueId(infinicclUniqueId *id);

// Whether communicators made now queue device work that goes through MPI to
// their progress engine (INFINICCL_ASYNC not 0, MPI at MPI_THREAD_MULTIPLE);
// when not, `why` says why. Said once at INFO by the first communicator.
bool AsyncAllowed(std::string *why);

// infinicclCommInitRank: the ranks meet through the bootstrap; under MPI
// (infinicclInit) an MPI communicator of their world ranks, without MPI the
// first active device kind's CCL alone; either on the calling thread's
// current device, as ncclCommInitRank (comm_unique_id.cpp).
Status InitWithUniqueId(int nranks, const infinicclUniqueId &id, int rank,
                        std::unique_ptr<Communicator> *out);

// infinicclCommSplit, collective over every rank of `parent`: ranks
// ordered by key, then by rank in parent; color < 0 takes part and gets no
// communicator (*out stays null). The child keeps the parent's binding and
// gets its CCL communicator from the CCL's own split where it has one.
Status SplitComm(Communicator &parent, int color, int key,
                 std::unique_ptr<Communicator> *out);

// A communicator of `members` (ranks of `base`, in this order) made by
// those ranks alone (MPI_Comm_create_group on `base`), each bound to
// `parent`'s device: infinicclCommInitRanks, and infinicclCommShrink of
// live ranks.
Status InitAmong(const Communicator &parent, MPI_Comm base, const std::vector<int> &members,
                 std::unique_ptr<Communicator> *out);

// infinicclCommShrink, on every surviving rank of `parent`: `exclude` are
// ranks of `parent`, checked by the caller (in range, distinct, not this
// one). `abort_first`: what is in flight on `parent` was cancelled and,
// with a fault-tolerant MPI, its MPI communicator revoked, so MPI's shrink
// finds the live ranks. The survivors compare their lists on the new
// communicator (InvalidUsage on every rank when they differ).
Status ShrinkComm(Communicator &parent, const std::vector<int> &exclude, bool abort_first,
                  std::unique_ptr<Communicator> *out);

// infinicclCommGrow: `parent` null in a process MPI started for a grow (it
// joins the processes that started it); otherwise every rank of `parent`
// starts `count` processes of `command` (argv NULL-terminated or null).
// `args`: this rank's verdict on its arguments; the ranks of `parent` agree
// on them before MPI_Comm_spawn, and when any rank's are bad every rank
// returns InvalidArgument (naming them where they are bad) and nothing is
// started. Collective over the merged communicator, as InitUnderMpi.
Status GrowComm(Communicator *parent, int count, const char *command, char *const *argv,
                const Status &args, std::unique_ptr<Communicator> *out);

}  // namespace infiniccl
