// Runtime: the library's process-wide state between infinicclInit and
// infinicclFinalize: whether MPI was started by us, the world rank/size, and
// the registry that maps infinicclComm_t handles to live communicators.
//
// Handles are never reused (a counter, not an address), so a destroyed
// handle is recognised as destroyed rather than aliasing a newer comm; the
// counter is tagged with a random per-process part, so a small integer or a
// stray pointer is not mistaken for a live communicator.
#pragma once

#include <infiniccl/infiniccl.h>

#include <memory>

#include "comm/communicator.h"
#include "core/status.h"

namespace infiniccl {

class Runtime {
 public:
  static Status Init(int *argc, char ***argv);
  static Status Finalize();
  // InvalidUsage unless between Init and Finalize.
  static Status CheckActive();

  static int world_rank();
  static int world_size();

  // Registers `comm` and returns its new handle.
  static infinicclComm_t Register(std::unique_ptr<Communicator> comm);
  // Looks a handle up. InvalidArgument for NULL or a handle never issued,
  // InvalidUsage for one already destroyed.
  static Status Lookup(infinicclComm_t handle, std::shared_ptr<Communicator> *out);
  // Lookup for calls on a communicator: between Init and Finalize, or for a
  // communicator without MPI (infinicclCommInitRank) also before Init.
  static Status LookupUsable(infinicclComm_t handle, std::shared_ptr<Communicator> *out);
  // Removes it; the communicator is freed when the last in-flight call ends.
  static Status Unregister(infinicclComm_t handle);
  // infinicclCommAbort: marks the communicator aborted and removes its
  // handle, which Lookup then reports as aborted. `out` keeps it alive for
  // the caller, who decides what to do about calls still in flight.
  static Status Abort(infinicclComm_t handle, std::shared_ptr<Communicator> *out);
};

}  // namespace infiniccl
