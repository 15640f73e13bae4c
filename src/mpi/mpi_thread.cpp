#include "mpi/mpi_thread.h"

#include "mpi/fault_tolerance.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

namespace infiniccl::mpi {

namespace {

std::atomic<bool> g_serialized{false};
std::atomic<bool> g_oversubscribed{false};
std::atomic<bool> g_revocable{false};

std::recursive_mutex &Mutex() {
  static std::recursive_mutex *m = new std::recursive_mutex();  // usable at exit
  return *m;
}

// The communicators revoked in this process (RevokeLocally), and how many.
std::atomic<int> g_revoked_count{0};
std::mutex &RevokedMutex() {
  static std::mutex *m = new std::mutex();  // usable at exit
  return *m;
}
struct RevokedComm {
  MPI_Comm comm;
  bool aborted;
};
std::vector<RevokedComm> &RevokedComms() {
  static std::vector<RevokedComm> *v = new std::vector<RevokedComm>();  // usable at exit
  return *v;
}
// Under RevokedMutex.
RevokedComm *FindRevoked(MPI_Comm comm) {
  for (RevokedComm &r : RevokedComms()) {
    if (r.comm == comm) return &r;
  }
  return nullptr;
}

// Whether a wait on `comm` ends: revoked here, or (Revocable) by any process.
bool WaitEnds(MPI_Comm comm) {
  if (comm == MPI_COMM_NULL) return false;
  return RevokedLocally(comm) || (Revocable() && IsRevoked(comm));
}

}  // namespace

void SetSerialized(bool on) {
  g_serialized.store(on, std::memory_order_release);
}
bool Serialized() {
  return g_serialized.load(std::memory_order_acquire);
}

void SetOversubscribed(bool on) {
  g_oversubscribed.store(on, std::memory_order_release);
}
void SetRevocable(bool on) {
  g_revocable.store(on, std::memory_order_release);
}
bool Revocable() {
  return g_revocable.load(std::memory_order_acquire);
}
bool Polled() {
  return Serialized() || g_oversubscribed.load(std::memory_order_acquire) || Revocable();
}
bool Oversubscribed(int ranks_on_node, unsigned cores) {
  return cores > 0 && ranks_on_node > 0 && static_cast<unsigned>(ranks_on_node) > cores;
}

int LaunchersRanksOnNode() {
  for (const char *name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"}) {
    const char *v = std::getenv(name);
    const int n = v != nullptr ? std::atoi(v) : 0;
    if (n > 0) return n;
  }
  return 0;
}

bool PollsWhenOversubscribed(int world_size, int ranks_on_node, unsigned cores) {
#ifdef OPEN_MPI
  constexpr bool kMpich = false;
#else
  constexpr bool kMpich = true;
#endif
  return kMpich && ranks_on_node >= world_size && Oversubscribed(ranks_on_node, cores);
}

SerialLock::SerialLock() : held_(Serialized()) {
  if (held_) Mutex().lock();
}

SerialLock::~SerialLock() {
  if (held_) Mutex().unlock();
}

int Wait(MPI_Request *req, MPI_Status *status) {
  return Polled() ? WaitPolled(req, status) : MPI_Wait(req, status);
}

void RevokeLocally(MPI_Comm comm, bool aborted) {
  if (comm == MPI_COMM_NULL) return;
  std::lock_guard<std::mutex> lock(RevokedMutex());
  if (RevokedComm *r = FindRevoked(comm)) {
    r->aborted = r->aborted || aborted;
    return;
  }
  std::vector<RevokedComm> &v = RevokedComms();
  v.push_back({comm, aborted});
  g_revoked_count.store(static_cast<int>(v.size()), std::memory_order_release);
}

void ForgetRevoked(MPI_Comm comm) {
  if (g_revoked_count.load(std::memory_order_acquire) == 0) return;
  std::lock_guard<std::mutex> lock(RevokedMutex());
  std::vector<RevokedComm> &v = RevokedComms();
  v.erase(std::remove_if(v.begin(), v.end(), [&](const RevokedComm &r) { return r.comm == comm; }),
          v.end());
  g_revoked_count.store(static_cast<int>(v.size()), std::memory_order_release);
}

bool RevokedLocally(MPI_Comm comm) {
  if (g_revoked_count.load(std::memory_order_acquire) == 0 || comm == MPI_COMM_NULL) {
    return false;
  }
  std::lock_guard<std::mutex> lock(RevokedMutex());
  return FindRevoked(comm) != nullptr;
}

bool AbortedLocally(MPI_Comm comm) {
  if (g_revoked_count.load(std::memory_order_acquire) == 0 || comm == MPI_COMM_NULL) {
    return false;
  }
  std::lock_guard<std::mutex> lock(RevokedMutex());
  const RevokedComm *r = FindRevoked(comm);
  return r != nullptr && r->aborted;
}

int WaitP2p(MPI_Request *req, MPI_Status *status, MPI_Comm comm) {
  const bool sleeps = Polled();
  for (unsigned polls = 0;; ++polls) {
    int done = 0, rc;
    {
      SerialLock lock;
      rc = MPI_Test(req, &done, status);
    }
    if (rc != MPI_SUCCESS || done) return rc;
    if (polls % 64 == 63 && WaitEnds(comm)) {
      {
        SerialLock lock;
        MPI_Cancel(req);
      }
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
      while (*req != MPI_REQUEST_NULL && std::chrono::steady_clock::now() < until) {
        {
          SerialLock lock;
          if (MPI_Test(req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS || done) break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      if (!done && *req != MPI_REQUEST_NULL) {
        SerialLock lock;
        MPI_Request_free(req);
      }
      *req = MPI_REQUEST_NULL;
      return RevokedErrorCode();
    }
    if (!sleeps || polls < 1000) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
}

int WaitPolled(MPI_Request *req, MPI_Status *status, MPI_Comm comm) {
  // Yield first (a collective of a few bytes completes within a few polls),
  // then sleep briefly so that waiting threads leave the cores to the ranks
  // doing the work on an oversubscribed node.
  for (unsigned polls = 0;; ++polls) {
    int done = 0, rc;
    {
      SerialLock lock;
      rc = MPI_Test(req, &done, status);
    }
    if (rc != MPI_SUCCESS || done) return rc;
    if (polls % 64 == 63 && WaitEnds(comm)) return RevokedErrorCode();
    if (polls < 1000) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
}

}  // namespace infiniccl::mpi
