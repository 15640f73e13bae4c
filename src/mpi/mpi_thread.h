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
// serialised (above), or when SetOversubscribed(PollsWhenOversubscribed())
// said so. A rank waiting inside MPICH's blocking calls busy-polls without
// yielding, taking a core from the rank it waits for, or from its own
// thread that computes (a DDP step's backward); a polled wait leaves it to
// them. Set by Runtime::Init; off after Finalize.
void SetOversubscribed(bool on);
// Set by Runtime::Init where MPI tolerates failures at run time (Open MPI 5
// under `mpirun --with-ft ulfm`): waits poll, and a wait given its
// communicator ends with MPIX_ERR_REVOKED once that communicator is
// revoked. Open MPI 5.0.11's blocking collectives can go on waiting after
// a revoke, in a rendezvous send to a peer that left the call with the
// failure (fault_ulfm_kill_device_ccl_np4 hung about one run in ten).
void SetRevocable(bool on);
bool Revocable();
bool Polled();
// Ranks sharing this node against its cores.
bool Oversubscribed(int ranks_on_node, unsigned cores);
// Ranks on this node as the launcher says (Open MPI's
// OMPI_COMM_WORLD_LOCAL_SIZE, MPICH Hydra's MPI_LOCALNRANKS); 0 if neither.
int LaunchersRanksOnNode();
// Whether a job of `world_size` ranks, `ranks_on_node` of them on this
// node's `cores`, polls its waits: with MPICH, only a job on a single node
// (every rank here) that is oversubscribed. Every rank of a communicator
// must wait alike, since a blocking collective does not match a nonblocking
// one; on one node every rank sees the same ranks and cores and decides
// alike without a word, over several (some oversubscribed, some not) they
// would differ (nodes_*_1_2_3 hung when they did). Never with Open MPI: its
// waits yield by themselves once its launcher sees more ranks than slots,
// and its nonblocking collectives are slower than its blocking ones at
// small sizes (docs/PERFORMANCE.md, "Python and torch").
bool PollsWhenOversubscribed(int world_size, int ranks_on_node, unsigned cores);

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

// infinicclCommRevoke (or CommAbort) of `comm` in this process: the
// library's waits on it (WaitPolled, WaitP2p) end with RevokedErrorCode()
// within a few polls, with or without a fault-tolerant MPI. Kept for the
// life of the process or until ForgetRevoked: the MPI communicator of a
// revoked or aborted communicator is never freed.
// `aborted`: by infinicclCommAbort (AbortedLocally says so).
void RevokeLocally(MPI_Comm comm, bool aborted = false);
// One relaxed load while nothing was revoked in this process.
bool RevokedLocally(MPI_Comm comm);
// Whether RevokeLocally marked `comm` for infinicclCommAbort.
bool AbortedLocally(MPI_Comm comm);
// Before MPI_Comm_free of a communicator that may have been revoked so
// (a failed two-level step revokes its transports, which are freed
// afterwards): MPI may hand its handle to another communicator.
void ForgetRevoked(MPI_Comm comm);

// Completes `*req` polling MPI_Test (under the lock when serialised, released
// between polls); `status` as MPI_Wait's. When `comm` is given, returns
// RevokedErrorCode() once `comm` is revoked in this process (RevokeLocally)
// or, when Revocable(), by any process; the request (a collective's: MPI
// allows neither cancelling nor freeing it) is left to the revoked
// communicator.
int WaitPolled(MPI_Request *req, MPI_Status *status = MPI_STATUS_IGNORE,
               MPI_Comm comm = MPI_COMM_NULL);
// The wait of a point-to-point request on `comm` (MPI_Isend, MPI_Irecv): as
// WaitPolled when Polled(); otherwise MPI_Test polls that yield the core
// between polls and never sleep (as MPI's own blocking wait spins). Once
// `comm` is revoked, the request is cancelled (a receive not yet matched
// writes nothing afterwards), or freed if the cancel does not complete
// within a second, and RevokedErrorCode() is returned.
int WaitP2p(MPI_Request *req, MPI_Status *status, MPI_Comm comm);
// WaitPolled when Polled(), else MPI_Wait.
int Wait(MPI_Request *req, MPI_Status *status = MPI_STATUS_IGNORE);

// Polled mode: posts a nonblocking call, `start(&request)` (under the lock
// when serialised), and waits for it as above.
template <typename Start>
int PostAndWait(Start start, MPI_Status *status = MPI_STATUS_IGNORE,
                MPI_Comm comm = MPI_COMM_NULL) {
  MPI_Request request = MPI_REQUEST_NULL;
  int rc;
  {
    SerialLock lock;
    rc = start(&request);
  }
  if (rc != MPI_SUCCESS) return rc;
  return WaitPolled(&request, status, comm);
}

// A point-to-point call (MPI_Send, MPI_Recv and their large-count forms):
// `start(&request)` posts its nonblocking form (under the lock when
// serialised), and WaitP2p completes it, so that a revoke ends it.
template <typename Start>
int PostAndWaitP2p(Start start, MPI_Status *status, MPI_Comm comm) {
  MPI_Request request = MPI_REQUEST_NULL;
  int rc;
  {
    SerialLock lock;
    rc = start(&request);
  }
  if (rc != MPI_SUCCESS) return rc;
  return WaitP2p(&request, status, comm);
}

}  // namespace infiniccl::mpi
