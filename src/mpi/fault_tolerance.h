// MPI's fault-tolerance extension (ULFM: MPIX_Comm_revoke, _shrink, _agree
// and the failed processes of a communicator), where the MPI has it: Open
// MPI 5 (mpi-ext.h, run with `mpirun --with-ft ulfm`). Without it (Open MPI
// 4.1, MPICH: see fault_tolerance.cpp) every call here returns NotSupported
// and FtCompiled() is false. Whether the extension is on at run time shows in what the calls
// return, not here.
#pragma once

#include <mpi.h>

#include <vector>

#include "core/status.h"

namespace infiniccl::mpi {

// Whether the MPI built against has the extension's calls.
bool FtCompiled();

// MPIX_Comm_is_revoked (false without the extension).
bool IsRevoked(MPI_Comm comm);
// The error code of a call on a revoked communicator: MPIX_ERR_REVOKED
// (MPI_ERR_OTHER without the extension).
int RevokedErrorCode();

// MPIX_Comm_revoke: every process's pending and later calls on `comm`
// (shrink and agree excepted) fail with MPIX_ERR_REVOKED.
Status Revoke(MPI_Comm comm);

// The ranks of `comm` that MPI knows to have failed, ascending (the local
// view: what this process has noticed so far).
Status FailedRanks(MPI_Comm comm, std::vector<int> *ranks);

// MPIX_Comm_agree: `*flag` becomes the bitwise AND of every live process's
// value, and every live process gets the same answer, failures or not.
// `*new_failure`: a process failed that this one had not acknowledged
// (FailedRanks acknowledges what it returns), so the flag may not count it.
Status Agree(MPI_Comm comm, int *flag, bool *new_failure);

// MPIX_Comm_shrink: a new communicator of the live processes of `comm`, in
// their order there. Collective over every live process.
Status Shrink(MPI_Comm comm, MPI_Comm *out);

// Called right before MPI_Finalize. Where a process of the job has failed,
// Open MPI 5 (5.0.11 measured) can wait forever in the PMIx fence that
// starts its MPI_Finalize: a plain MPI program whose survivors shrink and
// finalize after a SIGKILL hung in 5 runs of 25. Its finalize under ULFM
// already drains failures and ends with a synchronous barrier of the
// survivors, so the fence is skipped then (Open MPI's own
// `ompi_async_mpi_finalize`), said at INFO. Returns whether it was.
bool RouteAroundFinalizeFence();

}  // namespace infiniccl::mpi
