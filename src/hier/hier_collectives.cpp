#include "hier/hier_collectives.h"

#include <cstring>

#include "core/dtype.h"
#include "core/log.h"
#include "device/registry.h"

namespace infiniccl {

namespace {

char *At(void *p, size_t bytes) { return static_cast<char *>(p) + bytes; }
const char *At(const void *p, size_t bytes) { return static_cast<const char *>(p) + bytes; }

struct Ctx {
  Topology &t;
  DeviceRuntime *device;  // nullptr: host buffers
  BufferPlacement placement;
  const void *owner;
};

// One sub-call's arguments: `a`'s stream, dtype and op, with the buffer
// sizes validation would have set and NCCL's in-place rule applied.
CollArgs Sub(const CollArgs &a, CollKind kind, const void *send, void *recv, size_t count,
             infinicclRedOp_t op, int root, int nranks, int rank) {
  CollArgs b = a;
  b.kind = kind;
  b.sendbuff = send;
  b.recvbuff = recv;
  b.count = count;
  b.op = op;
  b.root = root;
  b.device = nullptr;
  b.staged = false;
  const size_t elem = DataTypeSize(a.dtype), bytes = count * elem;
  switch (kind) {
    case CollKind::kReduceScatter:
      b.send_bytes = bytes * static_cast<size_t>(nranks);
      b.recv_bytes = bytes;
      b.in_place = recv == At(send, static_cast<size_t>(rank) * bytes);
      break;
    case CollKind::kAllGather:
      b.send_bytes = bytes;
      b.recv_bytes = bytes * static_cast<size_t>(nranks);
      b.in_place = send == At(recv, static_cast<size_t>(rank) * bytes);
      break;
    default:
      b.send_bytes = bytes;
      b.recv_bytes = bytes;
      b.in_place = send == recv;
      break;
  }
  return b;
}

// A call over one rank: the result is the send buffer (a reduction of one
// contribution, a broadcast or gather of its own block).
Status RunAlone(Ctx &c, const CollArgs &b) {
  if (b.recvbuff == nullptr || b.sendbuff == b.recvbuff || b.in_place) return Status::Ok();
  if (c.device != nullptr) {
    return RunLocalCopy(*c.device, b, c.placement, /*stream_ordered=*/false);
  }
  std::memmove(b.recvbuff, b.sendbuff, b.recv_bytes);
  return Status::Ok();
}

// Inside this rank's group: its CCL on device buffers where it has one,
// otherwise MPI on the group's communicator (staged for device buffers).
Status InGroup(Ctx &c, const CollArgs &b) {
  Topology &t = c.t;
  if (t.local_size == 1) return RunAlone(c, b);
  if (c.device != nullptr && t.group_ccl != nullptr) return t.group_ccl->Run(b);
  if (c.device != nullptr) {
    if (t.group_mpi->ReadsDeviceMemory(c.device->kind())) {
      return RunDirect(*t.group_mpi, *c.device, b);
    }
    return RunStaged(*t.group_mpi, *c.device, b, c.placement, t.local_size, c.owner);
  }
  return t.group_mpi->Run(b);
}

// Between groups on `backend` (the leaders' or a shard's communicator of
// `size` ranks): staged or direct MPI for device buffers, MPI for host ones.
// Every rank cuts it alike (Topology::across_staged): a host-only rank in
// a job that stages goes through the same chunks on the cpu runtime.
Status Across(Ctx &c, Backend &backend, int size, const CollArgs &b) {
  if (size == 1) return RunAlone(c, b);
  const Topology &t = c.t;
  if (!t.across_staged) {
    if (c.device != nullptr) return RunDirect(backend, *c.device, b);
    return backend.Run(b);
  }
  DeviceRuntime *runtime = c.device != nullptr ? c.device : DeviceRegistry::Get(DeviceKind::kCpu);
  if (runtime == nullptr) return Status(infinicclInternalError, "no cpu runtime");
  return RunStaged(backend, *runtime, b, c.placement, size, c.owner, t.across_chunk_bytes);
}

void AnnounceOnce(Topology &t, unsigned bit, const char *what) {
  CountHier(bit == 1u ? 0 : bit == 2u ? 1 : 2);
  if (!LogEnabled(LogLevel::kInfo)) return;
  if (t.announced.fetch_or(bit) & bit) return;
  INFINICCL_INFO("%s (logged once per communicator and form)", what);
}

// Avg: every level sums; the one MPI step across groups divides by the
// whole communicator's size (the same sum, then the same division, as the
// flat path: exact for integers).
infinicclRedOp_t LevelOp(infinicclRedOp_t op) { return op == infinicclAvg ? infinicclSum : op; }

// Groups of one size k: ReduceScatter in the group (CCL) leaves local rank j
// the reduced shard j (count/k elements, in its own block of recvbuff), the
// ranks holding shard j in every group AllReduce it across groups, AllGather
// in the group puts the shards together. The count % k elements left over
// take the leaders' form (below), which is cheap at that size.
Status AllReduceSharded(Ctx &c, const CollArgs &a, int nranks) {
  Topology &t = c.t;
  const size_t elem = DataTypeSize(a.dtype), k = static_cast<size_t>(t.local_size);
  const size_t q = a.count / k, r = a.count % k, j = static_cast<size_t>(t.local_rank);
  const int m = t.group_count();
  const infinicclRedOp_t op = LevelOp(a.op);
  if (q > 0) {
    char *shard = At(a.recvbuff, j * q * elem);
    INFINICCL_RETURN_IF_ERROR(InGroup(c, Sub(a, CollKind::kReduceScatter, a.sendbuff, shard, q,
                                             op, 0, t.local_size, t.local_rank)));
    CollArgs across = Sub(a, CollKind::kAllReduce, shard, shard, q, a.op, 0, m, 0);
    across.avg_divisor = nranks;
    INFINICCL_RETURN_IF_ERROR(Across(c, *t.shard_mpi, m, across));
    INFINICCL_RETURN_IF_ERROR(InGroup(c, Sub(a, CollKind::kAllGather, shard, a.recvbuff, q,
                                             op, 0, t.local_size, t.local_rank)));
  }
  if (r > 0) {
    const size_t off = k * q * elem;
    const void *send = At(a.sendbuff, off);
    char *recv = At(a.recvbuff, off);
    INFINICCL_RETURN_IF_ERROR(
        InGroup(c, Sub(a, CollKind::kAllReduce, send, recv, r, op, 0, t.local_size, 0)));
    if (t.leader()) {
      CollArgs across = Sub(a, CollKind::kAllReduce, recv, recv, r, a.op, 0, m, 0);
      across.avg_divisor = nranks;
      INFINICCL_RETURN_IF_ERROR(Across(c, *t.leader_mpi, m, across));
    }
    INFINICCL_RETURN_IF_ERROR(
        InGroup(c, Sub(a, CollKind::kBroadcast, recv, recv, r, op, 0, t.local_size, 0)));
  }
  AnnounceOnce(t, 1u,
               "AllReduce hierarchical by shard: ReduceScatter in each group, AllReduce of "
               "each shard across groups, AllGather in each group");
  return Status::Ok();
}

// Groups of different sizes: Reduce to the leader (local rank 0) in each
// group, AllReduce among the leaders, Broadcast in each group.
Status AllReduceLeaders(Ctx &c, const CollArgs &a, int nranks) {
  Topology &t = c.t;
  const infinicclRedOp_t op = LevelOp(a.op);
  INFINICCL_RETURN_IF_ERROR(InGroup(
      c, Sub(a, CollKind::kReduce, a.sendbuff, a.recvbuff, a.count, op, 0, t.local_size, 0)));
  if (t.leader()) {
    CollArgs across =
        Sub(a, CollKind::kAllReduce, a.recvbuff, a.recvbuff, a.count, a.op, 0,
            t.group_count(), 0);
    across.avg_divisor = nranks;
    INFINICCL_RETURN_IF_ERROR(Across(c, *t.leader_mpi, t.group_count(), across));
  }
  INFINICCL_RETURN_IF_ERROR(InGroup(c, Sub(a, CollKind::kBroadcast, a.recvbuff, a.recvbuff,
                                           a.count, op, 0, t.local_size, 0)));
  AnnounceOnce(t, 2u,
               "AllReduce hierarchical through the leaders (groups differ in size): Reduce "
               "to each group's leader, AllReduce among leaders, Broadcast in each group");
  return Status::Ok();
}

}  // namespace

bool HasHierForm(CollKind kind) { return kind == CollKind::kAllReduce; }

Status RunHierarchical(Topology &t, DeviceRuntime *device, const CollArgs &a,
                       BufferPlacement placement, int nranks, const void *owner) {
  Ctx c{t, device, placement, owner};
  switch (a.kind) {
    case CollKind::kAllReduce:
      return t.equal_groups && t.shard_mpi != nullptr ? AllReduceSharded(c, a, nranks)
                                                       : AllReduceLeaders(c, a, nranks);
    default:
      break;
  }
  return MakeStatus(infinicclInternalError, "%s has no hierarchical form",
                    CollKindName(a.kind));
}

}  // namespace infiniccl
