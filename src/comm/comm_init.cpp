#include "comm/comm_init.h"

#include <cstring>
#include <string>
#include <vector>

#include "backend/ccl/ccl_provider.h"
#include "backend/mpi/mpi_backend.h"
#include "comm/binding.h"
#include "comm/watchdog.h"
#include "core/config.h"
#include "core/log.h"
#include "device/registry.h"
#include "mpi/mpi_error.h"
#include "mpi/mpi_thread.h"

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
  // the watchdog. Collective over c.comm_ (the board is shared memory
  // among the node's ranks).
  static Status FinishUnderMpi(Communicator &c);

 private:
  static Status AgreeOnCheck(Communicator &c);
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

// Gives a communicator made under MPI its CCL communicator when every rank
// is bound to its own device of one kind that has a CCL: rank 0 makes the
// unique id, MPI broadcasts it, every rank joins. The decision is
// collective (all ranks agree), so mixed nodes (some ranks without such a
// device) all stay on MPI instead of hanging in the CCL. An error only
// when the CCL itself fails under INFINICCL_BACKEND=ccl.
Status AttachCcl(Communicator &c) {
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

  infinicclUniqueId id;
  std::memset(&id, 0, sizeof id);
  int id_ok = 1;
  Status st;
  if (c.rank() == 0) {
    st = ccl->GetUniqueId(&id);
    id_ok = st.ok() ? 1 : 0;
  }
  INFINICCL_RETURN_IF_ERROR(
      MpiCheck(MPI_Bcast(&id_ok, 1, MPI_INT, 0, c.mpi_comm()), "MPI_Bcast"));
  if (!id_ok) {
    if (choice == BackendChoice::kCcl && !st.ok()) return st;
    return NoCcl(choice, "rank 0 could not make a unique id (see its log)");
  }
  INFINICCL_RETURN_IF_ERROR(
      MpiCheck(MPI_Bcast(id.internal, sizeof id.internal, MPI_BYTE, 0, c.mpi_comm()),
               "MPI_Bcast"));

  std::unique_ptr<Backend> backend;
  st = ccl->CreateComm(c.size(), id, c.rank(), &backend);
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
  return child != nullptr ? AttachCcl(*child) : Status::Ok();
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
  INFINICCL_RETURN_IF_ERROR(AgreeOnCheck(c));
  std::string why;
  INFINICCL_RETURN_IF_ERROR(SeqBoard::Create(comm, &c.board_, &why));
  if (!c.board_) {
    INFINICCL_INFO(
        "no node-local sequence board (%s): the watchdog will not be able to "
        "name ranks that have not reached a call",
        why.c_str());
  }
  Watchdog::Watch(&c);
  return Status::Ok();
}

// INFINICCL_CHECK set on some ranks only would leave the checking ranks
// waiting in an exchange the others never make. One small Allgather at
// creation makes every rank check when any rank asked for it, with a
// warning that names the ranks.
Status CommFactory::AgreeOnCheck(Communicator &c) {
  const int mine = GlobalConfig().check ? 1 : 0;
  std::vector<int> all(static_cast<size_t>(c.size_), 0);
  INFINICCL_RETURN_IF_ERROR(MpiCheck(
      MPI_Allgather(&mine, 1, MPI_INT, all.data(), 1, MPI_INT, c.comm_), "MPI_Allgather"));
  std::string on, off;
  for (int r = 0; r < c.size_; ++r) {
    std::string &list = all[static_cast<size_t>(r)] ? on : off;
    list += (list.empty() ? "" : ",") + std::to_string(r);
  }
  c.check_ = !on.empty();
  if (!on.empty() && !off.empty() && c.rank_ == 0) {
    INFINICCL_WARN(
        "INFINICCL_CHECK differs between the ranks of a new communicator "
        "(1 on rank %s, 0 on rank %s): the check is on for this communicator "
        "on every rank; set it alike everywhere",
        on.c_str(), off.c_str());
  }
  return Status::Ok();
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
  INFINICCL_RETURN_IF_ERROR(AttachCcl(*c));
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
  }
  // Every rank of the parent takes part (the CCL's split is collective over
  // it), those without a color included; the parent's ranks agreed at
  // creation on having a CCL, so all take this together.
  INFINICCL_RETURN_IF_ERROR(SplitCcl(parent, color, key, c.get()));
  *out = std::move(c);
  return Status::Ok();
}

}  // namespace infiniccl
