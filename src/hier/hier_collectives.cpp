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

// One sub-call's arguments: `a`'s stream, dtype and op, over `nranks`
// ranks of which this is `rank`, with the buffer sizes and in-place flag
// validation would have set (NCCL's rules).
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
  b.avg_divisor = 0;
  SetShape(&b, DataTypeSize(a.dtype), rank, nranks);
  return b;
}

bool OnDevice(const PointerInfo &info) {
  return info.space == MemorySpace::kDevice || info.space == MemorySpace::kManaged;
}

// Where a step's own buffers are, on c.device: the caller's, or the
// topology's device scratch, which the call's placement does not describe
// (a step may write the group's scratch where the call has no receive
// buffer at this rank: a lone leader's part of a Reduce to another group's
// root, which the placement calls host). A side without bytes, or one
// Classify cannot place, keeps the call's placement.
BufferPlacement StepPlacement(const Ctx &c, const CollArgs &b) {
  BufferPlacement p = c.placement;
  PointerInfo info;
  if (b.send_bytes > 0 && c.device->Classify(b.sendbuff, &info).ok()) {
    p.send_on_device = OnDevice(info);
  }
  if (b.recv_bytes > 0 && c.device->Classify(b.recvbuff, &info).ok()) {
    p.recv_on_device = OnDevice(info);
  }
  return p;
}

// A call over one rank: the result is the send buffer (a reduction of one
// contribution, a broadcast or gather of its own block).
Status RunAlone(Ctx &c, const CollArgs &b) {
  if (b.recvbuff == nullptr || b.sendbuff == b.recvbuff || b.in_place) return Status::Ok();
  if (c.device != nullptr) {
    // The copy's own buffers decide its direction.
    return RunLocalCopy(*c.device, b, StepPlacement(c, b), /*stream_ordered=*/false);
  }
  std::memmove(b.recvbuff, b.sendbuff, b.recv_bytes);
  return Status::Ok();
}

