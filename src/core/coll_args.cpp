#include "core/coll_args.h"

namespace infiniccl {

const char *CollKindName(CollKind kind) {
  switch (kind) {
    case CollKind::kAllReduce: return "AllReduce";
    case CollKind::kBroadcast: return "Broadcast";
    case CollKind::kReduce: return "Reduce";
    case CollKind::kAllGather: return "AllGather";
    case CollKind::kGather: return "Gather";
    case CollKind::kScatter: return "Scatter";
    case CollKind::kReduceScatter: return "ReduceScatter";
    case CollKind::kAllToAll: return "AllToAll";
    case CollKind::kSend: return "Send";
    case CollKind::kRecv: return "Recv";
  }
  return "?";
}

const char *PathName(Path p) {
  switch (p) {
    case Path::kNone: return "not yet routed";
    case Path::kHostMpi: return "host";
    case Path::kDirectMpi: return "direct";
    case Path::kStagedMpi: return "staged";
    case Path::kCcl: return "CCL";
    case Path::kLocalCopy: return "local copy";
    case Path::kHier: return "hierarchical";
  }
  return "?";
}

const char *PathDescription(Path p) {
  switch (p) {
    case Path::kNone: return "not yet routed";
    case Path::kHostMpi: return "host buffers -> MPI (zero copy)";
    case Path::kDirectMpi: return "device buffers -> GPU-aware MPI (direct, no staging)";
    case Path::kStagedMpi: return "device buffers -> pooled host staging -> MPI";
    case Path::kCcl: return "device buffers -> native CCL on the caller's stream";
    case Path::kLocalCopy:
      return "one-rank reduction of device buffers -> one device copy on the caller's "
             "stream (no CCL, no MPI)";
    case Path::kHier:
      return "two levels: CCL (or MPI) inside each group of ranks, MPI between groups";
  }
  return "?";
}

}  // namespace infiniccl
