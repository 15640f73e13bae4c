#include "comm/binding.h"

#include <cstdlib>
#include <string>

#include "mpi/mpi_error.h"
#include "core/log.h"

namespace infiniccl {

namespace {

const char *const kLauncherVars[] = {
    "OMPI_COMM_WORLD_LOCAL_RANK",  // Open MPI
    "MPI_LOCALRANKID",             // MPICH Hydra, Intel MPI
    "MV2_COMM_WORLD_LOCAL_RANK",   // MVAPICH
    "PMI_LOCAL_RANK",              // Cray PMI
    "PALS_LOCAL_RANKID",           // HPE PALS
    "FLUX_TASK_LOCAL_ID",          // Flux
    "JSM_NAMESPACE_LOCAL_RANK",    // IBM jsrun
    "MPT_LRANK",                   // HPE MPT
    "LOCAL_RANK",                  // torchrun
    "SLURM_LOCALID",               // last: inherited by an mpirun inside sbatch
};

bool ParseRank(const char *v, int *out) {
  if (v == nullptr || *v == '\0') return false;
  char *end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (*end != '\0' || n < 0 || n > (1 << 20)) return false;
  *out = static_cast<int>(n);
  return true;
}

}  // namespace

const char *const *LauncherLocalRankVariables(int *count) {
  *count = static_cast<int>(sizeof(kLauncherVars) / sizeof(kLauncherVars[0]));
  return kLauncherVars;
}

LocalRank LocalRankFromEnvironment(const Config::Lookup &lookup,
                                   const std::string &override_value) {
  LocalRank r;
  if (ParseRank(override_value.c_str(), &r.rank)) {
    r.source = "INFINICCL_LOCAL_RANK";
    return r;
  }
  for (const char *var : kLauncherVars) {
    if (ParseRank(lookup(var), &r.rank)) {
      r.source = var;
      return r;
    }
  }
  r.rank = -1;
  return r;
}

Status DetectLocalRank(MPI_Comm comm, LocalRank *out, bool environment) {
  if (environment) {
    *out = LocalRankFromEnvironment([](const char *n) { return std::getenv(n); },
                                    GlobalConfig().local_rank);
  } else {
    *out = LocalRank();
    out->rank = -1;
  }
  // Every rank takes part in the split, even those the environment already
  // answered for: it is collective, and ranks may disagree on the env.
  MPI_Comm shared = MPI_COMM_NULL;
  int world_rank = 0, shared_rank = 0;
  MPI_Comm_rank(comm, &world_rank);
  INFINICCL_RETURN_IF_ERROR(MpiCheck(
      MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, world_rank, MPI_INFO_NULL, &shared),
      "MPI_Comm_split_type"));
  MPI_Comm_rank(shared, &shared_rank);
  MPI_Comm_free(&shared);
  if (out->rank < 0) {
    out->rank = shared_rank;
    out->source = "MPI_COMM_TYPE_SHARED";
  }
  return Status::Ok();
}

Status ChooseDevice(int local_rank, int device_count, int ndev, const int *devlist,
                    bool strict, DeviceChoice *out) {
  *out = DeviceChoice{};
  if (device_count <= 0) {
    return Status(infinicclInvalidUsage, "no devices to bind to");
  }
  // Upstream's meaning: devlist[local_rank] when the list reaches this rank;
  // otherwise (no list, as upstream's examples call it with ndev = the world
  // size, or a shorter list) the local rank's own device. Only the entry this
  // rank uses must exist here: the others may name devices of other nodes.
  if (devlist != nullptr && local_rank < ndev) {
    const int d = devlist[local_rank];
    if (d < 0 || d >= device_count) {
      return MakeStatus(infinicclInvalidArgument,
                        "devlist[%d] = %d is out of range (%d devices on this node)",
                        local_rank, d, device_count);
    }
    out->device = d;
    out->from_devlist = true;
    return Status::Ok();
  }
  if (local_rank >= device_count) {
    if (strict) {
      return MakeStatus(infinicclInvalidUsage,
                        "local rank %d but only %d devices (INFINICCL_STRICT_BINDING=1)",
                        local_rank, device_count);
    }
    out->wrapped = true;
  }
  out->device = local_rank % device_count;
  return Status::Ok();
}

void WarnDevlistWithoutDevices(int ndev, const int *devlist) {
  // No list (upstream's CommInitAll(&comm, size, NULL)) names no device.
  if (ndev <= 0 || devlist == nullptr) return;
  std::string named;
  for (int i = 0; i < ndev && i < 8; ++i) named += (i ? "," : "") + std::to_string(devlist[i]);
  if (ndev > 8) named += ",...";
  INFINICCL_WARN(
      "devlist names %d device(s)%s%s%s but no device runtime has a device on "
      "this host: none of them exists here; using host memory only",
      ndev, named.empty() ? "" : " (", named.c_str(), named.empty() ? "" : ")");
}

}  // namespace infiniccl
