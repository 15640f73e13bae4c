#include "mpi/fault_tolerance.h"

#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif

#include <algorithm>

#include "core/log.h"
#include "mpi/mpi_error.h"
#include "mpi/mpi_thread.h"

// Open MPI 5 defines MPIX_ERR_PROC_FAILED with the calls; Open MPI 4.1's
// mpi-ext.h has neither. MPICH declares them too, but Debian's MPICH 4.0
// (the ch4 device) fails an assertion inside MPIX_Comm_revoke and ends the
// process, so only Open MPI's are used.
#if defined(OPEN_MPI) && OPEN_MPI && defined(MPIX_ERR_PROC_FAILED)
#define INFINICCL_ULFM 1
#else
#define INFINICCL_ULFM 0
#endif

namespace infiniccl::mpi {

namespace {

[[maybe_unused]] Status Missing(const char *what) {
  return MakeStatus(infinicclNotSupported,
                    "%s: the MPI this library was built against has no fault-tolerance "
                    "extension this library uses (ULFM: Open MPI 5, run with `mpirun "
                    "--with-ft ulfm`)",
                    what);
}

}  // namespace

bool FtCompiled() { return INFINICCL_ULFM != 0; }

#if INFINICCL_ULFM

// Open MPI's switch for the fence at the start of MPI_Finalize; weak, so a
// build whose Open MPI lacks it links and leaves the fence alone.
extern "C" __attribute__((weak)) bool ompi_async_mpi_finalize;

bool RouteAroundFinalizeFence() {
  if (&ompi_async_mpi_finalize == nullptr) return false;
  // Every survivor takes the same branch (a survivor in the fence waits for
  // one that skipped it): whether any of them knows a failure is agreed.
  std::vector<int> failed;
  const bool known = FailedRanks(MPI_COMM_WORLD, &failed).ok() && !failed.empty();
  int none = known ? 0 : 1;
  bool new_failure = false;
  if (!Agree(MPI_COMM_WORLD, &none, &new_failure).ok()) return false;
  if (none == 1 && !new_failure) return false;
  ompi_async_mpi_finalize = true;
  INFINICCL_INFO("infinicclFinalize: a process of the job failed%s; MPI_Finalize skips Open "
                 "MPI's PMIx fence, which can wait forever for a failed process (Open MPI "
                 "5.0.11), and relies on its fault-tolerant barrier of the survivors",
                 known ? "" : " (known to another rank)");
  return true;
}

bool IsRevoked(MPI_Comm comm) {
  int flag = 0;
  return MPIX_Comm_is_revoked(comm, &flag) == MPI_SUCCESS && flag != 0;
}
int RevokedErrorCode() { return MPIX_ERR_REVOKED; }

Status Revoke(MPI_Comm comm) {
  SerialLock lock;
  return MpiCheck(MPIX_Comm_revoke(comm), "MPIX_Comm_revoke");
}

Status FailedRanks(MPI_Comm comm, std::vector<int> *ranks) {
  ranks->clear();
  MPI_Group failed = MPI_GROUP_NULL, all = MPI_GROUP_NULL;
  {
    SerialLock lock;
#if defined(OMPI_HAVE_MPIX_COMM_GET_FAILED)
    INFINICCL_RETURN_IF_ERROR(MpiCheck(MPIX_Comm_get_failed(comm, &failed),
                                       "MPIX_Comm_get_failed"));
    // Acknowledged, so that MPIX_Comm_agree reports only failures newer
    // than these.
    int known = 0, acked = 0;
    MPI_Group_size(failed, &known);
    INFINICCL_RETURN_IF_ERROR(
        MpiCheck(MPIX_Comm_ack_failed(comm, known, &acked), "MPIX_Comm_ack_failed"));
#else
    INFINICCL_RETURN_IF_ERROR(MpiCheck(MPIX_Comm_failure_ack(comm), "MPIX_Comm_failure_ack"));
    INFINICCL_RETURN_IF_ERROR(MpiCheck(MPIX_Comm_failure_get_acked(comm, &failed),
                                       "MPIX_Comm_failure_get_acked"));
#endif
    MPI_Comm_group(comm, &all);
  }
  int n = 0;
  MPI_Group_size(failed, &n);
  std::vector<int> in(static_cast<size_t>(n)), out(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) in[static_cast<size_t>(i)] = i;
  if (n > 0) MPI_Group_translate_ranks(failed, n, in.data(), all, out.data());
  MPI_Group_free(&failed);
  MPI_Group_free(&all);
  for (int r : out) {
    if (r != MPI_UNDEFINED) ranks->push_back(r);
  }
  std::sort(ranks->begin(), ranks->end());
  return Status::Ok();
}

Status Agree(MPI_Comm comm, int *flag, bool *new_failure) {
  SerialLock lock;
  const int rc = MPIX_Comm_agree(comm, flag);
  // A failure not yet acknowledged is reported, and the flag is still the
  // one every live process agreed on.
  int cls = MPI_SUCCESS;
  if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
  *new_failure = cls == MPIX_ERR_PROC_FAILED;
  if (*new_failure) return Status::Ok();
  return MpiCheck(rc, "MPIX_Comm_agree");
}

Status Shrink(MPI_Comm comm, MPI_Comm *out) {
  SerialLock lock;
  INFINICCL_RETURN_IF_ERROR(MpiCheck(MPIX_Comm_shrink(comm, out), "MPIX_Comm_shrink"));
  MPI_Comm_set_errhandler(*out, MPI_ERRORS_RETURN);
  return Status::Ok();
}

#else

bool IsRevoked(MPI_Comm) { return false; }
int RevokedErrorCode() { return MPI_ERR_OTHER; }
Status Revoke(MPI_Comm) { return Missing("MPIX_Comm_revoke"); }
Status FailedRanks(MPI_Comm, std::vector<int> *ranks) {
  ranks->clear();
  return Missing("MPIX_Comm_get_failed");
}
Status Agree(MPI_Comm, int *, bool *new_failure) {
  *new_failure = false;
  return Missing("MPIX_Comm_agree");
}
Status Shrink(MPI_Comm, MPI_Comm *) { return Missing("MPIX_Comm_shrink"); }
bool RouteAroundFinalizeFence() { return false; }

#endif

}  // namespace infiniccl::mpi
