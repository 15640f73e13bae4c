// MPI return codes -> Status, with MPI_Error_string's text.
#pragma once

#include <mpi.h>

#include "core/status.h"

namespace infiniccl {

Status MpiError(int rc, const char *what);

// The common case inline: success costs one compare.
inline Status MpiCheck(int rc, const char *what) {
  if (rc == MPI_SUCCESS) return Status::Ok();
  return MpiError(rc, what);
}

// A call on `comm` that failed after infinicclCommRevoke revoked it in this
// process (mpi::RevokeLocally): RemoteError saying so, in place of the MPI
// error its ended wait gave.
Status RevokedStatus(const char *during);
// RevokedStatus, or for a communicator infinicclCommAbort marked
// (mpi::AbortedLocally) InvalidUsage "aborted".
Status RevokedStatus(MPI_Comm comm, const char *during);

}  // namespace infiniccl
