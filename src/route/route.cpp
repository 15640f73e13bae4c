#include "route/route.h"

#include <atomic>

#include "core/dtype.h"
#include "core/log.h"
#include "device/registry.h"
#include "backend/mpi/gpu_aware.h"
#include "core/config.h"
#include "staging/pipeline.h"
#include "staging/staging_pool.h"
#include "core/group.h"
#include "route/group_p2p.h"

namespace infiniccl {

namespace {

enum class Path { kHostMpi = 0, kDirectMpi = 1, kStagedMpi = 2 };
constexpr int kNumPaths = 3;

const char *PathName(Path p) {
  switch (p) {
    case Path::kHostMpi: return "host buffers -> MPI (zero copy)";
    case Path::kDirectMpi: return "device buffers -> GPU-aware MPI (direct, no staging)";
    case Path::kStagedMpi: return "device buffers -> pooled host staging -> MPI";
  }
  return "?";
}

// INFINICCL_MPI_DEVICE_DIRECT: 1 forces, 0 forbids, auto asks the MPI once
// per device kind.
bool DirectAllowed(DeviceKind kind) {
  const std::string &mode = GlobalConfig().mpi_device_direct;
  if (mode == "1") return true;
  if (mode == "0") return false;
  static std::atomic<int> answers[kNumDeviceKinds];  // 0 unknown, 1 no, 2 yes
  std::atomic<int> &answer = answers[static_cast<int>(kind)];
  if (answer.load() == 0) {
    const GpuAwareness g = QueryMpiGpuAware(kind);
    INFINICCL_INFO("MPI GPU-aware for %s memory: %s (%s)", DeviceKindName(kind),
                   g.supported ? "yes" : "no", g.how);
    answer.store(g.supported ? 2 : 1);
  }
  return answer.load() == 2;
}

void Announce(Communicator &comm, const CollArgs &a, Path path, const char *device) {
  const int bit = static_cast<int>(a.kind) * kNumPaths + static_cast<int>(path);
  if (LogEnabled(LogLevel::kInfo) && comm.FirstUse(bit)) {
    INFINICCL_INFO("%s on comm of %d ranks: %s%s%s (logged once per kind and path; "
                   "TRACE logs every call)",
                   CollKindName(a.kind), comm.size(), PathName(path),
                   *device ? ", device " : "", device);
  }
  INFINICCL_TRACE("%s count=%zu dtype=%s op=%s root/peer=%d%s: %s %s", CollKindName(a.kind),
                  a.count, DataTypeName(a.dtype), RedOpName(a.op), a.root,
                  a.in_place ? " in-place" : "", PathName(path), device);
}

}  // namespace

Status RouteCollective(Communicator &comm, const CollArgs &a) {
  PointerInfo send, recv;
  if (a.send_bytes > 0) INFINICCL_RETURN_IF_ERROR(DeviceRegistry::Classify(a.sendbuff, &send));
  if (a.recv_bytes > 0) INFINICCL_RETURN_IF_ERROR(DeviceRegistry::Classify(a.recvbuff, &recv));
  const bool send_dev = a.send_bytes > 0 && send.space != MemorySpace::kHost;
  const bool recv_dev = a.recv_bytes > 0 && recv.space != MemorySpace::kHost;
  // Send/Recv inside a group are posted now and completed at GroupEnd;
  // everything else (collectives included) runs now, in call order.
  const bool grouped = (a.kind == CollKind::kSend || a.kind == CollKind::kRecv) &&
                       Group::Current().active();

  // 1. Host buffers: straight to MPI, whatever devices exist.
  if (!send_dev && !recv_dev) {
    Announce(comm, a, Path::kHostMpi, "");
    if (grouped) return GroupP2p::OfCurrentGroup().Post(comm, a);
    return comm.mpi_backend().Run(a);
  }

  if (send_dev && recv_dev && send.kind != recv.kind) {
    return MakeStatus(infinicclInvalidArgument,
                      "sendbuff is %s memory and recvbuff is %s memory; one call cannot "
                      "mix two device kinds",
                      DeviceKindName(send.kind), DeviceKindName(recv.kind));
  }
  const DeviceKind kind = send_dev ? send.kind : recv.kind;
  DeviceRuntime *device = DeviceRegistry::Get(kind);
  if (device == nullptr) {
    return MakeStatus(infinicclInvalidArgument, "buffer is %s memory, which is not enabled",
                      DeviceKindName(kind));
  }

  // 2. Device buffers and an MPI that reads them: direct, after the work
  //    already queued on the stream (the producer of sendbuff).
  if (DirectAllowed(kind)) {
    Announce(comm, a, Path::kDirectMpi, DeviceKindName(kind));
    INFINICCL_RETURN_IF_ERROR(device->StreamSynchronize(a.stream));
    StagingPool::Global().CountDirect();
    if (grouped) return GroupP2p::OfCurrentGroup().Post(comm, a);
    return comm.mpi_backend().Run(a);
  }

  // 3. Device buffers otherwise: staged through pooled host buffers,
  //    pipelined when large.
  Announce(comm, a, Path::kStagedMpi, DeviceKindName(kind));
  if (grouped) return GroupP2p::OfCurrentGroup().PostStaged(comm, *device, a);
  return RunStaged(comm.mpi_backend(), *device, a, BufferPlacement{send_dev, recv_dev},
                   comm.size(), &comm);
}

}  // namespace infiniccl
