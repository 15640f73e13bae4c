// The steps every communicator made under MPI takes (comm_attach.h): the
// device binding, the MPI communicator's error handler and place, the
// settings agreement, the sequence board, shared memory among the ranks,
// the watchdog. How a communicator is born: comm_create.cpp, comm_split.cpp,
// comm_shrink_grow.cpp; its groups and CCL: comm_groups.cpp.
#include "comm/comm_init.h"

#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "backend/ccl/ccl_provider.h"
#include "backend/mpi/mpi_backend.h"
#include "comm/binding.h"
#include "comm/comm_attach.h"
#include "comm/watchdog.h"
#include "core/config.h"
#include "core/log.h"
#include "core/rank_list.h"
#include "device/registry.h"
#include "mpi/fault_tolerance.h"
#include "mpi/mpi_error.h"
#include "mpi/mpi_exchange.h"
#include "mpi/mpi_tags.h"
#include "mpi/mpi_thread.h"
#include "staging/pipeline.h"
#include "staging/staging_pool.h"

namespace infiniccl {

// Binds this rank to a device of the first active device runtime (vendor
// runtimes before the emulated one); host-only when there is none.
Status BindDevice(Communicator &c, int ndev, const int *devlist, const BindAs &as) {
  Communicator::Binding b;
  INFINICCL_RETURN_IF_ERROR(DetectLocalRank(c.mpi_comm(), &b.local_rank, !as.comm_local_rank));
  if (as.keep != nullptr) {
    // The same process keeps its device (its current device may have
    // changed since, with another communicator's binding).
    const LocalRank local = b.local_rank;
    b = *as.keep;
    b.local_rank = local;
    if (b.device >= 0) {
      if (DeviceRuntime *rt = DeviceRegistry::Get(b.kind))
        INFINICCL_RETURN_IF_ERROR(rt->SetDevice(b.device));
    }
    INFINICCL_INFO("keeps %s device %d of the communicator it came from", DeviceKindName(b.kind),
                   b.device);
    c.set_binding(b);
    return Status::Ok();
  }
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
  if (as.current_device) {
    INFINICCL_RETURN_IF_ERROR(rt.GetDevice(&choice.device));
    b.kind = rt.kind();
    b.device = choice.device;
    INFINICCL_INFO("bound to %s device %d, the calling thread's current device",
                   rt.description(), b.device);
    c.set_binding(b);
    return Status::Ok();
  }
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
Status CommFactory::FinishUnderMpi(Communicator &c) {
  MPI_Comm comm = c.comm_;
  INFINICCL_RETURN_IF_ERROR(MpiCheck(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN),
                                     "MPI_Comm_set_errhandler"));
  INFINICCL_RETURN_IF_ERROR(MpiCheck(MPI_Comm_rank(comm, &c.rank_), "MPI_Comm_rank"));
  INFINICCL_RETURN_IF_ERROR(MpiCheck(MPI_Comm_size(comm, &c.size_), "MPI_Comm_size"));
  MPI_Comm_set_name(comm, "infiniccl");
  c.mpi_backend_ = std::make_unique<MpiBackend>(comm, c.rank_, c.size_);
  MpiExchange exchange(comm);
  INFINICCL_RETURN_IF_ERROR(AgreeOnSettings(c, exchange));
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

Status CommFactory::FinishOnNode(Communicator &c, Exchange &ex) {
  c.rank_ = ex.rank();
  c.size_ = ex.size();
  INFINICCL_RETURN_IF_ERROR(AgreeOnSettings(c, ex));
  if (GlobalConfig().shm == Tristate::kOff) {
    return Status(infinicclInvalidUsage,
                  "INFINICCL_SHM=0, and a communicator made without MPI serves its calls "
                  "through the node's shared memory only; unset it, or launch under "
                  "icclrun, mpirun or srun and call infinicclInit first");
  }
  std::string why;
  INFINICCL_RETURN_IF_ERROR(SeqBoard::Create(ex, &c.board_, &why));
  if (!c.board_) {
    INFINICCL_INFO("no node-local sequence board (%s): the watchdog will not be able to "
                   "name ranks that have not reached a call",
                   why.c_str());
  }
  INFINICCL_RETURN_IF_ERROR(
      ShmBackend::Create(ex, !DeviceRegistry::Active().empty(), &c.shm_backend_, &why));
  if (c.shm_backend_ == nullptr) {
    return MakeStatus(infinicclSystemError,
                      "no shared memory among the node's ranks (%s), which a communicator "
                      "made without MPI needs; launch under icclrun, mpirun or srun and call "
                      "infinicclInit first",
                      why.c_str());
  }
  Watchdog::Watch(&c);
  c.async_ = AsyncAllowed(&why);
  INFINICCL_INFO("a communicator of %d ranks on this node without MPI: every call through "
                 "the node's shared memory%s",
                 c.size_, c.ccl_backend_ != nullptr ? ", device buffers through the CCL" : "");
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
        INFINICCL_INFO("shared memory among the node's ranks: every collective at every "
                       "size (INFINICCL_SHM=1)");
      } else {
        INFINICCL_INFO("shared memory among the node's ranks, MPI above, per rank: "
                       "AllReduce to %zu bytes, ReduceScatter to %zu, Reduce to %zu, "
                       "AllGather to %zu, Broadcast to %zu, Gather to %zu, Scatter to %zu, "
                       "AllToAll to %zu per block; every size where every rank drives a "
                       "device without a CCL (INFINICCL_SHM, INFINICCL_SHM_MAX_BYTES)",
                       ShmBackend::MaxBytes(CollKind::kAllReduce),
                       ShmBackend::MaxBytes(CollKind::kReduceScatter),
                       ShmBackend::MaxBytes(CollKind::kReduce),
                       ShmBackend::MaxBytes(CollKind::kAllGather),
                       ShmBackend::MaxBytes(CollKind::kBroadcast),
                       ShmBackend::MaxBytes(CollKind::kGather),
                       ShmBackend::MaxBytes(CollKind::kScatter),
                       ShmBackend::MaxBytes(CollKind::kAllToAll));
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
Status CommFactory::AgreeOnSettings(Communicator &c, Exchange &ex) {
  const Config &cfg = GlobalConfig();
  struct Mine {
    int64_t v[kNumAgreed];
  } mine = {{cfg.check ? 1 : 0, static_cast<int64_t>(cfg.shm),
             cfg.shm_max_bytes == SIZE_MAX ? -1 : static_cast<int64_t>(cfg.shm_max_bytes)}};
  std::vector<Mine> each;
  INFINICCL_RETURN_IF_ERROR(ex.AllGatherOf(mine, &each));
  std::vector<int64_t> all;
  for (const Mine &m : each) all.insert(all.end(), m.v, m.v + kNumAgreed);
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

}  // namespace infiniccl
