#include "backend/ccl/ccl_attach.h"

#include <mpi.h>

#include <cstring>

#include "backend/ccl/ccl_provider.h"
#include "mpi/mpi_error.h"
#include "core/config.h"
#include "core/log.h"
#include "route/route_decision.h"

namespace infiniccl {

namespace {

// Why this rank cannot join a CCL communicator; 0 when it can. Ordered so
// that the largest over all ranks is the reason worth reporting.
enum Eligibility { kEligible = 0, kSharedDevice = 1, kNoCcl = 2 };

// Not an error even under INFINICCL_BACKEND=ccl: the communicator is still
// made, and each call that needs the CCL then fails with the reason.
Status NoCcl(BackendChoice choice, const char *why) {
  if (choice == BackendChoice::kCcl) {
    INFINICCL_WARN(
        "INFINICCL_BACKEND=ccl but no CCL communicator: %s; device collectives "
        "on this communicator will fail",
        why);
  } else {
    INFINICCL_INFO("no CCL communicator: %s; device buffers go to MPI", why);
  }
  return Status::Ok();
}

}  // namespace

Status AttachCclUnderMpi(Communicator &c) {
  const BackendChoice choice = GlobalConfig().backend;
  if (choice == BackendChoice::kMpi) {
    INFINICCL_INFO("INFINICCL_BACKEND=mpi: no CCL communicator");
    return Status::Ok();
  }
  const Communicator::Binding &b = c.binding();
  CclProvider *ccl = b.device >= 0 ? CclForKind(b.kind) : nullptr;
  const int mine = ccl == nullptr ? kNoCcl : (b.shared ? kSharedDevice : kEligible);
  // Worst eligibility, and min/max of the device kind (equal: one kind).
  int in[3] = {mine, static_cast<int>(b.kind), -static_cast<int>(b.kind)};
  int all[3] = {0, 0, 0};
  INFINICCL_RETURN_IF_ERROR(MpiCheck(
      MPI_Allreduce(in, all, 3, MPI_INT, MPI_MAX, c.mpi_comm()), "MPI_Allreduce"));
  if (all[0] == kNoCcl) {
    return NoCcl(choice,
                 "not every rank is bound to a device with a native CCL (NCCL/MCCL)");
  }
  if (all[0] == kSharedDevice) {
    return NoCcl(choice, "ranks share a device (a CCL needs one device per rank)");
  }
  if (all[1] != -all[2])
    return NoCcl(choice, "ranks are bound to different device kinds");

  infinicclUniqueId id;
  std::memset(&id, 0, sizeof id);
  int id_ok = 1;
  Status st;
  if (c.rank() == 0) {
    st = ccl->GetUniqueId(&id);
    id_ok = st.ok() ? 1 : 0;
  }
  INFINICCL_RETURN_IF_ERROR(
      MpiCheck(MPI_Bcast(&id_ok, 1, MPI_INT, 0, c.mpi_comm()), "MPI_Bcast"));
  if (!id_ok) {
    if (choice == BackendChoice::kCcl && !st.ok()) return st;
    return NoCcl(choice, "rank 0 could not make a unique id (see its log)");
  }
  INFINICCL_RETURN_IF_ERROR(
      MpiCheck(MPI_Bcast(id.internal, sizeof id.internal, MPI_BYTE, 0, c.mpi_comm()),
               "MPI_Bcast"));

  std::unique_ptr<Backend> backend;
  st = ccl->CreateComm(c.size(), id, c.rank(), &backend);
  int ok = st.ok() ? 1 : 0, all_ok = 0;
  INFINICCL_RETURN_IF_ERROR(MpiCheck(
      MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, c.mpi_comm()), "MPI_Allreduce"));
  if (!all_ok) {
    backend.reset();
    if (!st.ok()) INFINICCL_WARN("%s", st.message().c_str());
    if (choice == BackendChoice::kCcl && !st.ok()) return st;
    return NoCcl(choice, "the CCL communicator could not be made on every rank");
  }
  INFINICCL_INFO("%s communicator over %d ranks: device buffers go to %s", ccl->Name(),
                 c.size(), ccl->Name());
  c.set_ccl_backend(std::move(backend));
  return Status::Ok();
}

Status SplitCclUnderMpi(Communicator &parent, int color, int key, Communicator *child) {
  Backend *ccl = parent.ccl_backend();
  if (ccl == nullptr) return Status::Ok();
  std::unique_ptr<Backend> backend;
  int rank = child ? child->rank() : 0, size = child ? child->size() : 0;
  const Status st = ccl->SplitNative(child ? color : -1, key, &rank, &size, &backend);
  int ok = st.ok() ? 1 : 0, all_ok = 0;
  INFINICCL_RETURN_IF_ERROR(MpiCheck(
      MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, parent.mpi_comm()), "MPI_Allreduce"));
  if (all_ok) {
    if (child != nullptr && backend != nullptr) {
      INFINICCL_INFO("%s communicator split natively: rank %d of %d", ccl->Name(),
                     child->rank(), child->size());
      child->set_ccl_backend(std::move(backend));
    }
    return Status::Ok();
  }
  backend.reset();
  if (!st.ok() && st.code() != infinicclNotSupported) {
    INFINICCL_WARN("%s; the new communicator gets a CCL communicator of its own",
                   st.message().c_str());
  }
  return child != nullptr ? AttachCclUnderMpi(*child) : Status::Ok();
}

}  // namespace infiniccl
