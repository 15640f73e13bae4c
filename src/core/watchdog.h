// Watchdog: one thread per process that ends a job whose collective has not
// completed within INFINICCL_TIMEOUT_SEC, instead of letting it hang.
//
// It polls each live communicator's InFlight record (no MPI call, no lock on
// the calling thread's side) every min(1 s, timeout/4). A call whose token
// it has seen for the whole timeout gets one ERROR line on this rank
// (operation, communicator, sequence number, count, dtype, op, root, path,
// and the ranks that have not reached it per the node's SeqBoard), then the
// job ends through MPI_Abort on that communicator with exit code
// kWatchdogExitCode. A backstop _exit()s the process if MPI_Abort itself
// does not return control to the launcher in time.
//
// The thread starts lazily with the first communicator and is joined by
// infinicclFinalize; with INFINICCL_TIMEOUT_SEC=0 it never starts.
#pragma once

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
};

}  // namespace infiniccl
