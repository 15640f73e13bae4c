#include "hier/topology.h"

#include <cstdlib>

#include "core/config.h"
#include "mpi/fault_tolerance.h"
#include "mpi/mpi_thread.h"

namespace infiniccl {

namespace {
std::atomic<uint64_t> g_counts[4];
}  // namespace

HierStats GetHierStats() {
  HierStats s;
  s.sharded = g_counts[0].load();
  s.leader = g_counts[1].load();
  s.other = g_counts[2].load();
  s.group_shm = g_counts[3].load();
  return s;
}

void CountHier(int form) { g_counts[form].fetch_add(1); }

Topology::Place Topology::PlaceOf(int rank) const {
  for (size_t g = 0; g < groups.size(); ++g) {
    const std::vector<int> &r = groups[g].ranks;
    for (size_t i = 0; i < r.size(); ++i)
      if (r[i] == rank) return {static_cast<int>(g), static_cast<int>(i)};
  }
  return {};
}

Status Topology::ReserveScratch(DeviceRuntime *device, CollKind kind, size_t send_bytes) {
  if (kind != CollKind::kReduce && kind != CollKind::kReduceScatter) return Status::Ok();
  void *unused = nullptr;
  return Scratch(device, send_bytes, &unused);
}

Status Topology::Scratch(DeviceRuntime *device, size_t bytes, void **out) {
  std::lock_guard<std::mutex> lock(scratch_mutex_);
  if (device != scratch_device_ || bytes > scratch_bytes_) {
    if (scratch_ != nullptr) retired_.push_back({scratch_device_, scratch_});
    scratch_ = nullptr;
    scratch_bytes_ = 0;
    scratch_device_ = nullptr;
    void *p = nullptr;
    if (device != nullptr) {
      INFINICCL_RETURN_IF_ERROR(device->Malloc(&p, bytes));
    } else if ((p = std::malloc(bytes)) == nullptr) {
      return MakeStatus(infinicclSystemError,
                        "out of host memory for %zu bytes of two-level scratch", bytes);
    }
    scratch_device_ = device;
    scratch_ = p;
    scratch_bytes_ = bytes;
  }
  *out = scratch_;
  return Status::Ok();
}

void Topology::FreeScratch() {
  for (const Retired &r : retired_) {
    if (r.device != nullptr) {
      (void)r.device->Free(r.ptr);
    } else {
      std::free(r.ptr);
    }
  }
  retired_.clear();
  if (scratch_ == nullptr) return;
  if (scratch_device_ != nullptr) {
    (void)scratch_device_->Free(scratch_);  // nothing to tell a caller here
  } else {
    std::free(scratch_);
  }
  scratch_ = nullptr;
  scratch_bytes_ = 0;
  scratch_device_ = nullptr;
}

void Topology::Revoke() {
  for (Backend *b : {group_ccl.get(), group_mpi.get(), leader_mpi.get(), shard_mpi.get()}) {
    if (b != nullptr) b->Revoke();
  }
  if (group_shm) group_shm->Revoke();
}

void Topology::AbortMpi(bool ft_revoke) {
  for (MPI_Comm c : {group_comm, leader_comm, shard_comm}) {
    if (c == MPI_COMM_NULL) continue;
    mpi::RevokeLocally(c, /*aborted=*/true);
    if (ft_revoke && mpi::FtCompiled()) (void)mpi::Revoke(c);
  }
}

void Topology::Release(bool free_comms) {
  group_ccl.reset();  // first: destroying it waits for its queued work
  FreeScratch();
  group_mpi.reset();
  group_shm.reset();
  leader_mpi.reset();
  shard_mpi.reset();
  if (!free_comms) return;
  mpi::SerialLock lock;
  for (MPI_Comm *c : {&group_comm, &leader_comm, &shard_comm}) {
    if (*c == MPI_COMM_NULL) continue;
    mpi::ForgetRevoked(*c);
    MPI_Comm_free(c);
  }
}

namespace {
std::string RankList(const std::vector<int> &ranks) {
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : ",") + std::to_string(r);
  return out;
}
}  // namespace

