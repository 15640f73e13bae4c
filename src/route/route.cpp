#include "route/route.h"

#include <memory>

#include "backend/ccl/ccl_provider.h"
#include "comm/group.h"
#include "core/config.h"
#include "core/dtype.h"
#include "core/log.h"
#include "device/registry.h"
#include "hier/hier_collectives.h"
#include "route/group_p2p.h"
#include "route/route_decision.h"
#include "staging/pipeline.h"
#include "staging/staging_pool.h"

namespace infiniccl {

namespace {

// Communicator::FirstUse bits: one per (kind, path), then one per kind for
// "the CCL could not take it" (kNone is never announced).
// kHier (the last) announces its own forms (hier/), so it takes no bit.
constexpr int kRoutedPaths = kNumPaths - 2;
static_assert(kNumCollKinds * (kRoutedPaths + 1) <= 128, "FirstUse has 128 bits");

// `device`: the buffers' device kind ("" for host buffers); `via`: the
// CCL that runs the call ("NCCL", "emulated CCL"), or "".
void Announce(Communicator &comm, const CollArgs &a, Path path, const char *device,
              const char *via) {
  const int bit = static_cast<int>(a.kind) * kRoutedPaths + static_cast<int>(path) - 1;
  if (LogEnabled(LogLevel::kInfo) && path != Path::kHier && comm.FirstUse(bit)) {
    INFINICCL_INFO("%s on comm of %d ranks: %s%s%s%s%s (logged once per kind and path; "
                   "TRACE logs every call)",
                   CollKindName(a.kind), comm.size(), PathDescription(path),
                   *device ? ", device " : "", device, *via ? " via " : "", via);
  }
  INFINICCL_TRACE("%s count=%zu dtype=%s op=%s root/peer=%d tag=%d%s: %s %s%s%s",
                  CollKindName(a.kind), a.count, DataTypeName(a.dtype), RedOpName(a.op),
                  a.root, a.tag, a.in_place ? " in-place" : "", PathDescription(path),
                  device, *via ? " via " : "", via);
}

// Device buffers through the segment are staged through host memory too:
// counted as staged calls and copies (infinicclGetStagingStats).
// Per-rank bytes up to which a queued call through shared memory on device
// buffers runs as a one-chunk call on the caller's stream (StagedOnStream).
constexpr size_t kOnStreamShmBytes = size_t{256} << 10;

Status RunShm(ShmBackend &shm, const CollArgs &x, DeviceRuntime *device,
              const BufferPlacement &placement) {
  ShmBackend::CopyCounts n;
  const Status st =
      shm.RunOn(x, device, placement.send_on_device, placement.recv_on_device, &n);
  if (device == nullptr || !st.ok()) return st;
  StagingPool &pool = StagingPool::Global();
  if (n.d2h > 0) pool.CountCopy(CopyKind::kDeviceToHost, n.d2h_bytes, n.d2h);
  if (n.h2d > 0) pool.CountCopy(CopyKind::kHostToDevice, n.h2d_bytes, n.h2d);
  pool.CountCall(x.count * DataTypeSize(x.dtype) > ShmBackend::kStageBytes);
  return st;
}

// What the route needs to know of a call besides its arguments.
struct CallFacts {
  RouteFacts facts;
  DeviceKind kind = DeviceKind::kCpu;  // the device buffers' kind
  DeviceRuntime *device = nullptr;     // their runtime; nullptr for host buffers
  int device_id = -1;                  // their device
  BufferPlacement placement{false, false};
};

// Classifies the buffers and asks the communicator, its backends and the
// device what DecideRoute decides from; refuses buffers of two device
// kinds or of a device not enabled.
Status GatherFacts(Communicator &comm, const CollArgs &a, CallFacts *out) {
  PointerInfo send, recv;
  if (a.send_bytes > 0) INFINICCL_RETURN_IF_ERROR(DeviceRegistry::Classify(a.sendbuff, &send));
  if (a.recv_bytes > 0) INFINICCL_RETURN_IF_ERROR(DeviceRegistry::Classify(a.recvbuff, &recv));
  const bool send_dev = a.send_bytes > 0 && send.space != MemorySpace::kHost;
  const bool recv_dev = a.recv_bytes > 0 && recv.space != MemorySpace::kHost;
  out->placement = BufferPlacement{send_dev, recv_dev};
  RouteFacts &facts = out->facts;
  // Send/Recv inside a group are posted now and completed at GroupEnd;
  // everything else (collectives included) runs now, in call order.
  facts.grouped = IsP2p(a.kind) && Group::Current().active();
  facts.device_buffers = send_dev || recv_dev;
  facts.both_device = send_dev && recv_dev;
  facts.host_and_device =
      a.send_bytes > 0 && a.recv_bytes > 0 && !a.in_place && send_dev != recv_dev;
  facts.has_mpi = comm.has_mpi();
  facts.needs_mpi_matching = NeedsMpiMatching(a);
  Backend *ccl = comm.ccl_backend();
  facts.has_ccl = ccl != nullptr;
  if (ccl != nullptr) {
    facts.ccl_name = ccl->Name();
    facts.ccl_unsupported = ccl->Unsupported(a);
  }
  if (facts.device_buffers) {
    if (send_dev && recv_dev && send.kind != recv.kind) {
      return MakeStatus(infinicclInvalidArgument,
                        "sendbuff is %s memory and recvbuff is %s memory; one call cannot "
                        "mix two device kinds",
                        DeviceKindName(send.kind), DeviceKindName(recv.kind));
    }
    out->kind = send_dev ? send.kind : recv.kind;
    out->device_id = send_dev ? send.device : recv.device;
    out->device = DeviceRegistry::Get(out->kind);
    if (out->device == nullptr) {
      return MakeStatus(infinicclInvalidArgument, "buffer is %s memory, which is not enabled",
                        DeviceKindName(out->kind));
    }
    // The CCL communicator serves its own device kind only.
    if (comm.binding().kind != out->kind) facts.has_ccl = false;
    facts.one_rank_reduction = comm.size() == 1 && IsReduction(a.kind);
    INFINICCL_RETURN_IF_ERROR(out->device->StreamIsCapturing(a.stream, &facts.capturing));
    facts.mpi_reads_device = facts.has_mpi && comm.mpi_backend().ReadsDeviceMemory(out->kind);
    facts.queues = comm.QueuesFor(*out->device);
  }
  const size_t bytes = a.count * DataTypeSize(a.dtype);
  facts.hierarchical =
      comm.hierarchical() && !facts.grouped &&
      bytes >= HierMinBytes(a.kind, *comm.topology(), GlobalConfig().hierarchy_min_bytes);
  // Every size where MPI could not do better: devices without a CCL (their
  // buffers go through host memory either way), or no MPI at all.
  // Send/Recv go there on a communicator without MPI only (grouped ones
  // too: GroupP2p posts them into its batch); collectives never grouped.
  facts.shm = comm.shm_backend() != nullptr &&
              (IsP2p(a.kind) ? !comm.has_mpi() && comm.shm_backend()->Takes(a, true)
                             : !facts.grouped &&
                                   comm.shm_backend()->Takes(
                                       a, !comm.has_mpi() ||
                                              (comm.topology() != nullptr &&
                                               comm.topology()->DevicesWithoutCcl())));
  if (!comm.has_mpi() && comm.shm_backend() != nullptr && !facts.shm) {
    facts.node_unsupported = comm.shm_backend()->Unsupported(a);
    if (facts.node_unsupported == nullptr) facts.node_unsupported = "its shared memory cannot run this call";
  }
  facts.uniform_staging = comm.topology() != nullptr && comm.topology()->uniform_staging;
  facts.fits_on_stream_shm = bytes <= kOnStreamShmBytes;
  return Status::Ok();
}

// The path itself, on `x`: the call's arguments on this thread, or those
// with the progress engine's stream on the engine's thread.
Status RunPath(Communicator *c, const RoutePlan &plan, DeviceRuntime *device,
               BufferPlacement placement, const CollArgs &x) {
  const int nranks = c->size();
  if (plan.uniform) {
    DeviceRuntime *runtime = device != nullptr ? device : DeviceRegistry::Get(DeviceKind::kCpu);
    return RunStaged(c->mpi_backend(), *runtime, x, placement, nranks, c,
                     c->topology()->across_chunk_bytes);
  }
  switch (plan.path) {
    case Path::kHostMpi:
      // Host buffers: straight to MPI, whatever devices exist.
      return c->mpi_backend().Run(x);
    case Path::kCcl:
      // Device buffers of a device with a CCL communicator: enqueued on the
      // caller's stream, returns without waiting (as NCCL does); inside a
      // group the CCL's own group (opened by Group::Start) defers it.
      return c->ccl_backend()->Run(x);
    case Path::kLocalCopy:
      // One copy on the caller's stream, left there when the stream orders
      // the calls (RoutePlan::stream_ordered).
      return RunLocalCopy(*device, x, placement, plan.stream_ordered);
    case Path::kDirectMpi:
      // Device buffers and an MPI that reads them.
      return RunDirect(c->mpi_backend(), *device, x);
    case Path::kShm:
      // The node's ranks through shared memory; device buffers copied
      // into and out of it by the device runtime on the call's stream.
      return RunShm(*c->shm_backend(), x, device, placement);
    case Path::kHier:
      // Two levels (hier/): the groups' CCLs inside, MPI across.
      return RunHierarchical(*c->topology(), device, x, placement, nranks, c);
    case Path::kStagedMpi:
    case Path::kNone:
      break;
  }
  // Device buffers otherwise: staged through pooled host buffers,
  // pipelined when large.
  return RunStaged(c->mpi_backend(), *device, x, placement, nranks, c);
}

// Device work through MPI or the segment, queued to the communicator's
// progress engine, ordered on the caller's stream; returns at once,
// whatever runs on the device: it allocates and frees no pinned memory
// (StagingPool).
Status Enqueue(Communicator &comm, const CollArgs &a, const RoutePlan &plan,
               const CallFacts &f) {
  StagingPool::NoDeviceWait no_device_wait;
  DeviceRuntime *device = f.device;
  Communicator *c = &comm;
  if (plan.reserve_hier_scratch) {
    INFINICCL_RETURN_IF_ERROR(c->topology()->ReserveScratch(device, a.kind, a.send_bytes));
  }
  QueuedOp op;
  op.args = a;
  op.seq = IsP2p(a.kind) ? 0 : comm.seq();
  op.path = plan.path;
  op.device = device;
  op.device_id = f.device_id;
  ShmBackend *shm = c->shm_backend();
  const BufferPlacement placement = f.placement;
  const bool lands = plan.try_land && shm->Lands(a, device, placement.send_on_device,
                                                 placement.recv_on_device);
  std::shared_ptr<StagedOnStream> staged;
  if (plan.one_chunk_on_stream && !lands) {
    staged = StagedOnStream::IfOneChunk(*device, a, placement, comm.size());
  }
  if (staged != nullptr) {
    bool began = false;
    INFINICCL_RETURN_IF_ERROR(staged->Begin(*device, a, c, &began));
    if (!began) staged = nullptr;  // the queued calls' slots fill the cap
  }
  if (lands) {
    // Through the landing areas of the segment: the copies on the caller's
    // stream around the gate, only the reduction on the engine's thread.
    INFINICCL_RETURN_IF_ERROR(shm->LandIn(a, device));
    StagingPool &pool = StagingPool::Global();
    const size_t bytes = a.count * DataTypeSize(a.dtype);
    pool.CountCall(false);
    pool.CountCopy(CopyKind::kDeviceToHost, bytes, 1);
    pool.CountCopy(CopyKind::kHostToDevice, bytes, 1);
    op.run = [shm, a](const CollArgs &) { return shm->RunLanded(a); };
    op.after_gate = [shm, a, device] { return shm->LandOut(a, device); };
  } else if (staged != nullptr) {
    // One chunk: the copies on the caller's stream around the gate, only MPI
    // (or the shared-memory protocol) on the engine's thread: no more thread
    // hops than a blocking call. Two memcpys of at most kOnStreamShmBytes
    // cost less than the engine's waits for its own device copies.
    Backend *host = plan.path == Path::kShm ? static_cast<Backend *>(shm) : &c->mpi_backend();
    op.run = [staged, host](const CollArgs &) { return staged->RunHost(*host); };
    op.after_gate = [staged] { return staged->End(); };
    op.retire = [staged] { staged->Retire(); };
  } else {
    op.run = [c, plan, device, placement](const CollArgs &x) {
      return RunPath(c, plan, device, placement, x);
    };
  }
  op.done = [c, seq = op.seq](const Status &st) {
    c->NoteReturned(seq, static_cast<int>(st.code()));
  };
  const Status st = comm.Enqueue(std::move(op));
  // Not queued: the landing area is free once LandIn's copy has run.
  if (!st.ok() && lands) (void)shm->LandOut(a, device, /*copy=*/false);
  return st;
}

}  // namespace

Status RouteCollective(Communicator &comm, const CollArgs &a, bool *queued) {
  CallFacts f;
  INFINICCL_RETURN_IF_ERROR(GatherFacts(comm, a, &f));
  RoutePlan plan;
  INFINICCL_RETURN_IF_ERROR(DecideRoute(GlobalConfig().backend, f.facts, &plan));
  const Path path = plan.path;
  // Refused before anything is posted or queued where this MPI cannot
  // match the call.
  if (plan.check_matching) {
    INFINICCL_RETURN_IF_ERROR(comm.mpi_backend().CheckMatching(a, f.facts.grouped));
  }
  comm.inflight().SetPath(path);
  Announce(comm, a, path,
           !f.facts.device_buffers && (path == Path::kHostMpi || path == Path::kHier ||
                                       path == Path::kShm)
               ? ""
               : DeviceKindName(f.kind),
           path == Path::kCcl ? f.facts.ccl_name : "");
  // Why the CCL was passed over, once per kind of call (bits above the paths').
  if ((path == Path::kDirectMpi || path == Path::kStagedMpi) && f.facts.has_ccl &&
      f.facts.ccl_unsupported != nullptr && LogEnabled(LogLevel::kInfo) &&
      comm.FirstUse(kNumCollKinds * kRoutedPaths + static_cast<int>(a.kind))) {
    INFINICCL_INFO("%s cannot run %s (%s): taking MPI instead", f.facts.ccl_name,
                   CollKindName(a.kind), f.facts.ccl_unsupported);
  }
  switch (plan.mode) {
    case RouteMode::kGroupPost:
      // Posted at GroupEnd as one queued operation, or now from this thread.
      return GroupP2p::OfCurrentGroup().Post(comm, a, path, f.device, f.device_id);
    case RouteMode::kOnStream:
      return RunPath(&comm, plan, f.device, f.placement, a);
    case RouteMode::kBlocking:
      // Reaches MPI from this thread: after the queued work.
      INFINICCL_RETURN_IF_ERROR(comm.DrainQueued());
      INFINICCL_RETURN_IF_ERROR(comm.CheckDrained(CollKindName(a.kind)));
      return RunPath(&comm, plan, f.device, f.placement, a);
    case RouteMode::kQueued:
      break;
  }
  INFINICCL_RETURN_IF_ERROR(Enqueue(comm, a, plan, f));
  if (queued != nullptr) *queued = true;
  return Status::Ok();
}

}  // namespace infiniccl
