// infinicclCommShrink and infinicclCommGrow: a communicator of a parent's
// surviving ranks, and one of a parent's ranks with processes it started.
#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>
#include <string>
#include <utility>
#include <vector>

#include "comm/comm_attach.h"
#include "comm/comm_init.h"
#include "core/config.h"
#include "core/status.h"
#include "mpi/fault_tolerance.h"
#include "mpi/mpi_error.h"
#include "mpi/mpi_tags.h"
#include "mpi/mpi_thread.h"

namespace infiniccl {

namespace {

// A hash of a sorted list of ranks (FNV-1a over the ranks).
uint64_t ListHash(const std::vector<int> &exclude) {
  uint64_t h = 1469598103934665603ull;
  for (int r : exclude) h = (h ^ static_cast<uint64_t>(r)) * 1099511628211ull;
  return h;
}

// What each caller of a shrink sends every other rank of the parent: its
// list of excluded ranks as a count and a hash.
struct ShrinkNote {
  uint64_t count = 0;
  uint64_t hash = 0;
  bool operator!=(const ShrinkNote &o) const { return count != o.count || hash != o.hash; }
};

// How long the survivors keep listening for a rank they exclude that calls
// the shrink all the same, from the start of the shrink: such a rank's
// note, sent when it calls, reaches them within this time when the ranks
// call together.
constexpr auto kExcludedCallerGrace = std::chrono::milliseconds(1000);

// The exchange over the parent that checks a shrink's list before anything
// collective depends on it. Each caller sends its note to every other rank
// of the parent and listens to all of them; it waits for the note of every
// rank it keeps. A kept rank's note that differs from its own is
// InvalidUsage at once (Start): that rank sees the difference too. A note
// from a rank it excludes (which is calling, so is not to be excluded) is
// InvalidUsage only after the new communicator was made (Finish), when the
// survivors agree on it: a survivor whose Start failed on it while another
// survivor's Start had not seen it yet would leave the other waiting in
// MPI_Comm_create_group.
// Point to point with a tag of its own (mpi/mpi_tags.h): the excluded
// ranks, alive but not calling or dead, take no part. A rank it keeps that
// has failed ends the wait with the MPI's error.
class ShrinkExchange {
 public:
  ShrinkExchange(Communicator &parent, const std::vector<int> &exclude)
      : parent_(parent),
        excluded_(static_cast<size_t>(parent.size()), 0),
        in_(static_cast<size_t>(parent.size())),
        recv_(static_cast<size_t>(parent.size()), MPI_REQUEST_NULL),
        send_(static_cast<size_t>(parent.size()), MPI_REQUEST_NULL),
        start_(std::chrono::steady_clock::now()) {
    for (int r : exclude) excluded_[static_cast<size_t>(r)] = 1;
    mine_ = new ShrinkNote{exclude.size(), ListHash(exclude)};
  }
  ~ShrinkExchange() { Close(); }
  ShrinkExchange(const ShrinkExchange &) = delete;
  ShrinkExchange &operator=(const ShrinkExchange &) = delete;

