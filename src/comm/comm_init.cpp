#include "comm/comm_init.h"

#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "backend/ccl/ccl_provider.h"
#include "backend/mpi/mpi_backend.h"
#include "comm/binding.h"
#include "comm/watchdog.h"
#include "core/config.h"
#include "core/log.h"
#include "core/rank_list.h"
#include "device/registry.h"
#include "mpi/fault_tolerance.h"
#include "mpi/mpi_error.h"
#include "mpi/mpi_tags.h"
#include "mpi/mpi_thread.h"
#include "staging/pipeline.h"
#include "staging/staging_pool.h"

namespace infiniccl {

// Fills in a Communicator's private parts: the only code that does.
class CommFactory {
 public:
  static std::unique_ptr<Communicator> New() {
    return std::unique_ptr<Communicator>(new Communicator());
  }
  static MPI_Comm &mpi_comm(Communicator &c) { return c.comm_; }
  static void SetPlace(Communicator &c, int rank, int size) {
    c.rank_ = rank;
    c.size_ = size;
  }
  // Everything after the MPI communicator exists: error handler, rank,
  // size, the MPI backend, the check agreement, the node's sequence board,
  // shared memory among the ranks, the watchdog. Collective over c.comm_
  // (the board is shared memory among the node's ranks).
  static Status FinishUnderMpi(Communicator &c);

