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

}  // namespace infiniccl