  // Sends this rank's note and waits for the kept ranks' notes.
  // InvalidUsage when one differs; an excluded rank's note waits for Finish.
  Status Start() {
    const int n = parent_.size(), me = parent_.rank();
    {
      mpi::SerialLock lock;
      for (int r = 0; r < n; ++r) {
        if (r == me) continue;
        const size_t i = static_cast<size_t>(r);
        INFINICCL_RETURN_IF_ERROR(
            MpiCheck(MPI_Irecv(&in_[i], 2, MPI_UINT64_T, r, kMpiShrinkTag, parent_.mpi_comm(),
                               &recv_[i]),
                     "MPI_Irecv (shrink)"));
        // A send to a dead excluded rank may fail: only kept ranks count.
        const int rc = MPI_Isend(mine_, 2, MPI_UINT64_T, r, kMpiShrinkTag, parent_.mpi_comm(),
                                 &send_[i]);
        if (rc != MPI_SUCCESS && !excluded_[i]) return MpiCheck(rc, "MPI_Isend (shrink)");
      }
    }
    for (;;) {
      bool waiting = false;
      INFINICCL_RETURN_IF_ERROR(Poll(&waiting));
      if (!problem_.empty()) return Verdict();
      if (!waiting) return Status::Ok();
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }

  // After the new communicator was made: listens for the excluded ranks
  // until the grace has passed since the start, then stops listening.
  // InvalidUsage when one of them called.
  Status Finish() {
    for (;;) {
      bool waiting = false;
      INFINICCL_RETURN_IF_ERROR(Poll(&waiting));
      if (!problem_.empty() || !late_.empty() || !ListeningToExcluded()) break;
      if (std::chrono::steady_clock::now() - start_ >= kExcludedCallerGrace) break;
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
    Close();
    if (!late_.empty()) problem_ += (problem_.empty() ? "" : "; ") + late_;
    return problem_.empty() ? Status::Ok() : Verdict();
  }

 private:
  // Whether an excluded rank's note may still come (not one that failed).
  bool ListeningToExcluded() const {
    for (size_t i = 0; i < recv_.size(); ++i) {
      if (excluded_[i] && recv_[i] != MPI_REQUEST_NULL) return true;
    }
    return false;
  }

  // Takes the notes that have come; `*waiting`: a kept rank's has not.
  Status Poll(bool *waiting) {
    mpi::SerialLock lock;
    for (size_t i = 0; i < recv_.size(); ++i) {
      if (recv_[i] == MPI_REQUEST_NULL) continue;
      int done = 0;
      MPI_Status status;
      const int rc = MPI_Test(&recv_[i], &done, &status);
      if (rc != MPI_SUCCESS) {
        // A dead excluded rank (a fault-tolerant MPI reports it).
        if (excluded_[i]) {
          recv_[i] = MPI_REQUEST_NULL;
          continue;
        }
        return MakeStatus(infinicclRemoteError,
                          "rank %zu of the parent, which this rank keeps, failed during the "
                          "shrink: %s",
                          i, MpiCheck(rc, "MPI_Irecv").message().c_str());
      }
      if (!done) {
        *waiting = *waiting || !excluded_[i];
        continue;
      }
      if (excluded_[i]) {
        NoteLate(i);
      } else if (in_[i] != *mine_) {
        problem_ += MakeStatus(infinicclInvalidUsage,
                               "%srank %zu passed a different list (%llu ranks) from this "
                               "rank's (%llu ranks)",
                               problem_.empty() ? "" : "; ", i,
                               static_cast<unsigned long long>(in_[i].count),
                               static_cast<unsigned long long>(mine_->count))
                        .message();
      }
    }
    return Status::Ok();
  }

  // An excluded rank that calls (Finish reports it).
  void NoteLate(size_t rank) {
    late_ += (late_.empty() ? "" : "; ") + std::string("rank ") + std::to_string(rank) +
             " calls the shrink and this rank excludes it";
  }

  Status Verdict() const {
    return Status(infinicclInvalidUsage,
                  "the ranks calling infinicclCommShrink disagree on the ranks to exclude (" +
                      problem_ + "): every calling rank passes the same excludeRanks, and "
                      "an excluded rank does not call (no communicator was made)");
  }

  // Stops listening (a receive that matched meanwhile is a note like any)
  // and lets the sends go: one to a rank that never listens stays with MPI,
  // and so does its note.
  void Close() {
    if (closed_) return;
    closed_ = true;
    mpi::SerialLock lock;
    for (size_t i = 0; i < recv_.size(); ++i) {
      if (recv_[i] == MPI_REQUEST_NULL) continue;
      MPI_Cancel(&recv_[i]);
      MPI_Status status;
      std::memset(&status, 0, sizeof status);
      const int rc = MPI_Wait(&recv_[i], &status);
      int cancelled = 1;
      if (rc == MPI_SUCCESS) MPI_Test_cancelled(&status, &cancelled);
      // A note that came before the cancel: the rank called.
      if (!cancelled && excluded_[i]) NoteLate(i);
    }
    bool all_sent = true;
    for (MPI_Request &r : send_) {
      if (r == MPI_REQUEST_NULL) continue;
      int done = 0;
      if (MPI_Test(&r, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS || !done) {
        if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);
        all_sent = false;
      }
    }
    if (all_sent) delete mine_;
    mine_ = nullptr;
  }

  Communicator &parent_;
  std::vector<char> excluded_;
  std::vector<ShrinkNote> in_;
  std::vector<MPI_Request> recv_, send_;
  ShrinkNote *mine_ = nullptr;  // outlives a send MPI has not finished
  std::chrono::steady_clock::time_point start_;
  std::string problem_;  // kept ranks' notes that differ
  std::string late_;     // excluded ranks that called
  bool closed_ = false;
};

// Every rank's `*flag`, ANDed over the ranks of `c`: with a fault-tolerant
// MPI an agreement (MPIX_Comm_agree), which a rank that fails meanwhile
// cannot leave waiting; an Allreduce otherwise.
Status AndOver(Communicator &c, int *flag) {
  if (mpi::FtCompiled()) {
    bool new_failure = false;
    return mpi::Agree(c.mpi_comm(), flag, &new_failure);
  }
  int all = 0;
  mpi::SerialLock lock;
  INFINICCL_RETURN_IF_ERROR(
      MpiCheck(MPI_Allreduce(flag, &all, 1, MPI_INT, MPI_BAND, c.mpi_comm()), "MPI_Allreduce"));
  *flag = all;
  return Status::Ok();
}

// The survivors' lists must be one list, checked on the new communicator
// (after MPI's own shrink, which the exchange above cannot precede): the
// AND of each rank's hash and the AND of its complement equal its own on
// every rank exactly when all hashes are equal.
Status AgreeOnExcluded(Communicator &c, const std::vector<int> &exclude) {
  const uint64_t h = ListHash(exclude) ^ (static_cast<uint64_t>(exclude.size()) << 32);
  const int mine = static_cast<int>(static_cast<uint32_t>(h ^ (h >> 32)));
  int all = mine, all_not = ~mine;
  INFINICCL_RETURN_IF_ERROR(AndOver(c, &all));
  INFINICCL_RETURN_IF_ERROR(AndOver(c, &all_not));
  if (all == mine && all_not == ~mine) return Status::Ok();
  return Status(infinicclInvalidUsage,
                "the surviving ranks passed different lists of ranks to exclude (pass the "
                "same excludeRanks on every surviving rank)");
}

}  // namespace

namespace {

Status ShrinkUnwatched(Communicator &parent, const std::vector<int> &exclude, bool abort_first,
                       std::unique_ptr<Communicator> *out) {
  // Its excluded ranks take no part in what comes on it (CommDestroy's
  // check exchange among them).
  parent.MarkShrunk();
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
    INFINICCL_RETURN_IF_ERROR(AgreeOnExcluded(*c, exclude));
  } else {
    // The lists first, over the parent: MPI_Comm_create_group with groups
    // that differ would not return on every rank.
    ShrinkExchange exchange(parent, exclude);
    INFINICCL_RETURN_IF_ERROR(exchange.Start());
    INFINICCL_RETURN_IF_ERROR(InitAmong(parent, parent.mpi_comm(), survivors, &c));
    // An excluded rank that called, seen by any survivor, fails them all.
    const Status late = exchange.Finish();
    int ok = late.ok() ? 1 : 0;
    INFINICCL_RETURN_IF_ERROR(AndOver(*c, &ok));
    if (!late.ok()) return late;
    if (!ok) {
      return Status(infinicclInvalidUsage,
                    "another surviving rank saw a rank it excludes call infinicclCommShrink: "
                    "an excluded rank does not call (no communicator was made)");
    }
  }
  *out = std::move(c);
  return Status::Ok();
}

}  // namespace

Status ShrinkComm(Communicator &parent, const std::vector<int> &exclude, bool abort_first,
                  std::unique_ptr<Communicator> *out) {
  Communicator::CommCallGuard watched(parent, CommCall::kShrink);
  const Status st = ShrinkUnwatched(parent, exclude, abort_first, out);
  watched.Returned(st);
  return st;
}

namespace {

// A started process's word to the parent's rank 0 (GrowUnwatched).
Status SayAlive(MPI_Comm inter) {
  int alive = 1;
  return MpiCheck(MPI_Send(&alive, 1, MPI_INT, 0, kMpiGrowHelloTag, inter),
                  "MPI_Send (to the growing communicator's rank 0)");
}

// The parent's rank 0 receives every started process's word; the parent's
// ranks then agree whether all came. Called with the MPI lock held.
Status HearAlive(Communicator &parent, MPI_Comm inter, int count) {
  Status heard;
  if (parent.rank() == 0) {
    std::vector<int> words(static_cast<size_t>(count), 0);
    std::vector<MPI_Request> reqs(static_cast<size_t>(count), MPI_REQUEST_NULL);
    for (int i = 0; i < count && heard.ok(); ++i) {
      heard = MpiCheck(MPI_Irecv(&words[static_cast<size_t>(i)], 1, MPI_INT, i,
                                 kMpiGrowHelloTag, inter, &reqs[static_cast<size_t>(i)]),
                       "MPI_Irecv (from a started process)");
    }
    // MPI reports no started process's death to the parent's job (Open MPI
    // 5 under ULFM measured): a process that has not spoken within half of
    // INFINICCL_TIMEOUT_SEC (the watchdog's) is taken as dead. Without the
    // watchdog the wait has no end, as MPI's own.
    const int timeout = GlobalConfig().timeout_sec;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(
                                                                 int64_t{timeout} * 500);
    for (int done = 0; heard.ok() && !done;) {
      heard = MpiCheck(MPI_Testall(count, reqs.data(), &done, MPI_STATUSES_IGNORE),
                       "MPI_Testall (the started processes' word)");
      if (heard.ok() && !done) {
        if (timeout > 0 && std::chrono::steady_clock::now() > deadline) {
          heard = Status(infinicclRemoteError,
                         "no word from it within " + std::to_string(timeout / 2) +
                             " s (half of INFINICCL_TIMEOUT_SEC)");
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
    for (MPI_Request &r : reqs) {
      if (r != MPI_REQUEST_NULL) {
        MPI_Cancel(&r);
        MPI_Request_free(&r);
      }
    }
  }
  // An agreement under a fault-tolerant MPI (AndOver): a parent rank that
  // fails meanwhile cannot leave the others waiting in it.
  int all = heard.ok() ? 1 : 0;
  const Status agreed = AndOver(parent, &all);
  if (!heard.ok()) {
    return Status(infinicclRemoteError,
                  "a process started by infinicclCommGrow died before it joined: " +
                      heard.message());
  }
  INFINICCL_RETURN_IF_ERROR(agreed);
  if (!all) {
    return Status(infinicclRemoteError,
                  "a process started by infinicclCommGrow died before it joined (rank 0 of "
                  "the communicator saw it)");
  }
  return Status::Ok();
}

Status GrowUnwatched(Communicator *parent, int count, const char *command, char *const *argv,
                     const Status &args, std::unique_ptr<Communicator> *out) {
  if (parent != nullptr) {
    int ok = args.ok() ? 1 : 0;
    INFINICCL_RETURN_IF_ERROR(AndOver(*parent, &ok));
    if (!args.ok()) return args;
    if (!ok) {
      return Status(infinicclInvalidArgument,
                    "another rank's arguments to infinicclCommGrow are bad (see its error): "
                    "no process was started");
    }
  }
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
    // Every started process says it is alive to the parent's rank 0 before
    // the merge, and the parent's ranks agree on it. Open MPI 5's merge, and
    // its revoke, would wait forever for the address of a process that died
    // before it joins (PMIx_Get): without every word the merge is not tried
    // and the inter-communicator is only freed, which is local.
    const Status alive = parent == nullptr ? SayAlive(inter) : HearAlive(*parent, inter, count);
    if (!alive.ok()) {
      MPI_Comm_free(&inter);
      return alive;
    }
    // The parent's ranks first (high = 0), the started processes after them.
    const Status merge =
        MpiCheck(MPI_Intercomm_merge(inter, parent == nullptr ? 1 : 0, &merged),
                 "MPI_Intercomm_merge");
    // The two jobs stay connected through the merged communicator only.
    // MPI_Comm_free, not MPI_Comm_disconnect: the latter waits for every
    // process of the other side, which never comes when one of them has
    // died. After a failed merge the inter-communicator is revoked first
    // (where the MPI tolerates failures), so nothing of it waits either.
    if (!merge.ok()) (void)mpi::Revoke(inter);
    MPI_Comm_free(&inter);
    INFINICCL_RETURN_IF_ERROR(merge);
  }
  // The parent's ranks keep their devices; a started process takes its
  // place among the merged communicator's ranks on its node.
  Status s;
  if (parent != nullptr) {
    s = InitBoundAs(*parent, merged, out);
  } else {
    BindAs as;
    as.comm_local_rank = true;
    s = InitUnderMpiAs(merged, 0, nullptr, as, out);
  }
  mpi::SerialLock lock;
  MPI_Comm_free(&merged);  // InitUnderMpi keeps a duplicate
  return s;
}

}  // namespace

Status GrowComm(Communicator *parent, int count, const char *command, char *const *argv,
                const Status &args, std::unique_ptr<Communicator> *out) {
  if (parent == nullptr) return GrowUnwatched(nullptr, count, command, argv, args, out);
  Communicator::CommCallGuard watched(*parent, CommCall::kGrow);
  const Status st = GrowUnwatched(parent, count, command, argv, args, out);
  watched.Returned(st);
  return st;
}

}  // namespace infiniccl
