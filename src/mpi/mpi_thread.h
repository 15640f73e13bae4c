// How the library calls MPI from several threads.
//
// With MPI_THREAD_MULTIPLE every call goes straight to MPI: collectives on
// different communicators from different threads run concurrently.
//
// Below it (an application that started MPI itself with SINGLE, FUNNELED or
// SERIALIZED), one process-wide lock serialises the library's MPI calls. A
// lock held across a blocking collective would deadlock as soon as two ranks
// run their threads' collectives in different orders (rank 0 blocks in comm A
// holding the lock, rank 1 in comm B), so collectives are then posted as
// nonblocking calls and completed by MPI_Test polls, each poll under the
// lock: a waiting thread never holds it, and any poll progresses every
// thread's request.
#pragma once

#include <mpi.h>

#include <mutex>

namespace infiniccl::mpi {

// Set by Runtime::Init from the thread level MPI provides; off after Finalize.
void SetSerialized(bool on);
bool Serialized();

// Whether the library waits for MPI by polling (MPI_Test, yielding, then
// short sleeps: WaitPolled) rather than in MPI's blocking calls: when
// serialised (above), and, with MPICH, when a job on a single node runs more
// ranks than it has cores (every rank of a communicator must wait alike: a
// blocking collective does not match a nonblocking one). A rank waiting inside MPICH's blocking calls busy-polls without
// yielding, taking a core from the rank it waits for, or from its own thread
// that computes (a DDP step's backward); a polled wait leaves it to them.
// Open MPI yields by itself when its launcher sees more ranks than slots.
// Set by Runtime::Init; off after Finalize.
void SetOversubscribed(bool on);
bool Polled();
// Ranks sharing this node against its cores: what SetOversubscribed takes.
bool Oversubscribed(int ranks_on_node, unsigned cores);

// Held around MPI calls that have no nonblocking form (communicator creation
// and freeing, datatype construction). Recursive: a communicator freed on an
// error path of a locked section takes it again. No-op under MULTIPLE.
class SerialLock {
 public:
  SerialLock();
  ~SerialLock();
  SerialLock(const SerialLock &) = delete;
  SerialLock &operator=(const SerialLock &) = delete;

 private:
  bool held_ = false;
};

// Completes `*req` polling MPI_Test (under the lock when serialised, released
// between polls).
int WaitPolled(MPI_Request *req);
// WaitPolled when Polled(), else MPI_Wait.
int Wait(MPI_Request *req);

// Polled mode: posts a nonblocking call, `start(&request)` (under the lock
// when serialised), and waits for it as above.
template <typename Start>
int PostAndWait(Start start) {
  MPI_Request request = MPI_REQUEST_NULL;
  int rc;
  {
    SerialLock lock;
    rc = start(&request);
  }
  if (rc != MPI_SUCCESS) return rc;
  return WaitPolled(&request);
}

}  // namespace infiniccl::mpi
