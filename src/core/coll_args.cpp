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
    {"host", "host buffers -> MPI, on the buffers themselves"},
    {"direct", "device buffers -> GPU-aware MPI (direct, no staging)"},
    {"staged", "device buffers -> pooled host staging -> MPI"},
    {"CCL", "device buffers -> native CCL on the caller's stream"},
    {"local copy",
     "one-rank reduction of device buffers -> one device copy on the caller's stream "
     "(no CCL, no MPI)"},
    {"shared memory",
     "the node's ranks through a shared-memory segment (no MPI)"},
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

CallShape ShapeOf(CollKind kind, int rank, int root, int size) {
  const size_t n = static_cast<size_t>(size), r = static_cast<size_t>(rank);
  const bool at_root = rank == root;
  CallShape s;
  const auto set = [&s](size_t send, size_t recv, bool in_place, bool inside, size_t off) {
    s.send_blocks = send;
    s.recv_blocks = recv;
    s.has_in_place = in_place;
    s.send_inside_recv = inside;
    s.in_place_block = off;
  };
  switch (kind) {
    case CollKind::kAllReduce: set(1, 1, true, true, 0); break;
    case CollKind::kBroadcast: set(at_root ? 1 : 0, 1, at_root, true, 0); break;
    case CollKind::kReduce: set(1, at_root ? 1 : 0, at_root, true, 0); break;
    case CollKind::kAllGather: set(1, n, true, true, r); break;
    case CollKind::kGather: set(1, at_root ? n : 0, at_root, true, r); break;
    case CollKind::kScatter: set(at_root ? n : 0, 1, at_root, false, r); break;
    case CollKind::kReduceScatter: set(n, 1, true, false, r); break;
    case CollKind::kAllToAll: set(n, n, true, true, 0); break;
    case CollKind::kSend: set(1, 0, false, true, 0); break;
    case CollKind::kRecv: set(0, 1, false, true, 0); break;
  }
  return s;
}

bool IsInPlace(const CollArgs &a, const CallShape &s, size_t elem_bytes) {
  if (!s.has_in_place || s.send_blocks == 0 || s.recv_blocks == 0) return false;
  const char *send = static_cast<const char *>(a.sendbuff);
  const char *recv = static_cast<const char *>(a.recvbuff);
  const size_t off = s.in_place_block * a.count * elem_bytes;
  return s.send_inside_recv ? send == recv + off : recv == send + off;
}

void SetShape(CollArgs *a, size_t elem_bytes, int rank, int size) {
  const CallShape s = ShapeOf(a->kind, rank, a->root, size);
  const size_t block = a->count * elem_bytes;
  a->send_bytes = block * s.send_blocks;
  a->recv_bytes = block * s.recv_blocks;
  a->in_place = IsInPlace(*a, s, elem_bytes);
}

}  // namespace infiniccl
