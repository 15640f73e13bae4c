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
#include "route/route_decision.h"

namespace infiniccl {

namespace {

// Communicator::FirstUse bits: one per (kind, path), then one per kind for
// "the CCL could not take it".
static_assert(kNumCollKinds * (kNumPaths + 1) <= 64, "FirstUse has 64 bits");

// INFINICCL_MPI_DEVICE_DIRECT: 1 forces, 0 forbids, auto asks the MPI once
// per device kind.
bool DirectAllowed(DeviceKind kind) {
  const Tristate mode = GlobalConfig().mpi_device_direct;
  if (mode != Tristate::kAuto) return mode == Tristate::kOn;
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

// Path::kLocalCopy: recvbuff = sendbuff, on the caller's stream. Waited for
// unless the communicator has the device's CCL, whose calls return once
// queued (the MPI paths return with the result in place).
Status RunLocalCopy(Communicator &comm, DeviceRuntime &device, const CollArgs &a,
                    bool send_dev, bool recv_dev) {
  if (a.sendbuff == a.recvbuff) return Status::Ok();
  const CopyKind kind = send_dev && recv_dev ? CopyKind::kDeviceToDevice
                        : send_dev           ? CopyKind::kDeviceToHost
                                             : CopyKind::kHostToDevice;
  INFINICCL_RETURN_IF_ERROR(
      device.MemcpyAsync(a.recvbuff, a.sendbuff, a.recv_bytes, kind, a.stream));
  const bool stream_ordered = comm.ccl_backend() != nullptr &&
                              comm.binding().kind == device.kind() && send_dev && recv_dev;
  return stream_ordered ? Status::Ok() : device.StreamSynchronize(a.stream);
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

  RouteFacts facts;
  facts.device_buffers = send_dev || recv_dev;
  facts.has_mpi = comm.has_mpi();
  Backend *ccl = comm.ccl_backend();
  facts.has_ccl = ccl != nullptr;
  if (ccl != nullptr) {
    facts.ccl_name = ccl->Name();
    facts.ccl_unsupported = ccl->Unsupported(a);
  }
  DeviceKind kind = DeviceKind::kCpu;
  DeviceRuntime *device = nullptr;
  if (facts.device_buffers) {
    if (send_dev && recv_dev && send.kind != recv.kind) {
      return MakeStatus(infinicclInvalidArgument,
                        "sendbuff is %s memory and recvbuff is %s memory; one call cannot "
                        "mix two device kinds",
                        DeviceKindName(send.kind), DeviceKindName(recv.kind));
    }
    kind = send_dev ? send.kind : recv.kind;
    device = DeviceRegistry::Get(kind);
    if (device == nullptr) {
      return MakeStatus(infinicclInvalidArgument, "buffer is %s memory, which is not enabled",
                        DeviceKindName(kind));
    }
    // The CCL communicator serves its own device kind only.
    if (comm.binding().kind != kind) facts.has_ccl = false;
    facts.one_rank_reduction = comm.size() == 1 && IsReduction(a.kind);
  }

  Path path = Path::kHostMpi;
  INFINICCL_RETURN_IF_ERROR(DecidePath(GlobalConfig().backend, facts, &path));
  switch (path) {
    case Path::kHostMpi:
      // 1. Host buffers: straight to MPI, whatever devices exist.
      comm.inflight().SetPath(CallPath::kHost);
      Announce(comm, a, path, "");
      if (grouped) return GroupP2p::OfCurrentGroup().Post(comm, a);
      return comm.mpi_backend().Run(a);
    case Path::kCcl:
      // 2. Device buffers of a device with a CCL communicator: enqueued on
      //    the caller's stream, returns without waiting (as NCCL does);
      //    inside a group the CCL's own group (opened by the group hook)
      //    defers it to GroupEnd.
      comm.inflight().SetPath(CallPath::kCcl);
      Announce(comm, a, path, kind == DeviceKind::kMaca ? "maca via MCCL" : "cuda via NCCL");
      return ccl->Run(a);
    case Path::kLocalCopy:
      comm.inflight().SetPath(CallPath::kCopy);
      Announce(comm, a, path, DeviceKindName(kind));
      return RunLocalCopy(comm, *device, a, send_dev, recv_dev);
    case Path::kDirectMpi:
    case Path::kStagedMpi: break;
  }
  // Why the CCL was passed over, once per kind of call (bits above the paths').
  if (facts.has_ccl && facts.ccl_unsupported != nullptr && LogEnabled(LogLevel::kInfo) &&
      comm.FirstUse(kNumCollKinds * kNumPaths + static_cast<int>(a.kind))) {
    INFINICCL_INFO("%s cannot run %s (%s): taking MPI instead", facts.ccl_name,
                   CollKindName(a.kind), facts.ccl_unsupported);
  }

  // 3. Device buffers and an MPI that reads them: direct, after the work
  //    already queued on the stream (the producer of sendbuff).
  if (DirectAllowed(kind)) {
    comm.inflight().SetPath(CallPath::kDirect);
    Announce(comm, a, Path::kDirectMpi, DeviceKindName(kind));
    INFINICCL_RETURN_IF_ERROR(device->StreamSynchronize(a.stream));
    StagingPool::Global().CountDirect();
    if (grouped) return GroupP2p::OfCurrentGroup().Post(comm, a);
    CollArgs direct = a;
    direct.device = device;
    return comm.mpi_backend().Run(direct);
  }

  // 4. Device buffers otherwise: staged through pooled host buffers,
  //    pipelined when large.
  comm.inflight().SetPath(CallPath::kStaged);
  Announce(comm, a, Path::kStagedMpi, DeviceKindName(kind));
  if (grouped) return GroupP2p::OfCurrentGroup().PostStaged(comm, *device, a);
  return RunStaged(comm.mpi_backend(), *device, a, BufferPlacement{send_dev, recv_dev},
                   comm.size(), &comm);
}

}  // namespace infiniccl