// Inside this rank's group: its CCL on device buffers where it has one and
// it can take the step, otherwise the group's shared memory (host buffers,
// and device buffers copied in and out by the device runtime), otherwise MPI
// on the group's communicator (staged for device buffers). What a CCL or the
// segment cannot take (Unsupported: HCCL's and CNCL's missing types and ops,
// 16-bit integer reductions, the collectives the segment has no form for) is
// a function of the arguments alone, so every rank of the group decides
// alike.
Status InGroup(Ctx &c, const CollArgs &b) {
  Topology &t = c.t;
  if (t.local_size == 1) return RunAlone(c, b);
  const bool ccl =
      c.device != nullptr && t.group_ccl != nullptr && t.group_ccl->Unsupported(b) == nullptr;
  // The segment within its size limits (ShmBackend::Takes): every size for
  // a group of devices without a CCL, whose buffers cross host memory anyway.
  const Topology::Group &mine = t.groups[static_cast<size_t>(t.my_group)];
  const bool shm =
      !ccl && t.group_shm != nullptr && t.group_shm->Takes(b, mine.has_device && mine.ccl.empty());
  t.step.store(ccl   ? Topology::kInGroupCcl
               : shm ? Topology::kInGroupShm
                     : Topology::kInGroupMpi,
               std::memory_order_relaxed);
  if (ccl) return t.group_ccl->Run(b);
  if (shm) {
    CountHier(3);
    if (c.device == nullptr) return t.group_shm->RunOn(b, nullptr, false, false);
    const BufferPlacement p = StepPlacement(c, b);
    return t.group_shm->RunOn(b, c.device, p.send_on_device, p.recv_on_device);
  }
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
  Topology &t = c.t;
  t.step.store(&backend == t.shard_mpi.get() ? Topology::kAcrossShards
                                             : Topology::kAcrossLeaders,
               std::memory_order_relaxed);
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
    CollArgs across = Sub(a, CollKind::kAllReduce, shard, shard, q, a.op, 0, m, t.my_group);
    across.avg_divisor = nranks;
    INFINICCL_RETURN_IF_ERROR(Across(c, *t.shard_mpi, m, across));
    INFINICCL_RETURN_IF_ERROR(InGroup(c, Sub(a, CollKind::kAllGather, shard, a.recvbuff, q,
                                             op, 0, t.local_size, t.local_rank)));
  }
  if (r > 0) {
    const size_t off = k * q * elem;
    const void *send = At(a.sendbuff, off);
    char *recv = At(a.recvbuff, off);
    INFINICCL_RETURN_IF_ERROR(InGroup(
        c, Sub(a, CollKind::kAllReduce, send, recv, r, op, 0, t.local_size, t.local_rank)));
    if (t.leader()) {
      CollArgs across = Sub(a, CollKind::kAllReduce, recv, recv, r, a.op, 0, m, t.my_group);
      across.avg_divisor = nranks;
      INFINICCL_RETURN_IF_ERROR(Across(c, *t.leader_mpi, m, across));
    }
    INFINICCL_RETURN_IF_ERROR(InGroup(
        c, Sub(a, CollKind::kBroadcast, recv, recv, r, op, 0, t.local_size, t.local_rank)));
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
  INFINICCL_RETURN_IF_ERROR(InGroup(c, Sub(a, CollKind::kReduce, a.sendbuff, a.recvbuff,
                                           a.count, op, 0, t.local_size, t.local_rank)));
  if (t.leader()) {
    CollArgs across =
        Sub(a, CollKind::kAllReduce, a.recvbuff, a.recvbuff, a.count, a.op, 0,
            t.group_count(), t.my_group);
    across.avg_divisor = nranks;
    INFINICCL_RETURN_IF_ERROR(Across(c, *t.leader_mpi, t.group_count(), across));
  }
  INFINICCL_RETURN_IF_ERROR(InGroup(c, Sub(a, CollKind::kBroadcast, a.recvbuff, a.recvbuff,
                                           a.count, op, 0, t.local_size, t.local_rank)));
  AnnounceOnce(t, 2u,
               "AllReduce hierarchical through the leaders (groups differ in size): Reduce "
               "to each group's leader, AllReduce among leaders, Broadcast in each group");
  return Status::Ok();
}

// Broadcast: in the root's group from the root, among the leaders from the
// root's group's leader, then in every other group from its leader. Each
// leader receives the buffer once across groups (the flat path sends it to
// every rank across the slow link).
Status BroadcastTwoLevel(Ctx &c, const CollArgs &a) {
  Topology &t = c.t;
  const Topology::Place root = t.PlaceOf(a.root);
  const size_t count = a.count;
  if (t.my_group == root.group) {
    INFINICCL_RETURN_IF_ERROR(InGroup(c, Sub(a, CollKind::kBroadcast, a.sendbuff, a.recvbuff,
                                             count, a.op, root.local, t.local_size,
                                             t.local_rank)));
  }
  if (t.leader()) {
    INFINICCL_RETURN_IF_ERROR(Across(c, *t.leader_mpi, t.group_count(),
                                     Sub(a, CollKind::kBroadcast, a.recvbuff, a.recvbuff, count,
                                         a.op, root.group, t.group_count(), t.my_group)));
  }
  if (t.my_group != root.group) {
    INFINICCL_RETURN_IF_ERROR(InGroup(c, Sub(a, CollKind::kBroadcast, a.recvbuff, a.recvbuff,
                                             count, a.op, 0, t.local_size, t.local_rank)));
  }
  AnnounceOnce(t, 4u,
               "Broadcast hierarchical: in the root's group, among the groups' leaders, in "
               "each other group");
  return Status::Ok();
}

