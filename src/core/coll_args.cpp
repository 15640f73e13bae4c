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

namespace {

// Indexed by Path: the short name (watchdog) and what the path does (INFO).
struct PathText {
  const char *name, *description;
};
constexpr PathText kPathText[kNumPaths] = {
    {"not yet routed", "not yet routed"},
    {"host", "host buffers -> MPI (zero copy)"},
    {"direct", "device buffers -> GPU-aware MPI (direct, no staging)"},
    {"staged", "device buffers -> pooled host staging -> MPI"},
    {"CCL", "device buffers -> native CCL on the caller's stream"},
    {"local copy",
     "one-rank reduction of device buffers -> one device copy on the caller's stream "
     "(no CCL, no MPI)"},
    {"hierarchical", "two levels: CCL (or MPI) inside each group of ranks, MPI between groups"},
};

const PathText &TextOf(Path p) {
  const auto i = static_cast<unsigned>(p);
  static constexpr PathText kUnknown{"?", "?"};
  return i < static_cast<unsigned>(kNumPaths) ? kPathText[i] : kUnknown;
}

}  // namespace

const char *PathName(Path p) { return TextOf(p).name; }
const char *PathDescription(Path p) { return TextOf(p).description; }

}  // namespace infiniccl
