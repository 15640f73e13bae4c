#include "core/watchdog.h"

#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/communicator.h"
#include "core/config.h"
#include "core/dtype.h"
#include "core/log.h"

namespace infiniccl {

namespace {

using Clock = std::chrono::steady_clock;

struct Watched {
  Communicator *comm;
  uint64_t token = 0;  // the call seen in flight at the last poll
  Clock::time_point first_seen;
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

// "2,5,7" with at most `limit` entries, then "... (N more)".
std::string RankList(const std::vector<int> &ranks, size_t limit = 32) {
  std::string out;
  for (size_t i = 0; i < ranks.size() && i < limit; ++i) {
    if (i) out += ",";
    out += std::to_string(ranks[i]);
  }
  if (ranks.size() > limit)
    out += " ... (" + std::to_string(ranks.size() - limit) + " more)";
  return out.empty() ? "none" : out;
}

// Who has not entered collective `seq`, as far as this node can see.
std::string Stragglers(const Communicator &c, uint64_t seq) {
  if (c.board() == nullptr)
    return "ranks that have not reached it: unknown (no shared-memory board)";
  std::vector<int> behind, unknown;
  std::string where;  // "2@16": the last call each of the first few entered
  for (int r = 0; r < c.size(); ++r) {
    uint64_t entered = 0;
    if (!c.board()->LastEntered(r, &entered)) {
      unknown.push_back(r);
    } else if (entered < seq) {
      behind.push_back(r);
      if (behind.size() <= 8) {
        where += (where.empty() ? "" : ",") + std::to_string(r) + "@" +
                 std::to_string(entered);
      }
    }
  }
  std::string s = "ranks that have not reached it: " + RankList(behind);
  if (!behind.empty()) s += "; their last entered seq: " + where;
  if (behind.empty() && unknown.empty()) {
    s += " (every rank of this node is inside it: one may be stopped or slow there)";
  }
  if (!unknown.empty()) s += "; on other nodes, unknown: " + RankList(unknown);
  return s;
}

// Whether this rank calls MPI_Abort first: the first of its node to fire
// (every rank, without a board).
bool LeadsAbort(Communicator &c) { return c.board() == nullptr || c.board()->ClaimAbort(); }

[[noreturn]] void Fire(Communicator &c, const InFlight::Snapshot &s, double seconds,
                       int timeout, std::chrono::milliseconds grace) {
  const bool p2p = s.kind == CollKind::kSend || s.kind == CollKind::kRecv;
  char where[32] = "";
  if (p2p) {
    std::snprintf(where, sizeof where, " peer=%d", s.root);
  } else if (IsRooted(s.kind)) {
    std::snprintf(where, sizeof where, " root=%d", s.root);
  }
  char seq[48] = "(point-to-point, not sequenced)";
  if (!p2p)
    std::snprintf(seq, sizeof seq, "seq %llu", static_cast<unsigned long long>(s.seq));
  char what[512];
  std::snprintf(what, sizeof what,
                "%s %s on comm %llu (rank %d of %d) has not completed after %.0f s "
                "(INFINICCL_TIMEOUT_SEC=%d): count=%llu dtype=%s%s%s%s path=%s",
                CollKindName(s.kind), seq, static_cast<unsigned long long>(c.handle()),
                c.rank(), c.size(), seconds, timeout,
                static_cast<unsigned long long>(s.count), DataTypeName(s.dtype),
                IsReduction(s.kind) ? " op=" : "",
                IsReduction(s.kind) ? RedOpName(s.op) : "", where, CallPathName(s.path));
  const std::string who =
      p2p ? "waiting on peer " + std::to_string(s.root) : Stragglers(c, s.seq);
  LogError("watchdog: %s; %s; aborting the job (MPI_Abort, exit code %d)", what,
           who.c_str(), kWatchdogExitCode);
  // Peers stuck in the same call detect it within a poll period or so; give
  // them that long to write their own line before the job is torn down.
  std::this_thread::sleep_for(grace);
  // If MPI_Abort cannot make progress (e.g. an MPI without thread support
  // blocked in the stuck call), the process still ends.
  std::thread([] {
    std::this_thread::sleep_for(std::chrono::seconds(30));
    _exit(kWatchdogExitCode);
  }).detach();
  // One rank aborts, the others only if it has not ended the job within a
  // few seconds: Open MPI 4.1's mpirun was seen (rarely) to hang after two
  // ranks called MPI_Abort at the same moment. The first rank of this node
  // to get here leads; without a board every rank leads.
  if (!LeadsAbort(c)) std::this_thread::sleep_for(std::chrono::seconds(5));
  MPI_Abort(c.mpi_comm(), kWatchdogExitCode);
  _exit(kWatchdogExitCode);
}

void Loop(int timeout) {
  State &s = S();
  using std::chrono::milliseconds;
  const milliseconds period = std::min(milliseconds(1000), milliseconds(timeout * 250));
  std::unique_lock<std::mutex> lock(s.mutex);
  while (!s.stop) {
    s.wake.wait_for(lock, period);
    if (s.stop) break;
    const Clock::time_point now = Clock::now();
    for (Watched &w : s.comms) {
      InFlight::Snapshot snap;
      if (!w.comm->inflight().Read(&snap)) {
        w.token = 0;
        continue;
      }
      if (snap.token != w.token) {
        w.token = snap.token;
        w.first_seen = now;
        continue;
      }
      // Seen since first_seen, so in flight for at least that long.
      const double waited = std::chrono::duration<double>(now - w.first_seen).count();
      if (waited >= timeout) Fire(*w.comm, snap, waited, timeout, 2 * period);
    }
  }
}

}  // namespace

void Watchdog::Watch(Communicator *comm) {
  const int timeout = GlobalConfig().timeout_sec;
  if (timeout <= 0) return;
  State &s = S();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.comms.push_back(Watched{comm, 0, Clock::now()});
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
