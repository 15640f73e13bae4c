#include "comm/runtime.h"

#include <mpi.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "mpi/fault_tolerance.h"
#include "mpi/mpi_error.h"
#include "mpi/mpi_thread.h"
#include "mpi/mpi_types.h"
#include "core/cpu_budget.h"
#include "core/log.h"
#include "comm/watchdog.h"
#include "progress/engine.h"
#include "staging/staging_pool.h"

namespace infiniccl {

// How long infinicclFinalize waits for aborted communicators still being
// destroyed (ProgressEngine::DestroyLater) before it leaves them behind.
constexpr std::chrono::milliseconds kWaitForAborted{5000};

namespace {

enum class Phase { kBefore, kActive, kAfter };

struct State {
  std::mutex mutex;
  std::atomic<Phase> phase{Phase::kBefore};
  bool owns_mpi = false;
  int world_rank = 0;
  int world_size = 1;
  // Handles are (salt << kCounterBits) | counter: the counter makes them
  // never reused, the per-process random salt makes a small integer or a
  // stale pointer (almost) never a live communicator by accident.
  uintptr_t salt = 0;
  uintptr_t next_handle = 1;  // the counter part
  std::unordered_map<uintptr_t, std::shared_ptr<Communicator>> comms;
  std::unordered_set<uintptr_t> aborted;  // handles given to infinicclCommAbort
};

State &S() {
  static State *state = new State();  // never destroyed: usable at exit
  return *state;
}

uintptr_t HandleValue(infinicclComm_t h) { return reinterpret_cast<uintptr_t>(h); }

constexpr int kCounterBits = sizeof(uintptr_t) >= 8 ? 32 : 12;
constexpr uintptr_t kCounterMask = (uintptr_t{1} << kCounterBits) - 1;
// Bits of the salt; the top bit stays clear so a handle never looks like a
// kernel address, the low bits of the counter never zero (so never NULL).
constexpr int kSaltBits = sizeof(uintptr_t) * 8 - kCounterBits - 1;

// Nonzero, different in each process (and each run): from the clock, the
// pid and the address of a stack variable (ASLR), mixed.
uintptr_t MakeSalt() {
  uint64_t x =
      static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  x ^= static_cast<uint64_t>(getpid()) << 32;
  int local = 0;
  x ^= static_cast<uint64_t>(reinterpret_cast<uintptr_t>(&local));
  x ^= static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
  // splitmix64's finaliser
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  x ^= x >> 31;
  const uintptr_t salt = static_cast<uintptr_t>(x) & ((uintptr_t{1} << kSaltBits) - 1);
  return salt == 0 ? 1 : salt;
}

// The counter of a handle issued by this process, or 0 when `h` is not one.
uintptr_t CounterOf(uintptr_t salt, uintptr_t h) {
  if ((h >> kCounterBits) != salt) return 0;
  return h & kCounterMask;
}

const char *ThreadLevelName(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE: return "MPI_THREAD_MULTIPLE";
  }
  return "unknown";
}

}  // namespace

Status Runtime::Init(int *argc, char ***argv) {
  State &s = S();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.phase == Phase::kActive) {
    return Status(infinicclInvalidUsage, "already initialised (infinicclInit called twice)");
  }
  if (s.phase == Phase::kAfter) {
    return Status(infinicclInvalidUsage, "cannot initialise again after infinicclFinalize");
  }
  ReloadGlobalConfig();
  ConfigureLogging(GlobalConfig());

  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (finalized) {
    return Status(infinicclInvalidUsage, "MPI is already finalised");
  }
  int provided = 0;
  if (!initialized) {
    INFINICCL_RETURN_IF_ERROR(MpiCheck(
        MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided), "MPI_Init_thread"));
    s.owns_mpi = true;
  } else {
    MPI_Query_thread(&provided);
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &s.world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &s.world_size);
  SetLogRank(s.world_rank);

  Status st = MpiTypeTable::Create();
  if (!st.ok()) {
    MpiTypeTable::Destroy();
    if (s.owns_mpi) MPI_Finalize();
    s.owns_mpi = false;
    return st;
  }
  StagingPool::Global().ResetCounters();
  mpi::SetSerialized(provided < MPI_THREAD_MULTIPLE);
  {
    const int on_node = mpi::LaunchersRanksOnNode();
    std::string limit;
    const unsigned cores = UsableCores(&limit);
    const bool over = mpi::PollsWhenOversubscribed(s.world_size, on_node, cores);
    mpi::SetOversubscribed(over);
    // Open MPI's launcher sets it for `--with-ft ulfm`.
    const char *ft = std::getenv("OMPI_MCA_mpi_ft_enable");
    const bool revocable = mpi::FtCompiled() && ft != nullptr &&
                           (std::strcmp(ft, "1") == 0 || std::strcmp(ft, "true") == 0);
    mpi::SetRevocable(revocable);
    if (revocable) {
      INFINICCL_INFO("MPI tolerates failures (--with-ft ulfm): waits for MPI poll, and end "
                     "once their communicator is revoked");
    }
    if (over) {
      INFINICCL_INFO("%d ranks share %u usable cores (%s): waits for MPI poll with yields "
                     "and short sleeps instead of spinning inside MPI",
                     on_node, cores, limit.c_str());
    }
  }
  s.phase = Phase::kActive;

  char version[MPI_MAX_LIBRARY_VERSION_STRING] = "";
  int len = 0;
  MPI_Get_library_version(version, &len);
  if (char *nl = std::strchr(version, '\n')) *nl = '\0';
  INFINICCL_INFO("InfiniCCL %d.%d.%d initialised: %d ranks, MPI %s (%s), thread level %d",
                 INFINICCL_MAJOR, INFINICCL_MINOR, INFINICCL_PATCH, s.world_size,
                 s.owns_mpi ? "started by InfiniCCL" : "started by the application",
                 version, provided);
  LogVersion(version);  // INFINICCL_DEBUG=VERSION: NCCL's one version line
  if (provided < MPI_THREAD_MULTIPLE) {
    INFINICCL_INFO("MPI provides %s, not MPI_THREAD_MULTIPLE: InfiniCCL serialises its "
                   "MPI calls with one process-wide lock (collectives become nonblocking "
                   "calls polled under it), so calls from several threads are safe but "
                   "do not run concurrently; initialise MPI with MPI_THREAD_MULTIPLE for that",
                   ThreadLevelName(provided));
  }
  return Status::Ok();
}