// Reduce: to the leader in each group (the root itself when it leads its
// group; the others into the communicator's scratch), among the leaders to
// the root's group's leader (Avg divided there), and, when the root does
// not lead its group, from that leader to the root by a Broadcast in the
// root's group whose other ranks receive into scratch (recvbuff is the
// root's only: NCCL leaves the others' untouched, and so does this).
Status ReduceTwoLevel(Ctx &c, const CollArgs &a, int nranks) {
  Topology &t = c.t;
  const Topology::Place root = t.PlaceOf(a.root);
  const bool is_root = t.my_group == root.group && t.local_rank == root.local;
  const bool root_group = t.my_group == root.group;
  const bool needs_scratch = !is_root && (t.leader() || (root_group && root.local != 0));
  void *scratch = a.recvbuff;
  if (needs_scratch) {
    INFINICCL_RETURN_IF_ERROR(
        t.Scratch(c.device, a.count * DataTypeSize(a.dtype), &scratch));
  }
  // This rank's partial result (a leader's) or sink (root's group).
  void *mine = is_root ? a.recvbuff : scratch;
  INFINICCL_RETURN_IF_ERROR(InGroup(c, Sub(a, CollKind::kReduce, a.sendbuff, mine, a.count,
                                           LevelOp(a.op), 0, t.local_size, t.local_rank)));
  if (t.leader()) {
    CollArgs across = Sub(a, CollKind::kReduce, mine, mine, a.count, a.op, root.group,
                          t.group_count(), t.my_group);
    across.avg_divisor = nranks;
    INFINICCL_RETURN_IF_ERROR(Across(c, *t.leader_mpi, t.group_count(), across));
  }
  if (root_group && root.local != 0) {
    INFINICCL_RETURN_IF_ERROR(InGroup(c, Sub(a, CollKind::kBroadcast, mine, mine, a.count,
                                             a.op, 0, t.local_size, t.local_rank)));
  }
  AnnounceOnce(t, 8u,
               "Reduce hierarchical: to each group's leader, among the leaders, to the root");
  return Status::Ok();
}

// AllGather (groups of consecutive ranks): Gather to the leader in each
// group, straight into the group's blocks of recvbuff; the leaders
// exchange the groups' blocks (one AllGather when the groups are of one
// size, else a Broadcast from each leader); Broadcast of the whole buffer
// in each group.
Status AllGatherTwoLevel(Ctx &c, const CollArgs &a) {
  Topology &t = c.t;
  const size_t block = a.count * DataTypeSize(a.dtype);
  const int m = t.group_count();
  const size_t mine_first = t.FirstRank(t.my_group);
  INFINICCL_RETURN_IF_ERROR(InGroup(
      c, Sub(a, CollKind::kGather, a.sendbuff, At(a.recvbuff, mine_first * block),
             a.count, a.op, 0, t.local_size, t.local_rank)));
  if (t.leader()) {
    if (t.equal_groups) {
      const size_t k = t.GroupSize(0);
      INFINICCL_RETURN_IF_ERROR(
          Across(c, *t.leader_mpi, m,
                 Sub(a, CollKind::kAllGather, At(a.recvbuff, mine_first * block),
                     a.recvbuff, a.count * k, a.op, 0, m, t.my_group)));
    } else {
      for (int g = 0; g < m; ++g) {
        void *region = At(a.recvbuff, t.FirstRank(g) * block);
        INFINICCL_RETURN_IF_ERROR(Across(c, *t.leader_mpi, m,
                                         Sub(a, CollKind::kBroadcast, region, region,
                                             a.count * t.GroupSize(g), a.op, g, m, t.my_group)));
      }
    }
  }
  const size_t n = t.FirstRank(m - 1) + t.GroupSize(m - 1);
  INFINICCL_RETURN_IF_ERROR(InGroup(c, Sub(a, CollKind::kBroadcast, a.recvbuff, a.recvbuff,
                                           a.count * n, a.op, 0, t.local_size, t.local_rank)));
  AnnounceOnce(t, 16u,
               "AllGather hierarchical: Gather to each group's leader, the groups' blocks "
               "among the leaders, Broadcast in each group");
  return Status::Ok();
}

