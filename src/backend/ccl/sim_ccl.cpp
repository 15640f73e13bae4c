// The EMULATED CCL: a CCL for the emulated device (DeviceKind::kSim) whose
// collectives are MPI calls on the group's own communicator. The emulated
// device's memory is host memory, so MPI reads it as it is; each call then
// takes at least the time a ring would need on a link of
// INFINICCL_SIM_LINK_GBPS (the difference is slept), so a job on one
// machine sees a fast link inside each emulated node and the staged MPI
// path between nodes. It stands in for NVLink/MetaXLink and NCCL/MCCL in the
// tests and benchmark of the hierarchical path (docs/CCL.md); it is never a
// claim about real hardware, and it says so wherever it appears.
#include <chrono>
#include <thread>

#include "backend/ccl/ccl_provider.h"
#include "backend/mpi/mpi_backend.h"
#include "core/config.h"
#include "core/dtype.h"
#include "core/log.h"
#include "device/registry.h"
#include "mpi/fault_tolerance.h"
#include "mpi/mpi_error.h"
#include "mpi/mpi_thread.h"

namespace infiniccl {

namespace {

// Bytes each rank sends on a ring of `k` ranks for `a` (what a CCL moves
// over its links): the figure the link speed divides.
double RingBytesPerRank(const CollArgs &a, int k) {
  const double bytes = static_cast<double>(a.count) * DataTypeSize(a.dtype);
  if (k <= 1) return 0;
  switch (a.kind) {
    case CollKind::kAllReduce: return 2.0 * (k - 1) / k * bytes;
    case CollKind::kReduceScatter:
    case CollKind::kAllGather:
    case CollKind::kAllToAll:
    case CollKind::kGather:
    case CollKind::kScatter: return (k - 1) * bytes;
    case CollKind::kBroadcast:
    case CollKind::kReduce:
    case CollKind::kSend:
    case CollKind::kRecv: return bytes;
  }
  return bytes;
}

class SimCclBackend final : public Backend {
 public:
  SimCclBackend(MPI_Comm comm, int rank, int size)
      : comm_(comm), size_(size), mpi_(comm, rank, size) {}
  ~SimCclBackend() override {
    int finalized = 1;
    MPI_Finalized(&finalized);
    if (!finalized && !aborted_) {
      mpi::SerialLock lock;
      MPI_Comm_free(&comm_);
    }
  }
  const char *Name() const override { return "emulated CCL"; }
  const char *Unsupported(const CollArgs &a) const override {
    // Its Send/Recv would block inside a group (a CCL defers them to the
    // group's end); MPI's grouped Send/Recv already do that.
    if (a.kind == CollKind::kSend || a.kind == CollKind::kRecv)
      return "the emulated CCL leaves Send/Recv to MPI";
    return nullptr;
  }
  Status Run(const CollArgs &a) override {
    // Stream order: what the caller queued before (copies) first, as a CCL
    // kernel would wait for it; then the call runs to completion.
    if (DeviceRuntime *sim = DeviceRegistry::Get(DeviceKind::kSim)) {
      INFINICCL_RETURN_IF_ERROR(sim->StreamSynchronize(a.stream));
    }
    const auto start = std::chrono::steady_clock::now();
    CollArgs b = a;
    b.device = nullptr;  // host memory underneath: the backend may touch it
    INFINICCL_RETURN_IF_ERROR(mpi_.Run(b));
    const double gbps = GlobalConfig().sim_link_gbps;
    if (gbps > 0) {
      const double seconds = RingBytesPerRank(a, size_) / (gbps * 1e9);
      std::this_thread::sleep_until(
          start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                      std::chrono::duration<double>(seconds)));
    }
    return Status::Ok();
  }
  void Abort() override { aborted_ = true; }
  // Its collectives are MPI calls on comm_: revoking it ends them.
  void Revoke() override {
    if (mpi::FtCompiled()) (void)mpi::Revoke(comm_);
  }

 private:
  MPI_Comm comm_;
  int size_;
  MpiBackend mpi_;
  bool aborted_ = false;
};

class SimCclProviderImpl final : public CclProvider {
 public:
  const char *Name() const override { return "emulated CCL"; }
  DeviceKind kind() const override { return DeviceKind::kSim; }
  std::string Version() const override { return "emulated (MPI on emulated device memory)"; }
  Status GetUniqueId(infinicclUniqueId *) override {
    return Status(infinicclNotSupported, "the emulated CCL is made over MPI, not a unique id");
  }
  Status CreateComm(int, const infinicclUniqueId &, int, std::unique_ptr<Backend> *) override {
    return Status(infinicclNotSupported, "the emulated CCL is made over MPI, not a unique id");
  }
  Status GroupStart() override { return Status::Ok(); }
  Status GroupEnd() override { return Status::Ok(); }
  bool used() const override { return used_; }
  bool MadeOverMpi() const override { return true; }
  bool SpansNodes() const override { return false; }
  Status CreateCommOverMpi(MPI_Comm comm, std::unique_ptr<Backend> *out) override {
    if (GlobalConfig().sim_ccl_fail) {
      return Status(infinicclSystemError,
                    "emulated CCL communicator not made (INFINICCL_SIM_CCL_FAIL=1)");
    }
    MPI_Comm dup = MPI_COMM_NULL;
    int rank = 0, size = 0;
    {
      mpi::SerialLock lock;
      INFINICCL_RETURN_IF_ERROR(MpiCheck(MPI_Comm_dup(comm, &dup), "MPI_Comm_dup"));
      MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
      MPI_Comm_rank(dup, &rank);
      MPI_Comm_size(dup, &size);
      MPI_Comm_set_name(dup, "infiniccl emulated CCL");
    }
    used_ = true;
    *out = std::make_unique<SimCclBackend>(dup, rank, size);
    return Status::Ok();
  }

 private:
  bool used_ = false;
};

}  // namespace

CclProvider *SimCclProvider() {
  static SimCclProviderImpl provider;
  return &provider;
}

}  // namespace infiniccl
