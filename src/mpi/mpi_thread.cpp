#include "mpi/mpi_thread.h"

#include "mpi/fault_tolerance.h"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>

namespace infiniccl::mpi {

namespace {

std::atomic<bool> g_serialized{false};
std::atomic<bool> g_oversubscribed{false};
std::atomic<bool> g_revocable{false};

std::recursive_mutex &Mutex() {
  static std::recursive_mutex *m = new std::recursive_mutex();  // usable at exit
  return *m;
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

int WaitPolled(MPI_Request *req, MPI_Status *status, MPI_Comm comm) {
  const bool revocable = comm != MPI_COMM_NULL && Revocable();
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
    if (revocable && polls % 64 == 63 && IsRevoked(comm)) return RevokedErrorCode();
    if (polls < 1000) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
}

}  // namespace infiniccl::mpi
