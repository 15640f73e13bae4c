// Device binding: which device each rank drives, whichever launcher
// started it.
//
// Local rank: INFINICCL_LOCAL_RANK if set, else the first launcher variable
// present (Open MPI, MPICH/Intel MPI, MVAPICH, Cray PMI, HPE PALS, Flux, IBM
// jsrun, HPE MPT, torchrun, then SLURM_LOCALID last because an mpirun inside
// sbatch inherits it), else the rank within MPI_COMM_TYPE_SHARED.
// Device: devlist[local_rank] when a devlist is given and has an entry for
// the local rank (upstream InfiniCCL's meaning of infinicclCommInitAll's
// ndev/devlist), else local_rank; more local ranks than devices wraps modulo
// the count with a WARN, or is an error with INFINICCL_STRICT_BINDING=1.
#pragma once

#include <mpi.h>

#include <string>

#include "core/config.h"
#include "core/status.h"

namespace infiniccl {

struct LocalRank {
  int rank = -1;
  std::string source;  // variable name, "INFINICCL_LOCAL_RANK" or "MPI_COMM_TYPE_SHARED"
};

// The launcher variables in precedence order (for docs and infiniccl-info).
const char *const *LauncherLocalRankVariables(int *count);

// From the environment only; rank -1 when nothing usable is set.
LocalRank LocalRankFromEnvironment(const Config::Lookup &lookup,
                                   const std::string &override_value);

// Environment first (unless `environment` is false), then the shared-memory
// split of `comm` (collective either way).
Status DetectLocalRank(MPI_Comm comm, LocalRank *out, bool environment = true);

struct DeviceChoice {
  int device = -1;
  bool wrapped = false;       // more local ranks than devices
  bool from_devlist = false;  // devlist[local_rank] was used
};

// Pure choice of a device ordinal; InvalidArgument when the devlist entry
// this rank uses is out of range, InvalidUsage when wrapping is needed under
// strict binding. A NULL devlist, or one shorter than the local rank, means
// the local rank's own device.
Status ChooseDevice(int local_rank, int device_count, int ndev, const int *devlist,
                    bool strict, DeviceChoice *out);

// infinicclCommInitAll was given a devlist but no device runtime has a
// device here: the entries name devices that do not exist. The call still
// succeeds with host memory only (as NCCL-style code run on a CPU node
// expects), but says so at WARN, naming the entries. devlist may be NULL.
void WarnDevlistWithoutDevices(int ndev, const int *devlist);

}  // namespace infiniccl