std::string Topology::DescribeStep(int s) const {
  if (groups.empty() || my_group >= group_count()) return "not in a two-level step";
  const Group &mine = groups[static_cast<size_t>(my_group)];
  const std::string group = "group " + std::to_string(my_group) + " (ranks " +
                            RankList(mine.ranks) + ")";
  std::vector<int> across;
  for (const Group &g : groups) {
    const size_t at = s == kAcrossShards ? static_cast<size_t>(local_rank) : 0;
    if (at < g.ranks.size()) across.push_back(g.ranks[at]);
  }
  switch (s) {
    case kInGroupCcl: return "inside " + group + " on its " + mine.ccl;
    case kInGroupShm: return "inside " + group + " on shared memory";
    case kInGroupMpi: return "inside " + group + " on MPI";
    case kAcrossLeaders:
      return "across groups, among the leaders (ranks " + RankList(across) + ") on MPI";
    case kAcrossShards:
      return "across groups, among the ranks holding shard " + std::to_string(local_rank) +
             " (ranks " + RankList(across) + ") on MPI";
    default: return "not in a two-level step";
  }
}

std::vector<std::string> Topology::Describe() const {
  std::vector<std::string> out;
  for (size_t g = 0; g < groups.size(); ++g) {
    const Group &gr = groups[g];
    const std::string ranks = RankList(gr.ranks);
    out.push_back("group " + std::to_string(g) + ": node " + std::to_string(gr.node) + ", " +
                  (gr.has_device ? DeviceKindName(gr.kind) : "host-only") + " x" +
                  std::to_string(gr.ranks.size()) + " (ranks " + ranks + "), " +
                  (gr.ccl.empty() ? std::string("no CCL (shared memory inside unless INFINICCL_SHM=0, "
                                              "else MPI, staged for device buffers)")
                                  : gr.ccl) +
                  ", leader " + std::to_string(gr.ranks.front()));
  }
  if (hierarchical) {
    out.push_back(std::string("hierarchical: ") + std::to_string(nodes) + " node(s), " +
                  std::to_string(groups.size()) + " groups" +
                  (inside_shm ? " (inside each: shared memory, no CCL)" : "") + "; AllReduce " +
                  (equal_groups ? "by shard (ReduceScatter in group, AllReduce across "
                                  "groups by the ranks of each shard, AllGather in group)"
                                : "through the leaders (groups differ in size: reduce to "
                                  "the leader, MPI among leaders, broadcast in group)") +
                  "; Broadcast, Reduce" +
                  (consecutive_groups ? ", AllGather, ReduceScatter" : "") +
                  " through the leaders" +
                  (consecutive_groups ? "" : " (AllGather, ReduceScatter flat: groups hold "
                                             "ranks that are not consecutive)"));
    // Which calls take the forms: from what size (each rank's buffer).
    const size_t configured = GlobalConfig().hierarchy_min_bytes;
    std::string from = "two-level from (INFINICCL_HIERARCHY_MIN_BYTES=" +
                       (configured == kHierMinBytesAuto ? "auto" : BytesText(configured)) +
                       "):";
    for (CollKind k : {CollKind::kAllReduce, CollKind::kBroadcast, CollKind::kReduce,
                       CollKind::kAllGather, CollKind::kReduceScatter}) {
      const size_t min = HierMinBytes(k, *this, configured);
      from += std::string(k == CollKind::kAllReduce ? " " : ", ") + CollKindName(k) + " " +
              (min != SIZE_MAX ? BytesText(min)
               : k == CollKind::kAllReduce && FlatAllReduceIsTwoLevel(*this)
                   ? "never (MPI's own AllReduce crosses groups no more here)"
                   : "never");
    }
    out.push_back(from);
  } else {
    out.push_back("flat (no hierarchy): " + why);
  }
  return out;
}

namespace {

bool HasHierForm(CollKind kind, const Topology &t) {
  switch (kind) {
    case CollKind::kAllReduce:
    case CollKind::kBroadcast:
    case CollKind::kReduce: return true;
    case CollKind::kAllGather:
    case CollKind::kReduceScatter: return t.consecutive_groups;
    default: return false;
  }
}

bool PowerOfTwo(size_t x) { return x != 0 && (x & (x - 1)) == 0; }

}  // namespace

bool FlatAllReduceIsTwoLevel(const Topology &t) {
  return t.equal_groups && t.consecutive_groups && !t.groups.empty() &&
         PowerOfTwo(t.GroupSize(0)) && PowerOfTwo(t.groups.size());
}

size_t HierMinBytes(CollKind kind, const Topology &t, size_t configured) {
  if (!HasHierForm(kind, t)) return SIZE_MAX;
  if (configured != kHierMinBytesAuto) return configured;
  if (kind != CollKind::kAllReduce) return size_t{64} << 10;
  return FlatAllReduceIsTwoLevel(t) && !t.inside_shm ? SIZE_MAX : size_t{16} << 20;
}

}  // namespace infiniccl