 private:
  static Status AgreeOnSettings(Communicator &c);
  static Status AttachShm(Communicator &c);
};

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

// Binds this rank to a device of the first active device runtime (vendor
// runtimes before the emulated one); host-only when there is none.
Status BindDevice(Communicator &c, int ndev, const int *devlist) {
  Communicator::Binding b;
  INFINICCL_RETURN_IF_ERROR(DetectLocalRank(c.mpi_comm(), &b.local_rank));
  const std::vector<DeviceRuntime *> active = DeviceRegistry::Active();
  if (active.empty()) {
    WarnDevlistWithoutDevices(ndev, devlist);
    INFINICCL_INFO("local rank %d (from %s); no device runtime has a device: host memory "
                   "only",
                   b.local_rank.rank, b.local_rank.source.c_str());
    c.set_binding(b);
    return Status::Ok();
  }
  DeviceRuntime &rt = *active.front();
  DeviceChoice choice;
  INFINICCL_RETURN_IF_ERROR(ChooseDevice(b.local_rank.rank, rt.DeviceCount(), ndev, devlist,
                                         GlobalConfig().strict_binding, &choice));
  if (choice.wrapped) {
    INFINICCL_WARN("local rank %d but only %d %s devices: sharing device %d "
                   "(INFINICCL_STRICT_BINDING=1 makes this an error)",
                   b.local_rank.rank, rt.DeviceCount(), DeviceKindName(rt.kind()),
                   choice.device);
  }
  INFINICCL_RETURN_IF_ERROR(rt.SetDevice(choice.device));
  b.kind = rt.kind();
  b.device = choice.device;
  b.shared = choice.wrapped;
  INFINICCL_INFO("bound to %s device %d of %d (local rank %d from %s%s)",
                 rt.description(), b.device, rt.DeviceCount(), b.local_rank.rank,
                 b.local_rank.source.c_str(), choice.from_devlist ? ", via devlist" : "");
  c.set_binding(b);
  return Status::Ok();
}

// Device buffers of a communicator that queues them through MPI are staged
// in pinned slots, which a queued call's thread may not allocate (it would
// wait for the device): the first is made here, as NCCL makes its buffers at
// initialisation.
void PrimeStaging(Communicator &c) {
  if (c.ccl_backend() != nullptr || c.binding().device < 0) return;
  DeviceRuntime *rt = DeviceRegistry::Get(c.binding().kind);
  if (rt == nullptr || !c.QueuesFor(*rt)) return;
  StagingPool::Global().Prime(StagedOnStream::LargestSlotBytes(*rt), *rt);
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

// The CCL communicator of a split made under MPI; every rank of `parent`
// calls it after the MPI split, `child` null on ranks without a color. The
// CCL's own split (ncclCommSplit) where it has one and it succeeds on every
// rank; otherwise each child gets a CCL communicator of its own.
Status SplitCcl(Communicator &parent, int color, int key, Communicator *child) {
  Backend *ccl = parent.ccl_backend();
  if (ccl == nullptr) return Status::Ok();
  std::unique_ptr<Backend> backend;
  int rank = child ? child->rank() : 0, size = child ? child->size() : 0;
  const Status st = ccl->SplitNative(child ? color : -1, key, &rank, &size, &backend);
  int ok = st.ok() ? 1 : 0, all_ok = 0;
  INFINICCL_RETURN_IF_ERROR(MpiCheck(
      MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, parent.mpi_comm()), "MPI_Allreduce"));
  if (all_ok) {
    if (child != nullptr && backend != nullptr) {
      INFINICCL_INFO("%s communicator split natively: rank %d of %d", ccl->Name(),
                     child->rank(), child->size());
      child->set_ccl_backend(std::move(backend));
    }
    return Status::Ok();
  }
  backend.reset();
  if (!st.ok() && st.code() != infinicclNotSupported) {
    INFINICCL_WARN("%s; the new communicator gets a CCL communicator of its own",
                   st.message().c_str());
  }
  // Every rank of the child left without a CCL alike: SplitComm gives it
  // one of its own (AttachChild).
  return Status::Ok();
}

// Splitting a communicator made without MPI (infinicclCommInitRank): only
// its CCL can, and the child's place comes from the CCL.
Status SplitWithoutMpi(Communicator &parent, int color, int key,
                       std::unique_ptr<Communicator> *out) {
  Backend *ccl = parent.ccl_backend();
  if (ccl == nullptr) {
    return Status(infinicclInternalError, "communicator with neither MPI nor a CCL");
  }
  int rank = -1, size = 0;
  std::unique_ptr<Backend> backend;
  Status st = ccl->SplitNative(color, key, &rank, &size, &backend);
  if (!st.ok()) {
    return Status(st.code(),
                  "splitting a communicator made without MPI (infinicclCommInitRank) "
                  "takes the CCL's own split: " +
                      st.message());
  }
  if (backend == nullptr) return Status::Ok();  // no color: no communicator
  std::unique_ptr<Communicator> c = CommFactory::New();
  CommFactory::SetPlace(*c, rank, size);
  c->set_binding(parent.binding());
  c->set_ccl_backend(std::move(backend));
  *out = std::move(c);
  return Status::Ok();
}

}  // namespace

Status CommFactory::FinishUnderMpi(Communicator &c) {
  MPI_Comm comm = c.comm_;
  INFINICCL_RETURN_IF_ERROR(MpiCheck(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN),
                                     "MPI_Comm_set_errhandler"));
  INFINICCL_RETURN_IF_ERROR(MpiCheck(MPI_Comm_rank(comm, &c.rank_), "MPI_Comm_rank"));
  INFINICCL_RETURN_IF_ERROR(MpiCheck(MPI_Comm_size(comm, &c.size_), "MPI_Comm_size"));
  MPI_Comm_set_name(comm, "infiniccl");
  c.mpi_backend_ = std::make_unique<MpiBackend>(comm, c.rank_, c.size_);
  INFINICCL_RETURN_IF_ERROR(AgreeOnSettings(c));
  std::string why;
  INFINICCL_RETURN_IF_ERROR(SeqBoard::Create(comm, &c.board_, &why));
  if (!c.board_) {
    INFINICCL_INFO(
        "no node-local sequence board (%s): the watchdog will not be able to "
        "name ranks that have not reached a call",
        why.c_str());
  }
  INFINICCL_RETURN_IF_ERROR(AttachShm(c));
  Watchdog::Watch(&c);
  c.async_ = AsyncAllowed(&why);
  static std::once_flag said;
  std::call_once(said, [&] {
    INFINICCL_INFO("device buffers through MPI: %s%s",
                   c.async_ ? "queued to each communicator's progress engine, the call "
                              "returns at once (INFINICCL_ASYNC)"
                            : "synchronous, ",
                   why.c_str());
  });
  return Status::Ok();
}