Status Runtime::Finalize() {
  State &s = S();
  std::unordered_map<uintptr_t, std::shared_ptr<Communicator>> leftover;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.phase != Phase::kActive) {
      return Status(infinicclInvalidUsage, s.phase == Phase::kBefore
                                               ? "not initialised (call infinicclInit first)"
                                               : "already finalised");
    }
    s.phase = Phase::kAfter;
    leftover.swap(s.comms);
  }
  // Their queued work first, still watched: a queued call whose peer never
  // comes is named by the watchdog rather than hanging Finalize.
  for (auto &entry : leftover) (void)entry.second->DrainQueued();
  // Before the communicators go: the watchdog reads their records.
  Watchdog::Stop();
  if (!leftover.empty()) {
    INFINICCL_INFO("infinicclFinalize: freeing %zu communicator(s) not destroyed by the "
                   "application",
                   leftover.size());
  }
  for (auto &entry : leftover) entry.second->NoteLeft(SeqBoard::kFinalized);
  leftover.clear();  // frees their MPI communicators while MPI is still up
  // Aborted communicators' engines, topologies and shared-memory segments,
  // still being destroyed: one whose queued work waits for a stream held by
  // a kernel that never ends is left behind (the thread destroying it stays
  // blocked, and the process may exit with it).
  const std::vector<std::string> behind = ProgressEngine::WaitDestroyed(kWaitForAborted);
  if (behind.empty()) {
    StagingPool::Global().Trim();
  } else {
    std::string names;
    for (const std::string &n : behind) {
      names += (names.empty() ? "" : "; ") + (n.empty() ? std::string("no engine") : n);
    }
    // Freeing pinned memory waits for the device (cudaFreeHost), which
    // runs that kernel: the idle staging buffers stay until the exit.
    LogPrint(LogLevel::kWarn,
             "infinicclFinalize: %zu aborted communicator(s) not destroyed after %lld ms "
             "(%s): their queued work still waits for the caller's stream, held by a "
             "kernel that has not ended; left behind, with what they hold (the "
             "shared-memory segment), and the idle staging buffers not freed (freeing "
             "pinned memory waits for the device), until the process exits",
             behind.size(), static_cast<long long>(kWaitForAborted.count()), names.c_str());
  }
  Communicator::FreeLeftMpiComms();
  MpiTypeTable::Destroy();
  mpi::SetSerialized(false);
  mpi::SetOversubscribed(false);
  mpi::SetRevocable(false);
  if (s.owns_mpi) {
    // Every rank reaches MPI_Finalize's own synchronisation (a PMIx fence in
    // Open MPI) only once all have got here. A rank waiting in that fence
    // when the job is aborted (its peers' watchdog fired because it skipped
    // a call) deadlocks Open MPI 4.1's mpirun in PMIx_server_finalize after
    // every rank is gone (fault_skip_np3, about one run in three); waiting
    // in an MPI barrier instead, it is killed like any rank inside MPI.
    // With a fault-tolerant MPI a rank may have failed: the barrier then
    // returns its error instead of ending the survivors.
    if (mpi::FtCompiled()) MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Barrier(MPI_COMM_WORLD);
    mpi::RouteAroundFinalizeFence();
    INFINICCL_RETURN_IF_ERROR(MpiCheck(MPI_Finalize(), "MPI_Finalize"));
  }
  return Status::Ok();
}

