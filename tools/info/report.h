// What one rank of infiniccl-info found: the build, the MPI library, the
// devices this process sees, and the binding a communicator made. Collected
// through the library's internal API (the tool links the internal archive),
// so it reports what the library itself decided, not a re-derivation.
#pragma once

#include <infiniccl/infiniccl.h>

#include <string>
#include <vector>

namespace info {

struct DeviceSummary {
  std::string kind;         // "cuda", "sim", ...
  std::string description;  // the runtime's own words
  int count = 0;
  bool emulated = false;
  std::string device_wait;  // how a stream waits for the progress engine
};

struct Setting {
  std::string name;
  std::string value;          // as the library resolved it
  std::string default_value;  // as the table documents it ("256M")
  std::string doc;
  bool at_default = true;  // value equals the default as the library resolves it
};

struct RankReport {
  // Build (the same on every rank of one job, but each rank reports its own).
  std::string version;  // "0.1.0"
  int version_code = 0;
  std::vector<std::string> devices_built;  // DeviceRegistry::Built()
  std::vector<std::string> backends;       // every backend built: "mpi", "nccl", ...
  std::vector<std::string> backend_versions;  // same order: "Open MPI 4.1.4", "2.28.9"
  std::string large_count;                 // how counts above INT_MAX travel

  // MPI library.
  std::string mpi_library;           // first line of MPI_Get_library_version
  std::string mpi_flavor;            // "openmpi", "mpich" or "unknown"
  std::string mpi_version;           // e.g. "4.1.4"
  std::string mpi_standard;          // run-time MPI_Get_version, e.g. "3.1"
  std::string mpi_standard_headers;  // MPI_VERSION.MPI_SUBVERSION compiled against
  bool mpi_gpu_aware = false;        // for CUDA device memory
  std::string mpi_gpu_aware_how;

  // This process.
  int rank = 0;
  int nranks = 0;
  std::string host;
  long pid = 0;
  std::vector<DeviceSummary> devices;  // DeviceRegistry::Active()
  // Why each vendor runtime built finds no device ("cuda: ... CUDA driver
  // version is insufficient ..."), or why none is looked for.
  std::vector<std::string> no_device_reasons;
  // Device calls through MPI: "queued ..." or "synchronous: why".
  std::string async_calls;

  // The binding the communicator made.
  int local_rank = -1;
  std::string local_rank_source;
  std::string device_kind;  // "cpu" when host memory only
  int device_id = -1;
  std::string device_description;
  bool device_emulated = false;

  // Whether the communicator got a native CCL communicator (its device
  // buffers go to NCCL/MCCL) and, if not, why not, as seen from this rank.
  bool ccl_formed = false;
  std::string ccl;  // "NCCL" when formed
  std::string ccl_why_not;
  // The communicator's groups (node, device kind, ranks, each group's CCL,
  // leader; the emulated CCL says "emulated CCL") and whether it is
  // hierarchical, one line each (hier/topology.h: Describe).
  std::vector<std::string> topology;
  // Shared memory among the communicator's ranks (INFINICCL_SHM): which
  // collectives take it up to what size, or why there is none.
  std::string shm;
  // The instruction set of the host reduction kernels (INFINICCL_SIMD) and
  // the best this CPU runs: "avx512 (INFINICCL_SIMD=auto; ...)".
  std::string reduce_simd;

  std::vector<Setting> settings;      // Config::Table() order
  std::vector<std::string> warnings;  // config parse warnings
  std::vector<std::string> unknown_variables;  // INFINICCL_* names no setting has
};

// Fills `out` from the live library state; `comm` is a communicator made by
// infinicclCommInitAll. Returns false with `error` set on failure.
bool CollectReport(infinicclComm_t comm, RankReport *out, std::string *error);

// "openmpi", "mpich" or "unknown", from the library version string.
std::string MpiFlavorFromLibraryVersion(const std::string &library_version);
// The first dotted number in the first line ("4.1.4"), or "" if none.
std::string MpiVersionFromLibraryVersion(const std::string &library_version);

}  // namespace info