namespace {

// Whether every rank of `comm` (of `size`) shares one node
// (MPI_COMM_TYPE_SHARED), agreed by all. Collective over `comm`.
Status AllOnOneNode(MPI_Comm comm, int size, bool *out) {
  MPI_Comm node = MPI_COMM_NULL;
  INFINICCL_RETURN_IF_ERROR(
      MpiCheck(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node),
               "MPI_Comm_split_type"));
  int node_size = 0;
  MPI_Comm_size(node, &node_size);
  MPI_Comm_free(&node);
  int mine = node_size == size ? 1 : 0, all = 0;
  INFINICCL_RETURN_IF_ERROR(
      MpiCheck(MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce"));
  *out = all != 0;
  return Status::Ok();
}

}  // namespace

// Shared memory among the ranks, when they are all on this node: collective,
// and every rank reaches the same answer (the node's size, and a segment
// that every rank mapped).
Status CommFactory::AttachShm(Communicator &c) {
  if (GlobalConfig().shm == Tristate::kOff || c.size_ < 2) return Status::Ok();
  std::string why;
  // A communicator whose ranks are on more than one node gets no segment:
  // its calls never take it (the two-level path makes its groups' own).
  // Decided before any segment is made, by every rank alike.
  bool one_node = false;
  INFINICCL_RETURN_IF_ERROR(AllOnOneNode(c.comm_, c.size_, &one_node));
  if (one_node) {
    INFINICCL_RETURN_IF_ERROR(
        ShmBackend::Create(c.comm_, c.rank_, c.size_, !DeviceRegistry::Active().empty(),
                           &c.shm_backend_, &why));
  } else {
    why = "the communicator's ranks are on more than one node";
  }
  static std::once_flag said;
  std::call_once(said, [&] {
    if (c.shm_backend_ != nullptr) {
      if (GlobalConfig().shm == Tristate::kOn) {
        INFINICCL_INFO("shared memory among the node's ranks: AllReduce, ReduceScatter, "
                       "Reduce, AllGather and Broadcast at every size (INFINICCL_SHM=1)");
      } else {
        INFINICCL_INFO("shared memory among the node's ranks, MPI above, per rank: "
                       "AllReduce to %zu bytes, ReduceScatter to %zu, Reduce to %zu, "
                       "AllGather to %zu, Broadcast to %zu; every size where every rank "
                       "drives a device without a CCL (INFINICCL_SHM, INFINICCL_SHM_MAX_BYTES)",
                       ShmBackend::MaxBytes(CollKind::kAllReduce),
                       ShmBackend::MaxBytes(CollKind::kReduceScatter),
                       ShmBackend::MaxBytes(CollKind::kReduce),
                       ShmBackend::MaxBytes(CollKind::kAllGather),
                       ShmBackend::MaxBytes(CollKind::kBroadcast));
      }
    } else {
      INFINICCL_INFO("no shared memory among the ranks (%s): MPI", why.c_str());
    }
  });
  return Status::Ok();
}

bool AsyncAllowed(std::string *why) {
  why->clear();
  if (GlobalConfig().async == Tristate::kOff) {
    *why = "INFINICCL_ASYNC=0";
    return false;
  }
  if (mpi::Serialized()) {
    *why = "MPI was started below MPI_THREAD_MULTIPLE, which the progress engine's "
           "thread needs beside the application's";
    return false;
  }
  return true;
}

namespace {

// The settings that choose a call's path, which every rank of a
// communicator must share: ranks that took different paths for one call
// would wait for each other in different places.
// INFINICCL_ASYNC is not among them: it chooses whether a rank's call is
// queued, not its path, and a rank with it off serves queued peers
// (tests/mpi/test_shm_landing.cpp, blocking_peers).
enum Agreed { kAgreedCheck, kAgreedShm, kAgreedShmMaxBytes, kNumAgreed };
const char *const kAgreedNames[kNumAgreed] = {"INFINICCL_CHECK", "INFINICCL_SHM",
                                              "INFINICCL_SHM_MAX_BYTES"};

std::string AgreedValue(int setting, int64_t v) {
  if (setting == kAgreedShmMaxBytes) return v < 0 ? "auto" : std::to_string(v);
  if (setting == kAgreedCheck) return std::to_string(v);
  return v == static_cast<int64_t>(Tristate::kAuto) ? "auto" : std::to_string(v);
}

// "rank 0,2 INFINICCL_SHM=1, rank 1 INFINICCL_SHM=auto".
std::string AgreedValues(int setting, const std::vector<int64_t> &all, int size) {
  std::vector<std::string> values;
  for (int r = 0; r < size; ++r) {
    values.push_back(std::string(kAgreedNames[setting]) + "=" +
                     AgreedValue(setting, all[static_cast<size_t>(r) * kNumAgreed + setting]));
  }
  return RanksByValue(values);
}

}  // namespace

// One small Allgather at creation compares the settings that choose a
// call's path. INFINICCL_SHM and INFINICCL_SHM_MAX_BYTES must be alike on
// every rank, or the communicator is not made (InvalidUsage naming the
// setting and each rank's value). INFINICCL_CHECK
// set on some ranks only is on for the communicator on every rank, with a
// warning that names the ranks (the checking ranks would otherwise wait in
// an exchange the others never make).
Status CommFactory::AgreeOnSettings(Communicator &c) {
  const Config &cfg = GlobalConfig();
  const int64_t mine[kNumAgreed] = {
      cfg.check ? 1 : 0, static_cast<int64_t>(cfg.shm),
      cfg.shm_max_bytes == SIZE_MAX ? -1 : static_cast<int64_t>(cfg.shm_max_bytes)};
  std::vector<int64_t> all(static_cast<size_t>(c.size_) * kNumAgreed, 0);
  INFINICCL_RETURN_IF_ERROR(MpiCheck(MPI_Allgather(mine, kNumAgreed, MPI_INT64_T, all.data(),
                                                   kNumAgreed, MPI_INT64_T, c.comm_),
                                     "MPI_Allgather"));
  const auto differs = [&](int setting) {
    for (int r = 1; r < c.size_; ++r) {
      if (all[static_cast<size_t>(r) * kNumAgreed + setting] != all[setting]) return true;
    }
    return false;
  };
  for (int s = kAgreedShm; s < kNumAgreed; ++s) {
    if (differs(s)) {
      return MakeStatus(infinicclInvalidUsage,
                        "%s differs between the ranks of the new communicator: %s; it "
                        "chooses each call's path, so it must be alike on every rank (the "
                        "communicator was not made)",
                        kAgreedNames[s], AgreedValues(s, all, c.size_).c_str());
    }
  }
  c.check_ = false;
  for (int r = 0; r < c.size_; ++r) {
    if (all[static_cast<size_t>(r) * kNumAgreed + kAgreedCheck] != 0) c.check_ = true;
  }
  if (differs(kAgreedCheck) && c.rank_ == 0) {
    INFINICCL_WARN(
        "INFINICCL_CHECK differs between the ranks of a new communicator (%s): the check "
        "is on for this communicator on every rank; set it alike everywhere",
        AgreedValues(kAgreedCheck, all, c.size_).c_str());
  }
  return Status::Ok();
}

// The segment page-locked with the runtime of the bound device now, not
// inside the first device call (milliseconds on a GPU, on the caller's
// thread).
void PageLockShm(Communicator &c) {
  ShmBackend *shm = c.shm_backend();
  if (shm == nullptr || c.binding().kind == DeviceKind::kCpu) return;
  DeviceRuntime *device = DeviceRegistry::Get(c.binding().kind);
  if (device != nullptr) shm->RegisterWith(device);
}

Status InitUnderMpi(MPI_Comm parent, int ndev, const int *devlist,
                    std::unique_ptr<Communicator> *out) {
  std::unique_ptr<Communicator> c = CommFactory::New();
  {
    mpi::SerialLock lock;
    int inter = 0;
    INFINICCL_RETURN_IF_ERROR(
        MpiCheck(MPI_Comm_test_inter(parent, &inter), "MPI_Comm_test_inter"));
    if (inter) {
      return Status(infinicclInvalidArgument,
                    "the MPI communicator is an inter-communicator; collectives need an "
                    "intra-communicator");
    }
    INFINICCL_RETURN_IF_ERROR(
        MpiCheck(MPI_Comm_dup(parent, &CommFactory::mpi_comm(*c)), "MPI_Comm_dup"));
  }
  INFINICCL_RETURN_IF_ERROR(CommFactory::FinishUnderMpi(*c));
  INFINICCL_RETURN_IF_ERROR(BindDevice(*c, ndev, devlist));
  PageLockShm(*c);
  INFINICCL_RETURN_IF_ERROR(AttachGroups(*c));
  PrimeStaging(*c);
  *out = std::move(c);
  return Status::Ok();
}

Status NewUniqueId(infinicclUniqueId *id) {
  std::string why;
  CclProvider *ccl = FirstUsableCcl(&why);
  if (ccl == nullptr) return Status(infinicclNotSupported, "unique-id bootstrap: " + why);
  return ccl->GetUniqueId(id);
}

Status InitWithUniqueId(int nranks, const infinicclUniqueId &id, int rank,
                        std::unique_ptr<Communicator> *out) {
  std::string why;
  CclProvider *ccl = FirstUsableCcl(&why);
  if (ccl == nullptr) return Status(infinicclNotSupported, "unique-id bootstrap: " + why);
  // The CCL uses the calling thread's current device, as ncclCommInitRank does.
  Communicator::Binding b;
  b.kind = ccl->kind();
  INFINICCL_RETURN_IF_ERROR(DeviceRegistry::Get(b.kind)->GetDevice(&b.device));
  std::unique_ptr<Communicator> c = CommFactory::New();
  CommFactory::SetPlace(*c, rank, nranks);
  c->set_binding(b);
  std::unique_ptr<Backend> backend;
  INFINICCL_RETURN_IF_ERROR(ccl->CreateComm(nranks, id, rank, &backend));
  c->set_ccl_backend(std::move(backend));
  *out = std::move(c);
  return Status::Ok();
}

Status SplitComm(Communicator &parent, int color, int key,
                 std::unique_ptr<Communicator> *out) {
  if (!parent.has_mpi()) return SplitWithoutMpi(parent, color, key, out);
  INFINICCL_RETURN_IF_ERROR(parent.CheckDrained("MPI_Comm_split"));
  std::unique_ptr<Communicator> c = CommFactory::New();
  {
    mpi::SerialLock lock;
    INFINICCL_RETURN_IF_ERROR(MpiCheck(MPI_Comm_split(parent.mpi_comm(),
                                                      color < 0 ? MPI_UNDEFINED : color,
                                                      key, &CommFactory::mpi_comm(*c)),
                                       "MPI_Comm_split"));
  }
  if (CommFactory::mpi_comm(*c) == MPI_COMM_NULL) {
    c.reset();  // no color: no communicator, but the CCL split below is collective
  } else {
    INFINICCL_RETURN_IF_ERROR(CommFactory::FinishUnderMpi(*c));
    // Same process, same device: the binding is copied, not redone (SetDevice
    // already ran for the parent). The staging pool is process-wide, so the
    // child shares it as it is.
    c->set_binding(parent.binding());
    PageLockShm(*c);
  }
  // Every rank of the parent takes part (the CCL's split is collective over
  // it), those without a color included; the parent's ranks agreed at
  // creation on having a CCL, so all take this together.
  INFINICCL_RETURN_IF_ERROR(SplitCcl(parent, color, key, c.get()));
  if (c != nullptr) {
    // The child's own groups (the parent's need not hold in it); its ranks
    // all have the CCL split from the parent's or all have none.
    INFINICCL_RETURN_IF_ERROR(AttachGroups(*c));
  }
  *out = std::move(c);
  return Status::Ok();
}

namespace {

// InitUnderMpi over `sub` with the parent's device on every rank:
// devlist[local rank in the new communicator], whatever that local rank
// turns out to be.
Status InitBoundAs(const Communicator &parent, MPI_Comm sub,
                   std::unique_ptr<Communicator> *out) {
  const Communicator::Binding &b = parent.binding();
  int n = 0;
  MPI_Comm_size(sub, &n);
  std::vector<int> devlist(static_cast<size_t>(n), b.device < 0 ? 0 : b.device);
  return InitUnderMpi(sub, b.device < 0 ? 0 : n, b.device < 0 ? nullptr : devlist.data(), out);
}

}  // namespace

Status InitAmong(const Communicator &parent, MPI_Comm base, const std::vector<int> &members,
                 std::unique_ptr<Communicator> *out) {
  MPI_Comm sub = MPI_COMM_NULL;
  {
    mpi::SerialLock lock;
    MPI_Group all = MPI_GROUP_NULL, some = MPI_GROUP_NULL;
    Status s = MpiCheck(MPI_Comm_group(base, &all), "MPI_Comm_group");
    if (s.ok()) {
      s = MpiCheck(MPI_Group_incl(all, static_cast<int>(members.size()), members.data(), &some),
                   "MPI_Group_incl");
    }
    if (s.ok()) {
      // Creations from one process are sequential, and no Send/Recv tag
      // equals this one (mpi/mpi_tags.h).
      s = MpiCheck(MPI_Comm_create_group(base, some, kMpiCreateGroupTag, &sub),
                   "MPI_Comm_create_group");
    }
    if (some != MPI_GROUP_NULL) MPI_Group_free(&some);
    if (all != MPI_GROUP_NULL) MPI_Group_free(&all);
    INFINICCL_RETURN_IF_ERROR(s);
  }
  Status s = InitBoundAs(parent, sub, out);
  mpi::SerialLock lock;
  MPI_Comm_free(&sub);  // InitUnderMpi keeps a duplicate
  return s;
}

namespace {

// The survivors' lists must be one list: each rank's count and a hash of
// its sorted list, gathered on the new communicator.
Status AgreeOnExcluded(Communicator &c, const std::vector<int> &exclude) {
  uint64_t mine[2] = {exclude.size(), 1469598103934665603ull};
  for (int r : exclude) mine[1] = (mine[1] ^ static_cast<uint64_t>(r)) * 1099511628211ull;
  std::vector<uint64_t> all(2 * static_cast<size_t>(c.size()));
  INFINICCL_RETURN_IF_ERROR(MpiCheck(MPI_Allgather(mine, 2, MPI_UINT64_T, all.data(), 2,
                                                   MPI_UINT64_T, c.mpi_comm()),
                                     "MPI_Allgather"));
  std::string differ;
  for (int r = 0; r < c.size(); ++r) {
    const uint64_t *theirs = &all[2 * static_cast<size_t>(r)];
    if (theirs[0] != all[0] || theirs[1] != all[1]) differ += " " + std::to_string(r);
  }
  if (differ.empty()) return Status::Ok();
  return Status(infinicclInvalidUsage,
                "the surviving ranks passed different lists of ranks to exclude: the new "
                "communicator's ranks" + differ + " differ from its rank 0 (pass the same "
                "excludeRanks on every surviving rank)");
}

}  // namespace

Status ShrinkComm(Communicator &parent, const std::vector<int> &exclude, bool abort_first,
                  std::unique_ptr<Communicator> *out) {
  std::vector<char> excluded(static_cast<size_t>(parent.size()), 0);
  for (int r : exclude) excluded[static_cast<size_t>(r)] = 1;
  std::vector<int> survivors;
  for (int r = 0; r < parent.size(); ++r) {
    if (!excluded[static_cast<size_t>(r)]) survivors.push_back(r);
  }
  std::unique_ptr<Communicator> c;
  if (abort_first && mpi::FtCompiled()) {
    // The parent is revoked: only MPI's shrink still works on it, and it
    // takes every live process, so the excluded ranks are the failed ones.
    MPI_Comm live = MPI_COMM_NULL;
    INFINICCL_RETURN_IF_ERROR(mpi::Shrink(parent.mpi_comm(), &live));
    int live_size = 0;
    MPI_Comm_size(live, &live_size);
    Status s = Status::Ok();
    if (live_size != static_cast<int>(survivors.size())) {
      s = MakeStatus(infinicclInvalidUsage,
                     "%d ranks of the parent's %d are alive, and %zu were to stay: with "
                     "INFINICCL_SHRINK_ABORT the excluded ranks are the failed ones "
                     "(infinicclCommGetFailedRanks); every live rank calls the shrink",
                     live_size, parent.size(), survivors.size());
    }
    if (s.ok()) s = InitBoundAs(parent, live, &c);
    {
      mpi::SerialLock lock;
      MPI_Comm_free(&live);  // InitUnderMpi keeps a duplicate
    }
    INFINICCL_RETURN_IF_ERROR(s);
  } else {
    INFINICCL_RETURN_IF_ERROR(InitAmong(parent, parent.mpi_comm(), survivors, &c));
  }
  INFINICCL_RETURN_IF_ERROR(AgreeOnExcluded(*c, exclude));
  *out = std::move(c);
  return Status::Ok();
}

Status GrowComm(Communicator *parent, int count, const char *command, char *const *argv,
                std::unique_ptr<Communicator> *out) {
  MPI_Comm inter = MPI_COMM_NULL, merged = MPI_COMM_NULL;
  {
    mpi::SerialLock lock;
    if (parent == nullptr) {
      INFINICCL_RETURN_IF_ERROR(MpiCheck(MPI_Comm_get_parent(&inter), "MPI_Comm_get_parent"));
      if (inter == MPI_COMM_NULL) {
        return Status(infinicclInvalidUsage,
                      "comm is NULL but no communicator started this process "
                      "(MPI_Comm_get_parent): only a process started by "
                      "infinicclCommGrow joins with a NULL comm");
      }
    } else {
      std::vector<int> errcodes(static_cast<size_t>(count), MPI_SUCCESS);
      INFINICCL_RETURN_IF_ERROR(MpiCheck(
          MPI_Comm_spawn(command, const_cast<char **>(argv), count, MPI_INFO_NULL, 0,
                         parent->mpi_comm(), &inter, errcodes.data()),
          "MPI_Comm_spawn"));
    }
    MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
    // The parent's ranks first (high = 0), the started processes after them.
    const Status merge =
        MpiCheck(MPI_Intercomm_merge(inter, parent == nullptr ? 1 : 0, &merged),
                 "MPI_Intercomm_merge");
    // The two jobs stay connected through the merged communicator only.
    MPI_Comm_disconnect(&inter);
    INFINICCL_RETURN_IF_ERROR(merge);
  }
  Status s = InitUnderMpi(merged, 0, nullptr, out);
  mpi::SerialLock lock;
  MPI_Comm_free(&merged);  // InitUnderMpi keeps a duplicate
  return s;
}

}  // namespace infiniccl
