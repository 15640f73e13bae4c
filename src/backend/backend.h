// Backend: something that runs collectives over buffers it can access (UCC
// calls it a transport layer). The MPI backend always exists; native CCLs
// (NCCL, MCCL) join behind the same interface. route/ picks one per call.
#pragma once

#include <memory>

#include "core/coll_args.h"
#include "core/status.h"

namespace infiniccl {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char *Name() const = 0;
  // Runs `args` (already validated, count > 0). Blocking for host buffers.
  virtual Status Run(const CollArgs &args) = 0;
  // nullptr when Run can take `args` with InfiniCCL's semantics, otherwise
  // why not (route/ then picks another path or reports it).
  virtual const char *Unsupported(const CollArgs &) const { return nullptr; }
  // A native CCL's own split of its communicator (ncclCommSplit), collective
  // over every rank of this backend's communicator. A negative color takes
  // part and gets no backend. `*rank`/`*size`: this rank's place in the new
  // communicator when known (the MPI split's, which orders ranks the same
  // way); -1 to have the CCL fill them in (a communicator without MPI).
  // Gives the backend up without waiting for its queued work or talking to
  // other ranks (ncclCommAbort); nothing for backends without such work.
  virtual void Abort() {}
  // An error of work queued earlier and failed since (ncclCommGetAsyncError),
  // or Ok; must not block. Backends whose calls finish before they return
  // have none.
  virtual Status AsyncError() const { return Status::Ok(); }
  virtual Status SplitNative(int /*color*/, int /*key*/, int * /*rank*/, int * /*size*/,
                             std::unique_ptr<Backend> * /*out*/) {
    return Status(infinicclNotSupported, "this backend has no native split");
  }
};

}  // namespace infiniccl
