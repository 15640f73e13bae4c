#include "route/route_decision.h"

namespace infiniccl {

namespace {
constexpr const char *kNoMpi =
    "this communicator was made by infinicclCommInitRank and has no MPI";

// The path, capture aside.
Status ChoosePath(BackendChoice choice, const RouteFacts &f, Path *out) {
  // First, and whatever this rank's buffers: every rank must take it.
  if (f.hierarchical && choice == BackendChoice::kAuto) {
    *out = Path::kHier;
    return Status::Ok();
  }
  const bool ccl_takes = choice != BackendChoice::kMpi && f.has_ccl && f.ccl_unsupported == nullptr;
  if (f.shm && choice != BackendChoice::kCcl && !(f.device_buffers && ccl_takes)) {
    *out = Path::kShm;
    return Status::Ok();
  }
  if (f.node_unsupported != nullptr && !(f.device_buffers && ccl_takes)) {
    return MakeStatus(infinicclNotSupported,
                      "this communicator was made without MPI (infinicclCommInitRank on one "
                      "node) and %s; launch under icclrun, mpirun or srun and call "
                      "infinicclInit first for the rest",
                      f.node_unsupported);
  }
  if (!f.device_buffers) {
    if (choice == BackendChoice::kCcl) {
      return Status(
          infinicclInvalidUsage,
          "INFINICCL_BACKEND=ccl but the buffers are host memory; a CCL takes "
          "device memory only (unset it or use auto to send host buffers to MPI)");
    }
    if (!f.has_mpi) {
      return MakeStatus(
          infinicclNotSupported,
          "host buffers: %s, and host buffers are not staged through the "
          "device; pass device buffers, or use infinicclCommInitAll under MPI",
          kNoMpi);
    }
    *out = Path::kHostMpi;
    return Status::Ok();
  }
  // Before the CCL: NCCL's one-rank reduce kernel has lost elements
  // (ccl_known_bugs.cpp), and a copy is the least work on any path.
  if (f.one_rank_reduction) {
    *out = Path::kLocalCopy;
    return Status::Ok();
  }
  if (ccl_takes) {
    *out = Path::kCcl;
    return Status::Ok();
  }
  if (choice == BackendChoice::kCcl) {
    if (!f.has_ccl) {
      return Status(infinicclNotSupported,
                    "INFINICCL_BACKEND=ccl but this communicator has no CCL communicator "
                    "(no NCCL/MCCL in this build, no device with one, or not every rank "
                    "bound to such a device)");
    }
    return MakeStatus(infinicclNotSupported, "INFINICCL_BACKEND=ccl but %s cannot: %s",
                      f.ccl_name, f.ccl_unsupported);
  }
  if (!f.has_mpi) {
    if (choice == BackendChoice::kMpi) {
      return MakeStatus(infinicclNotSupported, "INFINICCL_BACKEND=mpi but %s", kNoMpi);
    }
    return MakeStatus(infinicclNotSupported, "%s cannot run this call (%s) and %s",
                      f.ccl_name, f.ccl_unsupported ? f.ccl_unsupported : "no CCL",
                      kNoMpi);
  }
  *out = Path::kStagedMpi;
  return Status::Ok();
}

}  // namespace

Status DecidePath(BackendChoice choice, const RouteFacts &f, Path *out) {
  INFINICCL_RETURN_IF_ERROR(ChoosePath(choice, f, out));
  // The CCL records its own kernels; a one-rank copy between device
  // buffers is one device copy on the stream.
  const bool capturable =
      *out == Path::kCcl || (*out == Path::kLocalCopy && !f.host_and_device);
  if (f.device_buffers && f.capturing && !capturable) {
    return MakeStatus(
        infinicclInvalidUsage,
        "the stream is being captured into a graph (cudaStreamBeginCapture, "
        "torch.cuda.graph) and this call's path (%s) cannot be captured: it runs on the "
        "library's threads and waits on the host, which a graph does not record. Only a "
        "native CCL's path (NCCL, ...) and a one-rank copy can be captured: a communicator with one on this "
        "device%s; or make this call outside the capture",
        PathDescription(*out),
        f.has_ccl && f.ccl_unsupported != nullptr ? " (which cannot run this call here)" : "");
  }
  return Status::Ok();
}

Status DecideRoute(BackendChoice choice, const RouteFacts &f, RoutePlan *plan) {
  *plan = RoutePlan{};
  Path path = Path::kNone;
  INFINICCL_RETURN_IF_ERROR(DecidePath(choice, f, &path));
  if (path == Path::kStagedMpi && f.mpi_reads_device) path = Path::kDirectMpi;
  plan->path = path;
  // A tag or a receive from any source: never the CCL's (it has neither).
  // Shared memory matches tags and any source itself.
  plan->check_matching = f.needs_mpi_matching && path != Path::kCcl && path != Path::kShm;
  // Ranks that differ in how device buffers reach MPI all stage, in one
  // agreed chunk size, so that their MPI calls match.
  plan->uniform = f.uniform_staging && !f.grouped &&
                  (path == Path::kHostMpi || path == Path::kStagedMpi ||
                   path == Path::kDirectMpi);
  if (f.grouped && path != Path::kCcl) {
    plan->mode = RouteMode::kGroupPost;
  } else if (path == Path::kCcl || path == Path::kLocalCopy) {
    plan->mode = RouteMode::kOnStream;
    plan->stream_ordered =
        path == Path::kCcl || f.capturing || f.queues || (f.has_ccl && f.both_device);
  } else if (!f.queues) {
    plan->mode = RouteMode::kBlocking;
  } else {
    plan->mode = RouteMode::kQueued;
    plan->reserve_hier_scratch = path == Path::kHier;
    plan->try_land = path == Path::kShm;
    plan->one_chunk_on_stream = (path == Path::kStagedMpi && !plan->uniform) ||
                                (path == Path::kShm && f.fits_on_stream_shm);
  }
  return Status::Ok();
}

}  // namespace infiniccl