Status Runtime::CheckActive() {
  State &s = S();
  // An atomic load, no lock: this runs on every call. A call racing
  // Finalize is the application's bug either way.
  switch (s.phase.load(std::memory_order_acquire)) {
    case Phase::kActive: return Status::Ok();
    case Phase::kBefore:
      return Status(infinicclInvalidUsage, "not initialised (call infinicclInit first)");
    case Phase::kAfter:
      return Status(infinicclInvalidUsage, "called after infinicclFinalize");
  }
  return Status::Ok();
}

int Runtime::world_rank() { return S().world_rank; }
int Runtime::world_size() { return S().world_size; }

infinicclComm_t Runtime::Register(std::unique_ptr<Communicator> comm) {
  State &s = S();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.salt == 0) s.salt = MakeSalt();
  // 2^32 communicators per process (4096 on 32-bit) before the counter would
  // wrap; wrapping would reuse handles, so it fails instead (the API frame
  // turns the exception into an error; never reached in practice).
  if (s.next_handle > kCounterMask)
    throw std::runtime_error("communicator handles exhausted");
  const uintptr_t h = (s.salt << kCounterBits) | s.next_handle++;
  comm->set_handle(h);
  s.comms.emplace(h, std::shared_ptr<Communicator>(std::move(comm)));
  return reinterpret_cast<infinicclComm_t>(h);
}

Status Runtime::Lookup(infinicclComm_t handle, std::shared_ptr<Communicator> *out) {
  if (handle == nullptr) return Status(infinicclInvalidArgument, "comm is NULL");
  State &s = S();
  const uintptr_t h = HandleValue(handle);
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.comms.find(h);
  if (it != s.comms.end()) {
    // A child of fork() has the parent's handles and a copy of its state,
    // but not its place among the ranks: a call from it would join the
    // parent's counters in the node's shared memory and its MPI traffic.
    if (it->second->creator_pid() != Communicator::CurrentPid()) {
      return MakeStatus(infinicclInvalidUsage,
                        "comm %p belongs to process %d, which made it; this process (%d) "
                        "is a child of fork() and may not use it (communicators are not "
                        "inherited across fork)",
                        handle, it->second->creator_pid(), Communicator::CurrentPid());
    }
    *out = it->second;
    return Status::Ok();
  }
  if (s.aborted.count(h) != 0) {
    return MakeStatus(infinicclInvalidUsage,
                      "comm %p was aborted (infinicclCommAbort); create a new communicator",
                      handle);
  }
  const uintptr_t counter = CounterOf(s.salt, h);
  if (counter != 0 && counter < s.next_handle) {
    return MakeStatus(infinicclInvalidUsage, "comm %p was already destroyed", handle);
  }
  return MakeStatus(infinicclInvalidArgument,
                    "comm %p is not a communicator created by infinicclCommInitAll or "
                    "infinicclCommSplit",
                    handle);
}

Status Runtime::LookupUsable(infinicclComm_t handle, std::shared_ptr<Communicator> *out) {
  const Status active = CheckActive();
  if (active.ok()) return Lookup(handle, out);
  if (S().phase.load() != Phase::kBefore) return active;
  std::shared_ptr<Communicator> c;
  if (!Lookup(handle, &c).ok() || c->has_mpi()) return active;
  *out = std::move(c);
  return Status::Ok();
}

Status Runtime::Unregister(infinicclComm_t handle) {
  std::shared_ptr<Communicator> comm;
  INFINICCL_RETURN_IF_ERROR(Lookup(handle, &comm));
  State &s = S();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.comms.find(HandleValue(handle));
  if (it == s.comms.end() || it->second != comm) {
    return MakeStatus(infinicclInvalidUsage,
                      "comm %p was destroyed or aborted by another thread", handle);
  }
  comm->NoteLeft(SeqBoard::kDestroyed);
  s.comms.erase(it);
  return Status::Ok();
}

Status Runtime::Abort(infinicclComm_t handle, std::shared_ptr<Communicator> *out) {
  INFINICCL_RETURN_IF_ERROR(Lookup(handle, out));  // the error message, if any
  State &s = S();
  std::lock_guard<std::mutex> lock(s.mutex);
  // Two threads aborting (or destroying) the same handle at once: only the
  // first one that gets here succeeds.
  auto it = s.comms.find(HandleValue(handle));
  if (it == s.comms.end() || it->second != *out) {
    out->reset();
    return MakeStatus(infinicclInvalidUsage,
                      "comm %p was destroyed or aborted by another thread", handle);
  }
  // Marked under the registry lock, so no Lookup after this returns the comm.
  (*out)->MarkAborted();
  (*out)->NoteLeft(SeqBoard::kAborted);
  s.comms.erase(it);
  s.aborted.insert(HandleValue(handle));
  return Status::Ok();
}

}  // namespace infiniccl
