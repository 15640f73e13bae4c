// infinicclCommSplit: a communicator split off its parent: under MPI; for
// one made without MPI on one node, over the parent's shared memory; for
// one of a CCL alone, through the CCL's own split.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "comm/comm_attach.h"
#include "comm/comm_init.h"
#include "core/exchange.h"
#include "core/log.h"
#include "mpi/mpi_error.h"
#include "mpi/mpi_thread.h"

namespace infiniccl {

namespace {

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

namespace {

// Every rank of `parent`'s shared memory swaps `bytes` bytes with the
// others: a host AllGather on the parent's segment.
Status ParentAllGather(ShmBackend &shm, const void *mine, void *all, size_t bytes, int size) {
  CollArgs a{};
  a.kind = CollKind::kAllGather;
  a.sendbuff = mine;
  a.recvbuff = all;
  a.count = bytes;
  a.dtype = infinicclInt8;
  a.send_bytes = bytes;
  a.recv_bytes = bytes * static_cast<size_t>(size);
  return shm.Run(a);
}

// The exchange of one child of a split, among its `members` (parent ranks,
// in the child's order), carried by AllGathers over every rank of the
// parent: every child's ranks make their communicator at once, each child
// its own steps. A rank whose child is made (or that has none) calls
// Drain, which goes on taking part until every rank of the parent is done,
// so a child that takes more steps than another (a segment made under a
// name after the unnamed way failed there) never waits alone.
class SplitExchange final : public Exchange {
 public:
  SplitExchange(ShmBackend &shm, int parent_rank, int parent_size, std::vector<int> members)
      : shm_(shm), parent_rank_(parent_rank), parent_size_(parent_size),
        members_(std::move(members)) {
    for (size_t i = 0; i < members_.size(); ++i)
      if (members_[i] == parent_rank_) rank_ = static_cast<int>(i);
  }
  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(members_.size()); }
  Status AllGather(const std::string &mine, std::vector<std::string> *all) override {
    std::vector<std::string> every;
    INFINICCL_RETURN_IF_ERROR(Round(true, mine, &every, nullptr));
    all->clear();
    for (int m : members_) all->push_back(every[static_cast<size_t>(m)]);
    return Status::Ok();
  }
  Status Drain() {
    for (;;) {
      bool any_active = false;
      INFINICCL_RETURN_IF_ERROR(Round(false, std::string(), nullptr, &any_active));
      if (!any_active) return Status::Ok();
    }
  }

 private:
  struct Head {
    int64_t active, bytes;
  };
  Status Round(bool active, const std::string &mine, std::vector<std::string> *every,
               bool *any_active) {
    const Head head{active ? 1 : 0, static_cast<int64_t>(mine.size())};
    std::vector<Head> heads(static_cast<size_t>(parent_size_));
    INFINICCL_RETURN_IF_ERROR(
        ParentAllGather(shm_, &head, heads.data(), sizeof head, parent_size_));
    int64_t most = 0;
    bool some = false;
    for (const Head &h : heads) {
      most = std::max(most, h.bytes);
      some = some || h.active != 0;
    }
    if (any_active != nullptr) *any_active = some;
    std::string padded(static_cast<size_t>(most), '\0'), bytes;
    if (most > 0) {
      mine.copy(&padded[0], mine.size());
      bytes.assign(static_cast<size_t>(most) * static_cast<size_t>(parent_size_), '\0');
      INFINICCL_RETURN_IF_ERROR(ParentAllGather(shm_, padded.data(), &bytes[0],
                                                static_cast<size_t>(most), parent_size_));
    }
    if (every != nullptr) {
      every->assign(static_cast<size_t>(parent_size_), std::string());
      for (int r = 0; r < parent_size_; ++r) {
        (*every)[static_cast<size_t>(r)] = bytes.substr(
            static_cast<size_t>(r) * static_cast<size_t>(most),
            static_cast<size_t>(heads[static_cast<size_t>(r)].bytes));
      }
    }
    return Status::Ok();
  }

  ShmBackend &shm_;
  int parent_rank_, parent_size_, rank_ = -1;
  std::vector<int> members_;
};

// A communicator made without MPI on one node (comm_unique_id.cpp): its
// children are made over its shared memory, each on its own segments, with
// the parent's binding; a CCL's own split beside it where the parent has a
// CCL and it splits on every rank.
Status SplitOnNode(Communicator &parent, int color, int key,
                   std::unique_ptr<Communicator> *out) {
  ShmBackend &shm = *parent.shm_backend();
  const int prank = parent.rank(), psize = parent.size();
  struct Choice {
    int32_t color, key;
  } mine{color < 0 ? -1 : color, key};
  std::vector<Choice> all(static_cast<size_t>(psize));
  INFINICCL_RETURN_IF_ERROR(ParentAllGather(shm, &mine, all.data(), sizeof mine, psize));
  std::vector<int> members;
  if (color >= 0) {
    for (int r = 0; r < psize; ++r)
      if (all[static_cast<size_t>(r)].color == color) members.push_back(r);
    std::stable_sort(members.begin(), members.end(), [&](int x, int y) {
      return all[static_cast<size_t>(x)].key < all[static_cast<size_t>(y)].key;
    });
  }
  SplitExchange ex(shm, prank, psize, members);
  std::unique_ptr<Communicator> c;
  Status made = Status::Ok();
  if (!members.empty()) {
    c = CommFactory::New();
    c->set_binding(parent.binding());
    made = CommFactory::FinishOnNode(*c, ex);
    if (made.ok()) PageLockShm(*c);
  }
  INFINICCL_RETURN_IF_ERROR(ex.Drain());
  INFINICCL_RETURN_IF_ERROR(made);
  if (Backend *ccl = parent.ccl_backend()) {
    std::unique_ptr<Backend> backend;
    int rank = c ? c->rank() : 0, size = c ? c->size() : 0;
    const Status st = ccl->SplitNative(c ? color : -1, key, &rank, &size, &backend);
    int32_t ok = st.ok() ? 1 : 0;
    std::vector<int32_t> oks(static_cast<size_t>(psize));
    INFINICCL_RETURN_IF_ERROR(ParentAllGather(shm, &ok, oks.data(), sizeof ok, psize));
    const bool all_ok = std::find(oks.begin(), oks.end(), 0) == oks.end();
    if (all_ok && c != nullptr && backend != nullptr) c->set_ccl_backend(std::move(backend));
    if (!all_ok && c != nullptr) {
      INFINICCL_WARN("%s could not split on every rank: device buffers of the new "
                     "communicator go through the node's shared memory",
                     ccl->Name());
    }
  }
  *out = std::move(c);
  return Status::Ok();
}

Status SplitUnderMpi(Communicator &parent, int color, int key,
                     std::unique_ptr<Communicator> *out) {
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

}  // namespace

Status SplitComm(Communicator &parent, int color, int key,
                 std::unique_ptr<Communicator> *out) {
  if (!parent.has_mpi() && parent.shm_backend() == nullptr) {
    return SplitWithoutMpi(parent, color, key, out);
  }
  Communicator::CommCallGuard watched(parent, CommCall::kSplit);
  const Status st = parent.has_mpi() ? SplitUnderMpi(parent, color, key, out)
                                     : SplitOnNode(parent, color, key, out);
  watched.Returned(st);
  return st;
}

}  // namespace infiniccl
