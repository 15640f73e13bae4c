// Backend: something that runs collectives over buffers it can access (UCC
// calls it a transport layer). The MPI backend always exists; native CCLs
// (NCCL, MCCL) join behind the same interface. route/ picks one per call.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "core/coll_args.h"
#include "core/status.h"
#include "device/device_runtime.h"

namespace infiniccl {

// Send/Recv inside a group (infinicclGroupStart/End): each is started when
// called and finished at the outermost GroupEnd, so a ring in which every
// rank sends before it receives works for any message size (blocking sends
// deadlock there once messages pass the eager limit). One batch per backend
// per group.
class P2pBatch {
 public:
  virtual ~P2pBatch() = default;
  // Starts `a`, a validated Send/Recv, on `buf`: its own buffer or a host
  // buffer standing in for it, valid until Complete returns. An operation
  // that failed after part of it started still counts in ops().
  virtual Status Post(const CollArgs &a, const void *buf) = 0;
  virtual size_t ops() const = 0;
  // Waits for every operation in the order posted (all were started, so
  // none can wait for a later one), calling `waiting(k)` before operation
  // k; `ok[k]` says whether it completed. A completed Recv's sender is in
  // its CollArgs::source (when set) on return. Returns the first failure.
  virtual Status Complete(const std::function<void(size_t)> &waiting,
                          std::vector<bool> *ok) = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char *Name() const = 0;
  // Runs `args` (already validated, count > 0). Blocking for host buffers.
  virtual Status Run(const CollArgs &args) = 0;
  // nullptr when Run can take `args` with InfiniCCL's semantics, otherwise
  // why not (route/ then picks another path or reports it).
  virtual const char *Unsupported(const CollArgs &) const { return nullptr; }
  // Whether Run may be given memory of `kind` itself (a GPU-aware MPI); a
  // backend that cannot gets host buffers from staging/.
  virtual bool ReadsDeviceMemory(DeviceKind) const { return false; }
  // A batch for grouped Send/Recv; nullptr when this backend has none (a
  // CCL's own group calls defer its Send/Recv instead).
  virtual std::unique_ptr<P2pBatch> NewP2pBatch() { return nullptr; }
  // Whether Run (or, `grouped`, a P2pBatch) can match `args`, a Send/Recv
  // with a tag or from any source, as the API defines it; the error says
  // why not. Asked by the route before anything is posted or queued.
  virtual Status CheckMatching(const CollArgs &, bool /*grouped*/) const {
    return Status::Ok();
  }
  // A native CCL's own split of its communicator (ncclCommSplit), collective
  // over every rank of this backend's communicator. A negative color takes
  // part and gets no backend. `*rank`/`*size`: this rank's place in the new
  // communicator when known (the MPI split's, which orders ranks the same
  // way); -1 to have the CCL fill them in (a communicator without MPI).
  // Gives the backend up without waiting for its queued work or talking to
  // other ranks (ncclCommAbort); nothing for backends without such work.
  virtual void Abort() {}
  // Ends the calls on this backend's communicator of this rank and of its
  // peers, now and later, without waiting (a peer blocked on this rank,
  // which gave up a call halfway, returns too): with an MPI that tolerates
  // failures, MPIX_Comm_revoke of its MPI communicator (MPI, the emulated
  // CCL); nothing for the others.
  virtual void Revoke() {}
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
