// The route decision as a pure function of what the call is and what the
// communicator has, so it is tested without MPI, devices or a CCL:
// DecideRoute turns RouteFacts into a RoutePlan (the path and how it runs),
// which route.cpp gathers and carries out.
#pragma once

#include "core/coll_args.h"  // Path
#include "core/config.h"  // BackendChoice (INFINICCL_BACKEND, parsed with the config)
#include "core/status.h"

namespace infiniccl {

struct RouteFacts {
  bool device_buffers = false;  // either buffer is device memory
  bool has_mpi = true;          // false: made by infinicclCommInitRank
  bool has_ccl = false;         // the communicator has a CCL communicator
  const char *ccl_name = "CCL";
  // Why the CCL cannot run this call (CclUnsupportedReason); nullptr if it can.
  const char *ccl_unsupported = nullptr;
  bool one_rank_reduction = false;  // AllReduce/Reduce/ReduceScatter on 1 rank
  // The communicator is hierarchical (groups with their own CCL, MPI between
  // them), the call has a two-level form, it is not a grouped Send/Recv,
  // and it is at least its form's threshold (HierMinBytes: from
  // INFINICCL_HIERARCHY_MIN_BYTES and the topology). The same on every rank
  // whatever its buffers are, so host-only ranks take the path too.
  bool hierarchical = false;
  // The communicator's ranks share a node's memory (ShmBackend) and it takes
  // this call (kind, size, INFINICCL_SHM: the same on every rank whatever its
  // buffers are), which is not a grouped Send/Recv.
  bool shm = false;
  // The call's stream is being captured into a graph (DeviceRuntime::
  // StreamIsCapturing; asked for device buffers only): only the CCL's path
  // and a one-rank copy between device buffers can be captured, every other
  // one is refused before anything is queued.
  bool capturing = false;
  // One buffer is host memory and the other device memory.
  bool host_and_device = false;

  // How the chosen path runs (RoutePlan); device buffers only where named.
  bool both_device = false;          // sendbuff and recvbuff both device memory
  bool mpi_reads_device = false;     // the MPI reads this device's memory directly
  bool needs_mpi_matching = false;   // a tag, or a receive from any source
  bool grouped = false;              // a Send/Recv inside a group
  bool queues = false;               // device buffers the progress engine queues
  bool uniform_staging = false;      // a mixed job: every rank stages alike
  bool fits_on_stream_shm = false;   // per-rank bytes at most the on-stream shm size
  // Made without MPI on one node: what its shared memory cannot run of
  // this call (nullptr: it can, or the communicator has MPI or no segment).
  const char *node_unsupported = nullptr;
};

// How the executor runs the plan's path.
enum class RouteMode : uint8_t {
  kOnStream,   // kCcl, kLocalCopy: on the caller's stream from this thread
  kBlocking,   // after the queued work, on this thread, done at return
  kGroupPost,  // a grouped Send/Recv off the CCL: GroupP2p::Post
  kQueued,     // to the communicator's progress engine
};

struct RoutePlan {
  Path path = Path::kNone;
  RouteMode mode = RouteMode::kBlocking;
  // MPI must be able to match the call's tag or any-source receive
  // (checked before anything is posted or queued).
  bool check_matching = false;
  // A mixed job's call through MPI: staged in the agreed chunk size.
  bool uniform = false;
  // kLocalCopy: left on the stream, not waited for (the stream orders it:
  // a CCL of the device, the progress engine, or a capture).
  bool stream_ordered = false;
  // kQueued only: the two-level path's scratch reserved before queuing;
  // the segment's landing areas tried (a shared-memory AllReduce of one
  // stage, ShmBackend::Lands); the one-chunk staged shape tried
  // (StagedOnStream, copies on the caller's stream around the gate) when
  // the call does not land.
  bool reserve_hier_scratch = false, try_land = false, one_chunk_on_stream = false;
};

// Picks the path, or says why there is none. kDirectMpi is never returned:
// the caller turns kStagedMpi into it when the MPI reads device memory.
// kLocalCopy: a reduction on one rank with device buffers is a copy (x op
// nothing is x; Avg divides by 1): no CCL kernel, no staging, no MPI.
// kHier: whenever facts.hierarchical (every rank of the call takes it).
// kShm: whenever facts.shm, but for device buffers that a CCL of their
// device takes (and never under INFINICCL_BACKEND=ccl).
// Device buffers on a capturing stream: kCcl, or kLocalCopy between two
// device buffers, or InvalidUsage saying why.
Status DecidePath(BackendChoice choice, const RouteFacts &facts, Path *out);

// The whole plan: DecidePath's path (kStagedMpi made kDirectMpi where the
// MPI reads device memory), then how it runs.
Status DecideRoute(BackendChoice choice, const RouteFacts &facts, RoutePlan *plan);

}  // namespace infiniccl
