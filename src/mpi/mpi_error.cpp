#include "mpi/mpi_error.h"

#include "mpi/mpi_thread.h"

// Open MPI keeps the fault-tolerance extension's error classes there.
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif

namespace infiniccl {

Status MpiError(int rc, const char *what) {
  char text[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) text[0] = '\0';
  int cls = MPI_ERR_OTHER;
  MPI_Error_class(rc, &cls);
  // Errors that mean another rank disagreed or went away are RemoteError;
  // the rest are failures of this process's MPI library.
  infinicclResult_t code = infinicclSystemError;
  if (cls == MPI_ERR_TRUNCATE
#ifdef MPIX_ERR_PROC_FAILED
      || cls == MPIX_ERR_PROC_FAILED
#endif
#ifdef MPIX_ERR_REVOKED
      || cls == MPIX_ERR_REVOKED
#endif
  ) {
    code = infinicclRemoteError;
  }
  return MakeStatus(code, "%s failed: %s (MPI error class %d)", what, text, cls);
}

Status RevokedStatus(const char *during) {
  return MakeStatus(infinicclRemoteError,
                    "the communicator was revoked (infinicclCommRevoke) while this rank was "
                    "in %s; shrink it or destroy it",
                    during);
}

Status RevokedStatus(MPI_Comm comm, const char *during) {
  if (mpi::AbortedLocally(comm)) {
    return MakeStatus(infinicclInvalidUsage,
                      "the communicator was aborted (infinicclCommAbort) while this rank was "
                      "in %s",
                      during);
  }
  return RevokedStatus(during);
}

}  // namespace infiniccl
