// Watchdog: one thread per process that ends a job whose collective has not
// completed within INFINICCL_TIMEOUT_SEC, instead of letting it hang.
//
// It polls each live communicator's InFlight record (no MPI call, no lock on
// the calling thread's side) every min(1 s, timeout/4). A call whose token
// it has seen for the whole timeout gets one ERROR line on this rank
// (operation, communicator, sequence number, count, dtype, op, root, path,
// and what the node's SeqBoard says of the others: who has not reached it,
// who sits in a different operation at the same number, who returned from
// it early, who has left the communicator or is gone). Then exactly one rank
// per node ends the job through MPI_Abort on that communicator with exit
// code kWatchdogExitCode; the others _exit after a grace period, and the
// aborting rank's last resort kills the node's other ranks and exits should
// the launcher not end the job.
//
// The thread starts lazily with the first communicator and is joined by
// infinicclFinalize; with INFINICCL_TIMEOUT_SEC=0 it never starts.
#pragma once

#include <cstdint>
#include <string>

namespace infiniccl {

class Communicator;

// The same code as coreutils `timeout`, so scripts recognise a time-out.
inline constexpr int kWatchdogExitCode = 124;

class Watchdog {
 public:
  static void Watch(Communicator *comm);
  static void Unwatch(Communicator *comm);
  // Stops and joins the thread (a later Watch starts it again).
  static void Stop();
  // The part of the ERROR line about the other ranks, for collective `seq`
  // of kind `kind` (a CollKind) on `comm`; exposed for tests.
  static std::string DescribeOthers(const Communicator &comm, uint64_t seq, int kind);
  // Each call in flight on `comm` (the calling thread's, then its progress
  // engine's), one per line, as the ERROR line names it less the time it has
  // waited; empty when none is. No lock held against the calling thread, no
  // MPI call (infinicclCommDescribeWait).
  static std::string DescribeWait(Communicator &comm);
};

}  // namespace infiniccl
