// CollArgs: one collective call as the API received it, after validation.
// It travels unchanged from api/ through route/ to a backend.
#pragma once

#include <infiniccl/infiniccl.h>

#include <cstddef>

namespace infiniccl {

class DeviceRuntime;


enum class CollKind {
  kAllReduce,
  kBroadcast,  // also Bcast (sendbuff == recvbuff)
  kReduce,
  kAllGather,
  kGather,
  kScatter,
  kReduceScatter,
  kAllToAll,
  kSend,
  kRecv,
};
inline constexpr int kNumCollKinds = 10;

const char *CollKindName(CollKind kind);  // "AllReduce", ...

// The peer of a Recv from any source (INFINICCL_ANY_SOURCE).
inline constexpr int kAnySource = INFINICCL_ANY_SOURCE;

struct CollArgs {
  CollKind kind;
  const void *sendbuff;  // nullptr for Recv
  void *recvbuff;        // nullptr for Send
  size_t count;          // per rank / per peer / per block, as the API says
  infinicclDataType_t dtype;
  infinicclRedOp_t op;   // reductions only
  int root;              // rooted collectives; the peer for Send/Recv (or kAnySource)
  void *stream;
  bool in_place;         // set by validation: NCCL's in-place layout
  // Set by validation: bytes each buffer holds at this rank (0 where unused).
  size_t send_bytes = 0;
  size_t recv_bytes = 0;
  // Set by the route on the direct path: the buffers are memory of this
  // device runtime that only MPI itself reads, so the backend must not touch
  // them on the CPU; its own copies go through the runtime, on `stream`.
  DeviceRuntime *device = nullptr;
  // Set by the staging pipeline on the calls it makes on its own host
  // buffers: already cut into chunks, so the MPI backend does not cut them
  // again into host pieces (backend/mpi/host_pieces.h).
  bool staged = false;
  // Avg divides the sum by this many ranks; 0: the communicator's size. Set
  // by the hierarchical path (src/hier), whose MPI step across groups sums
  // over fewer ranks than the call's.
  int avg_divisor = 0;
  // Send/Recv: the API's tag (0..INFINICCL_TAG_MAX; 0 for Send/Recv), and
  // where a Recv writes its sender's rank (nullptr: nowhere), before the
  // call's completion is signalled (return, GroupEnd, the engine's gate).
  int tag = 0;
  int *source = nullptr;
  // Made by SendTagged/RecvTagged: a Recv may take kAnySource.
  bool tagged = false;
};

// The path the route chose for a call (route/route_decision.h decides it);
// kNone until it has decided. Published to the watchdog while the call runs.
enum class Path : int {
  kNone = 0, kHostMpi, kDirectMpi, kStagedMpi, kCcl, kLocalCopy, kShm, kHier
};
inline constexpr int kNumPaths = 8;
// "host", "direct", "staged", "CCL", "local copy", "shared memory", "hierarchical"
const char *PathName(Path p);
const char *PathDescription(Path p);  // what the path does, for INFO

inline bool IsReduction(CollKind k) {
  return k == CollKind::kAllReduce || k == CollKind::kReduce ||
         k == CollKind::kReduceScatter;
}
inline bool IsP2p(CollKind k) { return k == CollKind::kSend || k == CollKind::kRecv; }
// A Send/Recv that a CCL cannot run (it has no tags and no receive from any
// source): the MPI path takes it.
inline bool NeedsMpiMatching(const CollArgs &a) {
  return IsP2p(a.kind) && (a.tag != 0 || a.root == kAnySource);
}
inline bool IsRooted(CollKind k) {
  return k == CollKind::kBroadcast || k == CollKind::kReduce ||
         k == CollKind::kGather || k == CollKind::kScatter;
}

// A call's shape at `rank` of `size`, as NCCL defines it: how many
// `count`-element blocks each buffer holds there (0 where the buffer is not
// used), and where the send block sits for the in-place form.
struct CallShape {
  size_t send_blocks = 0, recv_blocks = 0;
  bool has_in_place = false;     // the call has an in-place form at this rank
  bool send_inside_recv = true;  // else recvbuff inside sendbuff
  size_t in_place_block = 0;     // in blocks of `count` elements
};
CallShape ShapeOf(CollKind kind, int rank, int root, int size);

// Whether `a`'s buffers follow NCCL's in-place layout for shape `s`.
bool IsInPlace(const CollArgs &a, const CallShape &s, size_t elem_bytes);

// Sets a->send_bytes, recv_bytes and in_place from the shape (what
// validation sets for an API call; for calls the library makes itself).
void SetShape(CollArgs *a, size_t elem_bytes, int rank, int size);

}  // namespace infiniccl
