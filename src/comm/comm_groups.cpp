// The groups of a communicator made under MPI (by node and device kind),
// its CCL communicator, and the two-level path (hier/) where the groups
// allow it: AttachGroups, which every communicator made under MPI takes.
#include <climits>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "backend/ccl/ccl_provider.h"
#include "backend/mpi/mpi_backend.h"
#include "comm/comm_attach.h"
#include "core/config.h"
#include "core/log.h"
#include "device/registry.h"
#include "mpi/mpi_error.h"
#include "mpi/mpi_thread.h"

namespace infiniccl {

namespace {

// Why this rank cannot join a CCL communicator; 0 when it can. Ordered so
// that the largest over all ranks is the reason worth reporting.
enum Eligibility { kEligible = 0, kSharedDevice = 1, kNoCcl = 2 };

// Not an error even under INFINICCL_BACKEND=ccl: the communicator is still
// made, and each call that needs the CCL then fails with the reason.
Status NoCcl(BackendChoice choice, const char *why) {
  if (choice == BackendChoice::kCcl) {
    INFINICCL_WARN(
        "INFINICCL_BACKEND=ccl but no CCL communicator: %s; device collectives "
        "on this communicator will fail",
        why);
  } else {
    INFINICCL_INFO("no CCL communicator: %s; device buffers go to MPI", why);
  }
  return Status::Ok();
}
// This rank's node as the smallest communicator rank on it: the ranks
// MPI_COMM_TYPE_SHARED puts together (tests/nodes emulates several nodes on
// one machine).
Status NodeKey(Communicator &c, int *key) {
  MPI_Comm node = MPI_COMM_NULL;
  {
    mpi::SerialLock lock;
    INFINICCL_RETURN_IF_ERROR(MpiCheck(MPI_Comm_split_type(c.mpi_comm(), MPI_COMM_TYPE_SHARED,
                                                           c.rank(), MPI_INFO_NULL, &node),
                                       "MPI_Comm_split_type"));
  }
  int me = c.rank();
  const int rc = MPI_Allreduce(&me, key, 1, MPI_INT, MPI_MIN, node);
  MPI_Comm_free(&node);
  return MpiCheck(rc, "MPI_Allreduce");
}

// Whether this rank may join a CCL communicator of its group.
bool CclEligible(const Communicator &c) {
  const Communicator::Binding &b = c.binding();
  return b.device >= 0 && !b.shared && CclForKind(b.kind) != nullptr;
}

// The groups of a communicator made under MPI: ranks by node, then by the
// device kind they are bound to (host-only ranks: a group of their own).
// Collective over c's MPI communicator; the result is the same everywhere.
Status BuildGroups(Communicator &c, Topology *t) {
  int key = 0;
  INFINICCL_RETURN_IF_ERROR(NodeKey(c, &key));
  const Communicator::Binding &b = c.binding();
  const int mine[3] = {key, b.device >= 0 ? static_cast<int>(b.kind) : -1,
                       CclEligible(c) ? 1 : 0};
  std::vector<int> all(3 * static_cast<size_t>(c.size()));
  INFINICCL_RETURN_IF_ERROR(MpiCheck(
      MPI_Allgather(mine, 3, MPI_INT, all.data(), 3, MPI_INT, c.mpi_comm()), "MPI_Allgather"));
  std::map<int, int> node_index;
  std::map<std::pair<int, int>, int> group_index;
  for (int r = 0; r < c.size(); ++r) {
    const int node = all[3 * r], kind = all[3 * r + 1];
    auto n = node_index.emplace(node, static_cast<int>(node_index.size())).first;
    auto g = group_index.emplace(std::make_pair(node, kind), static_cast<int>(t->groups.size()));
    if (g.second) {
      Topology::Group group;
      group.node = n->second;
      group.has_device = kind >= 0;
      group.kind = kind >= 0 ? static_cast<DeviceKind>(kind) : DeviceKind::kCpu;
      t->groups.push_back(group);
    }
    Topology::Group &group = t->groups[static_cast<size_t>(g.first->second)];
    if (r == c.rank()) {
      t->my_group = g.first->second;
      t->local_rank = static_cast<int>(group.ranks.size());
    }
    group.ranks.push_back(r);
  }
  t->nodes = static_cast<int>(node_index.size());
  t->local_size = static_cast<int>(t->groups[static_cast<size_t>(t->my_group)].ranks.size());
  t->equal_groups = true;
  t->consecutive_groups = true;
  for (const Topology::Group &g : t->groups) {
    t->equal_groups = t->equal_groups && g.ranks.size() == t->groups.front().ranks.size();
    const int span = g.ranks.back() - g.ranks.front() + 1;
    t->consecutive_groups = t->consecutive_groups && span == static_cast<int>(g.ranks.size());
  }
  // How device buffers move through MPI here, agreed so that every rank
  // cuts a flat or cross-group staged call alike (hier/topology.h).
  {
    DeviceRuntime *rt = b.device >= 0 ? DeviceRegistry::Get(b.kind) : nullptr;
    const bool direct = rt != nullptr && c.mpi_backend().ReadsDeviceMemory(b.kind);
    const Config &cfg = GlobalConfig();
    const long long chunk = static_cast<long long>(
        cfg.pipeline_chunk_bytes != 0 ? cfg.pipeline_chunk_bytes
        : rt != nullptr               ? rt->DefaultChunkBytes()
                                      : 0);
    const long long in[5] = {rt != nullptr && !direct ? 1 : 0, rt == nullptr ? 1 : 0,
                             direct ? 1 : 0, rt != nullptr ? chunk : 0,
                             rt != nullptr ? -chunk : LLONG_MIN};
    long long out[5] = {0, 0, 0, 0, 0};
    INFINICCL_RETURN_IF_ERROR(MpiCheck(
        MPI_Allreduce(in, out, 5, MPI_LONG_LONG, MPI_MAX, c.mpi_comm()), "MPI_Allreduce"));
    const bool any_stages = out[0] != 0, any_host = out[1] != 0, any_direct = out[2] != 0;
    const long long max_chunk = out[3], min_chunk = out[4] == LLONG_MIN ? 0 : -out[4];
    t->across_staged = any_stages;
    t->across_chunk_bytes = min_chunk > 0 ? static_cast<size_t>(min_chunk) : size_t{4} << 20;
    t->uniform_staging = any_stages && (any_host || any_direct || min_chunk != max_chunk);
  }
  // Which groups may have a CCL: every rank eligible and two or more ranks.
  t->why = "one group";
  for (size_t g = 0; g < t->groups.size(); ++g) {
    bool eligible = t->groups[g].ranks.size() >= 2;
    for (int r : t->groups[g].ranks) eligible = eligible && all[3 * r + 2] == 1;
    if (eligible) t->groups[g].ccl = "?";  // planned; named once made
  }
  return Status::Ok();
}

// A CCL communicator over the ranks of `comm` (this one `rank` of `size`):
// over MPI itself (the emulated CCL), or from a unique id that rank 0 makes
// and MPI broadcasts. Collective over `comm`; the status is this rank's
// (the callers agree on the outcome).
Status MakeCclComm(CclProvider &ccl, MPI_Comm comm, int rank, int size,
                   std::unique_ptr<Backend> *out) {
  if (ccl.MadeOverMpi()) return ccl.CreateCommOverMpi(comm, out);
  infinicclUniqueId id;
  std::memset(&id, 0, sizeof id);
  int id_ok = 1;
  Status st;
  if (rank == 0) {
    st = ccl.GetUniqueId(&id);
    id_ok = st.ok() ? 1 : 0;
  }
  INFINICCL_RETURN_IF_ERROR(MpiCheck(MPI_Bcast(&id_ok, 1, MPI_INT, 0, comm), "MPI_Bcast"));
  if (!id_ok) {
    return st.ok() ? Status(infinicclSystemError,
                            "the first rank could not make a unique id (see its log)")
                   : st;
  }
  INFINICCL_RETURN_IF_ERROR(
      MpiCheck(MPI_Bcast(id.internal, sizeof id.internal, MPI_BYTE, 0, comm), "MPI_Bcast"));
  return ccl.CreateComm(size, id, rank, out);
}

Status SplitOff(MPI_Comm parent, int color, int key, MPI_Comm *out) {
  mpi::SerialLock lock;
  INFINICCL_RETURN_IF_ERROR(
      MpiCheck(MPI_Comm_split(parent, color, key, out), "MPI_Comm_split"));
  if (*out != MPI_COMM_NULL) MPI_Comm_set_errhandler(*out, MPI_ERRORS_RETURN);
  return Status::Ok();
}

// The two-level path (hier/): a communicator of each group, a CCL
// communicator for each group that can have one, the leaders' and (groups
// of one size) the shards' communicators. Collective over c's MPI
// communicator. A group whose CCL fails to form turns the whole
// communicator back to the flat paths (every rank agrees).
Status AttachHierarchy(Communicator &c, Topology *t) {
  const Config &cfg = GlobalConfig();
  int planned = 0;
  for (Topology::Group &g : t->groups) planned += g.ccl.empty() ? 0 : 1;
  if (cfg.hierarchy == Tristate::kOff) {
    t->why = "INFINICCL_HIERARCHY=0";
  } else if (cfg.backend != BackendChoice::kAuto) {
    t->why = std::string("INFINICCL_BACKEND=") + BackendChoiceName(cfg.backend);
  } else if (t->groups.size() < 2) {
    t->why = "one group";
  } else if (cfg.hierarchy == Tristate::kAuto && planned == 0 && cfg.shm == Tristate::kOff) {
    t->why = "no group has a CCL of two or more ranks, and INFINICCL_SHM=0 (INFINICCL_HIERARCHY=1 "
             "forces it)";
  } else {
    t->why.clear();
  }
  if (!t->why.empty()) {
    for (Topology::Group &g : t->groups) g.ccl.clear();
    return Status::Ok();
  }
  INFINICCL_RETURN_IF_ERROR(SplitOff(c.mpi_comm(), t->my_group, c.rank(), &t->group_comm));
  Topology::Group &mine = t->groups[static_cast<size_t>(t->my_group)];
  // Shared memory inside the group (collective over the group only; every
  // rank of a group has the same local_size).
  if (cfg.shm != Tristate::kOff && t->local_size >= 2) {
    std::string no_shm;
    // Its messages name the communicator's ranks, not the group's.
    INFINICCL_RETURN_IF_ERROR(ShmBackend::Create(
        t->group_comm, t->local_rank, t->local_size, c.binding().kind != DeviceKind::kCpu,
        &t->group_shm, &no_shm, mine.ranks));
    if (t->group_shm == nullptr) INFINICCL_INFO("group %d: no shared memory (%s)", t->my_group,
                                                no_shm.c_str());
  }
  Status st;
  if (!mine.ccl.empty()) {
    CclProvider *ccl = CclForKind(c.binding().kind);
    st = MakeCclComm(*ccl, t->group_comm, t->local_rank, t->local_size, &t->group_ccl);
    if (st.ok()) mine.ccl = ccl->Name();
  }
  // Every group's CCL formed, or the flat paths for all. Bit 0: this
  // rank's CCL (or none planned); bit 1: its group has shared memory (or is
  // one rank).
  std::vector<int> oks(static_cast<size_t>(c.size()));
  const int ok = (st.ok() ? 1 : 0) | (t->group_shm != nullptr || t->local_size < 2 ? 2 : 0);
  INFINICCL_RETURN_IF_ERROR(MpiCheck(
      MPI_Allgather(&ok, 1, MPI_INT, oks.data(), 1, MPI_INT, c.mpi_comm()), "MPI_Allgather"));
  std::string failed;
  bool all_shm = true;
  for (size_t g = 0; g < t->groups.size(); ++g) {
    bool group_ok = true;
    for (int r : t->groups[g].ranks) {
      group_ok = group_ok && (oks[static_cast<size_t>(r)] & 1);
      all_shm = all_shm && (oks[static_cast<size_t>(r)] & 2);
    }
    if (!group_ok) failed += (failed.empty() ? "" : ",") + std::to_string(g);
  }
  // Without a CCL in any group, auto takes two levels for the shared memory
  // inside the groups: only when every group of two or more ranks has it.
  if (failed.empty() && planned == 0 && cfg.hierarchy == Tristate::kAuto && !all_shm) {
    t->Release(/*free_comms=*/true);
    t->why = "no group has a CCL of two or more ranks, and some group has no shared memory";
    return Status::Ok();
  }
  t->inside_shm = planned == 0 && all_shm;
  if (!st.ok()) INFINICCL_WARN("%s", st.message().c_str());
  if (!failed.empty()) {
    if (c.rank() == 0) {
      INFINICCL_WARN("the CCL communicator of group %s could not be made: this communicator "
                     "takes the flat paths",
                     failed.c_str());
    }
    t->Release(/*free_comms=*/true);
    for (Topology::Group &g : t->groups) g.ccl.clear();
    t->why = "the CCL communicator of group " + failed + " could not be made";
    return Status::Ok();
  }
  // The names of the other groups' CCLs: every rank knows the kinds, and a
  // group has a CCL exactly when it was planned (all formed).
  for (Topology::Group &g : t->groups) {
    if (!g.ccl.empty()) g.ccl = CclForKind(g.kind) ? CclForKind(g.kind)->Name() : "CCL";
  }
  INFINICCL_RETURN_IF_ERROR(
      SplitOff(c.mpi_comm(), t->leader() ? 0 : MPI_UNDEFINED, c.rank(), &t->leader_comm));
  if (t->equal_groups) {
    INFINICCL_RETURN_IF_ERROR(
        SplitOff(c.mpi_comm(), t->local_rank, t->my_group, &t->shard_comm));
  }
  const int m = t->group_count();
  t->group_mpi = std::make_unique<MpiBackend>(t->group_comm, t->local_rank, t->local_size);
  if (t->leader_comm != MPI_COMM_NULL)
    t->leader_mpi = std::make_unique<MpiBackend>(t->leader_comm, t->my_group, m);
  if (t->shard_comm != MPI_COMM_NULL)
    t->shard_mpi = std::make_unique<MpiBackend>(t->shard_comm, t->my_group, m);
  t->hierarchical = true;
  if (c.rank() == 0) {
    for (const std::string &line : t->Describe()) INFINICCL_INFO("%s", line.c_str());
  }
  return Status::Ok();
}
// Gives a communicator made under MPI its CCL communicator when every rank
// is bound to its own device of one kind that has a CCL: rank 0 makes the
// unique id, MPI broadcasts it, every rank joins. The decision is
// collective (all ranks agree), so mixed nodes (some ranks without such a
// device) all stay on MPI instead of hanging in the CCL. An error only
// when the CCL itself fails under INFINICCL_BACKEND=ccl.
Status AttachCcl(Communicator &c, const Topology &t) {
  const BackendChoice choice = GlobalConfig().backend;
  if (choice == BackendChoice::kMpi) {
    INFINICCL_INFO("INFINICCL_BACKEND=mpi: no CCL communicator");
    return Status::Ok();
  }
  const Communicator::Binding &b = c.binding();
  CclProvider *ccl = b.device >= 0 ? CclForKind(b.kind) : nullptr;
  const int mine = ccl == nullptr ? kNoCcl : (b.shared ? kSharedDevice : kEligible);
  // Worst eligibility, and min/max of the device kind (equal: one kind).
  int in[3] = {mine, static_cast<int>(b.kind), -static_cast<int>(b.kind)};
  int all[3] = {0, 0, 0};
  INFINICCL_RETURN_IF_ERROR(MpiCheck(
      MPI_Allreduce(in, all, 3, MPI_INT, MPI_MAX, c.mpi_comm()), "MPI_Allreduce"));
  if (all[0] == kNoCcl) {
    return NoCcl(choice,
                 "not every rank is bound to a device with a native CCL (NCCL/MCCL)");
  }
  if (all[0] == kSharedDevice) {
    return NoCcl(choice, "ranks share a device (a CCL needs one device per rank)");
  }
  if (all[1] != -all[2])
    return NoCcl(choice, "ranks are bound to different device kinds");
  // The emulated CCL: over the communicator's own MPI, one node only.
  if (ccl->MadeOverMpi() && t.nodes > 1 && !ccl->SpansNodes()) {
    return NoCcl(choice, "the emulated CCL models one node's links and the ranks span "
                         "several nodes");
  }
  std::unique_ptr<Backend> backend;
  Status st = MakeCclComm(*ccl, c.mpi_comm(), c.rank(), c.size(), &backend);
  int ok = st.ok() ? 1 : 0, all_ok = 0;
  INFINICCL_RETURN_IF_ERROR(MpiCheck(
      MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, c.mpi_comm()), "MPI_Allreduce"));
  if (!all_ok) {
    backend.reset();
    if (!st.ok()) INFINICCL_WARN("%s", st.message().c_str());
    if (choice == BackendChoice::kCcl && !st.ok()) return st;
    return NoCcl(choice, "the CCL communicator could not be made on every rank");
  }
  INFINICCL_INFO("%s communicator over %d ranks: device buffers go to %s", ccl->Name(),
                 c.size(), ccl->Name());
  c.set_ccl_backend(std::move(backend));
  return Status::Ok();
}
}  // namespace

// A communicator made under MPI: its groups, a CCL communicator over every
// rank when they all can have one (unless it has one already, split from
// its parent's), otherwise the two-level path where the groups allow it.
Status AttachGroups(Communicator &c) {
  auto t = std::make_unique<Topology>();
  INFINICCL_RETURN_IF_ERROR(BuildGroups(c, t.get()));
  if (c.ccl_backend() == nullptr) INFINICCL_RETURN_IF_ERROR(AttachCcl(c, *t));
  if (c.ccl_backend() == nullptr) {
    INFINICCL_RETURN_IF_ERROR(AttachHierarchy(c, t.get()));
  } else {
    t->why = "one CCL communicator spans every rank";
    for (Topology::Group &g : t->groups) g.ccl.clear();
  }
  c.set_topology(std::move(t));
  return Status::Ok();
}

}  // namespace infiniccl