// ReduceScatter (groups of consecutive ranks): Reduce of the whole send
// buffer to the leader in each group (into scratch), the leaders reduce
// each group's blocks to that group's leader (one ReduceScatter when the
// groups are of one size, else a Reduce per group; Avg divided there),
// Scatter of the group's blocks from the leader.
Status ReduceScatterTwoLevel(Ctx &c, const CollArgs &a, int nranks) {
  Topology &t = c.t;
  const size_t block = a.count * DataTypeSize(a.dtype);
  const int m = t.group_count();
  const size_t mine_first = t.FirstRank(t.my_group);
  const size_t n = static_cast<size_t>(nranks);
  void *scratch = nullptr;
  if (t.leader()) INFINICCL_RETURN_IF_ERROR(t.Scratch(c.device, n * block, &scratch));
  INFINICCL_RETURN_IF_ERROR(InGroup(c, Sub(a, CollKind::kReduce, a.sendbuff, scratch,
                                           a.count * n, LevelOp(a.op), 0, t.local_size,
                                           t.local_rank)));
  // The group's blocks of the reduced buffer: the leader's only (no offset
  // from a null pointer elsewhere; the Scatter ignores a non-root's).
  void *mine = t.leader() ? At(scratch, mine_first * block) : nullptr;
  if (t.leader()) {
    if (t.equal_groups) {
      CollArgs across = Sub(a, CollKind::kReduceScatter, scratch, mine, a.count * t.GroupSize(0),
                            a.op, 0, m, t.my_group);
      across.avg_divisor = nranks;
      INFINICCL_RETURN_IF_ERROR(Across(c, *t.leader_mpi, m, across));
    } else {
      for (int g = 0; g < m; ++g) {
        void *region = At(scratch, t.FirstRank(g) * block);
        CollArgs across = Sub(a, CollKind::kReduce, region, region, a.count * t.GroupSize(g),
                              a.op, g, m, t.my_group);
        across.avg_divisor = nranks;
        INFINICCL_RETURN_IF_ERROR(Across(c, *t.leader_mpi, m, across));
      }
    }
  }
  INFINICCL_RETURN_IF_ERROR(InGroup(c, Sub(a, CollKind::kScatter, mine, a.recvbuff, a.count,
                                           a.op, 0, t.local_size, t.local_rank)));
  AnnounceOnce(t, 32u,
               "ReduceScatter hierarchical: Reduce to each group's leader, the groups' "
               "blocks among the leaders, Scatter in each group");
  return Status::Ok();
}

}  // namespace

Status RunHierarchical(Topology &t, DeviceRuntime *device, const CollArgs &a,
                       BufferPlacement placement, int nranks, const void *owner) {
  Ctx c{t, device, placement, owner};
  struct StepReset {
    Topology &t;
    ~StepReset() { t.step.store(Topology::kNoStep, std::memory_order_relaxed); }
  } reset{t};
  Status st = MakeStatus(infinicclInternalError, "%s has no hierarchical form",
                         CollKindName(a.kind));
  switch (a.kind) {
    case CollKind::kAllReduce:
      st = t.equal_groups && t.shard_mpi != nullptr ? AllReduceSharded(c, a, nranks)
                                                     : AllReduceLeaders(c, a, nranks);
      break;
    case CollKind::kBroadcast: st = BroadcastTwoLevel(c, a); break;
    case CollKind::kReduce: st = ReduceTwoLevel(c, a, nranks); break;
    case CollKind::kAllGather: st = AllGatherTwoLevel(c, a); break;
    case CollKind::kReduceScatter: st = ReduceScatterTwoLevel(c, a, nranks); break;
    default: return st;
  }
  if (!st.ok()) {
    // The steps after the failed one will not run here, and the peers of
    // this rank's group (or of its shard, or the other leaders) may wait in
    // them for it: every transport of the two levels is revoked, so that
    // their waits end with an error too (with a fault-tolerant MPI for the
    // MPI steps; shared memory's always).
    t.Revoke();
    LogPrint(LogLevel::kWarn, "two-level %s failed on this rank (%s); its group and "
             "cross-group transports are revoked so that the peers waiting on it return",
             CollKindName(a.kind), st.message().c_str());
  }
  return st;
}

}  // namespace infiniccl
