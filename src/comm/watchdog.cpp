#include "comm/watchdog.h"

#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "comm/communicator.h"
#include "core/config.h"
#include "core/dtype.h"
#include "core/log.h"
#include "core/rank_list.h"
#include "core/threads.h"

namespace infiniccl {

namespace {

using Clock = std::chrono::steady_clock;

// Two records per communicator: the calling thread's call, and the
// operation its progress engine runs (queued by a call that returned).
constexpr int kRecords = 2;

struct Watched {
  Communicator *comm;
  uint64_t token[kRecords] = {0, 0};  // the call seen in flight at the last poll
  Clock::time_point first_seen[kRecords];
};

struct State {
  std::mutex mutex;
  std::condition_variable wake;
  std::thread thread;
  bool stop = false;
  std::vector<Watched> comms;
};

State &S() {
  static State *state = new State();  // never destroyed: a thread may outlive main
  return *state;
}

bool ProcessGone(int pid) {
  return pid > 0 && kill(pid, 0) != 0 && errno == ESRCH;
}

const char *LeftName(SeqBoard::Left why) {
  switch (why) {
    case SeqBoard::kDestroyed: return "destroyed the communicator";
    case SeqBoard::kAborted: return "aborted the communicator";
    case SeqBoard::kFinalized: return "called infinicclFinalize without destroying it";
    case SeqBoard::kPresent: break;
  }
  return "";
}

// What this node can see of the other ranks while this rank waits in
// collective `seq` of kind `kind`: who has not reached it (and where each
// is), who sits in a different operation at the same number, who returned
// from it early, who has left the communicator or whose process is gone.
std::string Stragglers(const Communicator &c, uint64_t seq, int kind) {
  if (c.board() == nullptr)
    return "ranks that have not reached it: unknown (no shared-memory board)";
  std::vector<int> behind, unknown, other_op, returned, left, gone;
  std::vector<SeqBoard::View> views(static_cast<size_t>(c.size()));
  std::string where;  // "2@16": the last call each of the first few entered
  for (int r = 0; r < c.size(); ++r) {
    SeqBoard::View &v = views[static_cast<size_t>(r)];
    if (!c.board()->Read(r, &v)) {
      unknown.push_back(r);
      continue;
    }
    if (r != c.rank() && ProcessGone(v.pid)) gone.push_back(r);
    if (v.left != SeqBoard::kPresent) left.push_back(r);
    if (v.entered < seq) {
      behind.push_back(r);
      if (behind.size() <= 8) {
        where += (where.empty() ? "" : ",") + std::to_string(r) + "@" +
                 std::to_string(v.entered);
      }
    } else if (v.entered == seq && v.kind != kind) {
      other_op.push_back(r);
    } else if (r != c.rank() && v.returned >= seq) {
      returned.push_back(r);
    }
  }
  std::string s = "ranks that have not reached it: " + RankList(behind);
  if (!behind.empty()) s += "; their last entered seq: " + where;
  if (!other_op.empty()) {
    // "rank 0 in AllReduce #1002, rank 1 in Broadcast #1002"
    std::string ops;
    int shown = 0;
    for (int r = 0; r < c.size() && shown < 8; ++r) {
      const SeqBoard::View &v = views[static_cast<size_t>(r)];
      if (v.entered != seq) continue;
      const bool valid_kind = v.kind >= 0 && v.kind < kNumCollKinds;
      const char *comm_call = CommCallName(v.kind);
      ops += (shown++ ? ", rank " : "rank ") + std::to_string(r) + " in " +
             (valid_kind  ? CollKindName(static_cast<CollKind>(v.kind))
              : comm_call ? comm_call
                          : "?") +
             " #" + std::to_string(seq);
    }
    s += "; " + ops +
         ": the ranks have called different collectives; one rank skipped or added a "
         "call";
  }
  if (!returned.empty()) {
    s += "; returned from it (this call failed or was refused there, e.g. a bad "
         "argument; check that rank's result): ";
    for (size_t i = 0; i < returned.size() && i < 8; ++i) {
      const SeqBoard::View &v = views[static_cast<size_t>(returned[i])];
      s += (i ? "," : "") + std::to_string(returned[i]);
      if (v.result != infinicclSuccess) s += "(result " + std::to_string(v.result) + ")";
    }
  }
  for (int r : left) {
    s += "; rank " + std::to_string(r) + " has left: it " +
         LeftName(views[static_cast<size_t>(r)].left) + " after entering seq " +
         std::to_string(views[static_cast<size_t>(r)].entered);
  }
  if (!gone.empty()) s += "; processes gone (exited or killed): rank " + RankList(gone);
  if (behind.empty() && unknown.empty() && other_op.empty() && returned.empty() &&
      left.empty() && gone.empty()) {
    s += " (every rank of this node is inside it: one may be stopped or slow there)";
  }
  if (!unknown.empty()) s += "; on other nodes, unknown: " + RankList(unknown);
  return s;
}

// Whether this rank ends the job: the first of its node to fire (every
// rank, without a board).
bool LeadsAbort(Communicator &c) { return c.board() == nullptr || c.board()->ClaimAbort(); }

// The parent of `pid`, from /proc (0 when unknown).
int ParentOf(int pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", pid);
  FILE *f = std::fopen(path, "r");
  if (f == nullptr) return 0;
  char buf[512];
  const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  const char *p = std::strrchr(buf, ')');  // the command name may hold spaces
  int ppid = 0;
  char state = 0;
  if (p == nullptr || std::sscanf(p + 1, " %c %d", &state, &ppid) != 2) return 0;
  return ppid;
}

// Seconds from MPI_Abort to the leader's last resort, and from the grace
// period to a non-leader leaving by itself: far above the 1-2 s in which
// both MPIs' launchers end a job after MPI_Abort, loaded machine included.
constexpr int kLastResortSec = 5;
constexpr int kFollowerExitSec = 15;

// One call in flight on `c`, as the watchdog names it: operation, sequence
// number, communicator, then `status` (how long it has waited, or nothing),
// its arguments, where a queued or two-level call waits, and what the
// node's board says of the other ranks.
std::string DescribeCall(Communicator &c, const InFlight::Snapshot &s, bool queued,
                         const char *status) {
  const bool p2p = IsP2p(s.kind);
  char where[48] = "";
  if (p2p) {
    if (s.root == kAnySource) {
      std::snprintf(where, sizeof where, " peer=any");
    } else {
      std::snprintf(where, sizeof where, " peer=%d", s.root);
    }
    if (s.tag != 0) {
      const size_t used = std::strlen(where);
      std::snprintf(where + used, sizeof where - used, " tag=%d", s.tag);
    }
  } else if (IsRooted(s.kind)) {
    std::snprintf(where, sizeof where, " root=%d", s.root);
  }
  char seq[48] = "(point-to-point, not sequenced)";
  if (!p2p)
    std::snprintf(seq, sizeof seq, "seq %llu", static_cast<unsigned long long>(s.seq));
  char what[512];
  if (const char *comm_call = CommCallName(static_cast<int>(s.kind))) {
    // Split, Shrink, Grow, Destroy: no buffers, no path.
    std::snprintf(what, sizeof what, "%s %s on comm %#llx (rank %d of %d)%s", comm_call, seq,
                  static_cast<unsigned long long>(c.handle()), c.rank(), c.size(), status);
    return std::string(what) + "; " + Stragglers(c, s.seq, static_cast<int>(s.kind));
  }
  std::snprintf(what, sizeof what,
                "%s %s on comm %#llx (rank %d of %d)%s: count=%llu dtype=%s%s%s%s path=%s",
                CollKindName(s.kind), seq, static_cast<unsigned long long>(c.handle()),
                c.rank(), c.size(), status, static_cast<unsigned long long>(s.count),
                DataTypeName(s.dtype), IsReduction(s.kind) ? " op=" : "",
                IsReduction(s.kind) ? RedOpName(s.op) : "", where, PathName(s.path));
  std::string text = what;
  if (queued) {
    ProgressEngine *e = c.engine_if_started();
    text += "; queued (the call returned at once; the progress engine runs it";
    text += e != nullptr && e->waiting_for_stream()
                ? ", and still waits for the work queued before it on the caller's stream)"
                : ")";
  }
  // A two-level call: which level this rank waits in (hier/topology.h).
  if (s.path == Path::kHier && c.topology() != nullptr) {
    text += "; waiting " + c.topology()->DescribeStep(c.topology()->step.load());
  }
  text += "; ";
  text += !p2p ? Stragglers(c, s.seq, static_cast<int>(s.kind))
         : s.root == kAnySource ? std::string("waiting on a message from any rank")
                                : "waiting on peer " + std::to_string(s.root);
  return text;
}

[[noreturn]] void Fire(Communicator &c, const InFlight::Snapshot &s, bool queued,
                       double seconds, int timeout, std::chrono::milliseconds grace) {
  char status[96];
  std::snprintf(status, sizeof status,
                " has not completed after %.0f s (INFINICCL_TIMEOUT_SEC=%d)", seconds, timeout);
  LogError("watchdog: %s; %s, exit code %d)", DescribeCall(c, s, queued, status).c_str(),
           c.has_mpi() ? "aborting the job (MPI_Abort" : "ending this process (_exit",
           kWatchdogExitCode);
  // Peers stuck in the same call detect it within a poll period or so; give
  // them that long to write their own line before the job is torn down.
  std::this_thread::sleep_for(grace);
  // Without MPI (a communicator made through the bootstrap) there is no job
  // to abort: this process ends, and its peers' waits in shared memory see
  // it gone (RemoteError), or their own watchdogs fire.
  if (!c.has_mpi()) _exit(kWatchdogExitCode);
  // Exactly one rank per node calls MPI_Abort. Open MPI 4.1's mpirun was
  // seen to stay 60 s and more after MPI_Abort (fault_skip_np3: two ranks
  // fired, the first aborted, the second was to abort 5 s later, the rank
  // that skipped sat in MPI_Finalize); what the launcher waited for was not
  // pinned down, so the end of the job no longer depends on it. The others
  // never call MPI_Abort and leave by _exit if nothing has ended them; the
  // leader's last resort kills this node's other ranks of the communicator
  // (their pids are on the board; only processes with our parent, so a
  // reused pid is never hit) and exits, which every launcher notices.
  if (!LeadsAbort(c)) {
    std::this_thread::sleep_for(std::chrono::seconds(kFollowerExitSec));
    _exit(kWatchdogExitCode);
  }
  std::vector<int> peers;
  if (c.board() != nullptr) peers = c.board()->PeerPids();
  std::thread([peers] {
    std::this_thread::sleep_for(std::chrono::seconds(kLastResortSec));
    // Seen under MPICH when the wait was a grouped Recv (fault_group_skip_np3,
    // 8 runs in 20): MPI_Abort from this thread did not end the job.
    LogError(
        "watchdog: MPI_Abort has not ended the job after %d s; killing this "
        "node's %zu other rank(s) of the communicator and exiting (code %d)",
        kLastResortSec, peers.size(), kWatchdogExitCode);
    const int parent = static_cast<int>(getppid());
    for (int pid : peers)
      if (ParentOf(pid) == parent) kill(pid, SIGKILL);
    _exit(kWatchdogExitCode);
  }).detach();
  MPI_Abort(c.mpi_comm(), kWatchdogExitCode);
  _exit(kWatchdogExitCode);
}

void Loop(int timeout) {
  NameThisThread("iccl-watchdog");
  State &s = S();
  using std::chrono::milliseconds;
  const milliseconds period = std::min(milliseconds(1000), milliseconds(timeout * 250));
  std::unique_lock<std::mutex> lock(s.mutex);
  while (!s.stop) {
    s.wake.wait_for(lock, period);
    if (s.stop) break;
    const Clock::time_point now = Clock::now();
    for (Watched &w : s.comms) {
      ProgressEngine *engine = w.comm->engine_if_started();
      const InFlight *records[kRecords] = {&w.comm->inflight(),
                                           engine != nullptr ? &engine->inflight() : nullptr};
      for (int i = 0; i < kRecords; ++i) {
        InFlight::Snapshot snap;
        if (records[i] == nullptr || !records[i]->Read(&snap)) {
          w.token[i] = 0;
          continue;
        }
        if (snap.token != w.token[i]) {
          w.token[i] = snap.token;
          w.first_seen[i] = now;
          continue;
        }
        // Seen since first_seen, so in flight for at least that long.
        const double waited = std::chrono::duration<double>(now - w.first_seen[i]).count();
        if (waited >= timeout) Fire(*w.comm, snap, i == 1, waited, timeout, 2 * period);
      }
    }
  }
}

}  // namespace

void Watchdog::Watch(Communicator *comm) {
  const int timeout = GlobalConfig().timeout_sec;
  if (timeout <= 0) return;
  State &s = S();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.comms.push_back(Watched{comm, {0, 0}, {Clock::now(), Clock::now()}});
  if (!s.thread.joinable()) {
    s.stop = false;
    s.thread = std::thread(Loop, timeout);
    INFINICCL_INFO(
        "watchdog started: a call not completed after %d s ends the job "
        "(INFINICCL_TIMEOUT_SEC; 0 disables)",
        timeout);
  }
}

void Watchdog::Unwatch(Communicator *comm) {
  State &s = S();
  std::lock_guard<std::mutex> lock(s.mutex);
  for (size_t i = 0; i < s.comms.size(); ++i) {
    if (s.comms[i].comm == comm) {
      s.comms.erase(s.comms.begin() + static_cast<long>(i));
      return;
    }
  }
}

std::string Watchdog::DescribeOthers(const Communicator &comm, uint64_t seq, int kind) {
  return Stragglers(comm, seq, kind);
}

std::string Watchdog::DescribeWait(Communicator &comm) {
  ProgressEngine *engine = comm.engine_if_started();
  const InFlight *records[kRecords] = {&comm.inflight(),
                                       engine != nullptr ? &engine->inflight() : nullptr};
  std::string text;
  for (int i = 0; i < kRecords; ++i) {
    InFlight::Snapshot snap;
    if (records[i] == nullptr || !records[i]->Read(&snap)) continue;
    if (!text.empty()) text += "\n";
    text += DescribeCall(comm, snap, i == 1, "");
  }
  return text;
}

void Watchdog::Stop() {
  State &s = S();
  std::thread thread;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.stop = true;
    thread.swap(s.thread);
  }
  s.wake.notify_all();
  if (thread.joinable()) thread.join();
}

}  // namespace infiniccl
