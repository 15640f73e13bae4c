// Send/Recv inside a group on the MPI path: posted as MPI_Isend/MPI_Irecv
// when called, completed at the outermost
// infinicclGroupEnd. So a ring in which every rank sends before it receives
// works for any message size: with blocking MPI_Send it deadlocks once the
// messages exceed MPI's eager limit, because every rank waits in its send
// for a receive that its peer has not posted yet.
//
// Staged device buffers: a Send copies its data to a pooled host buffer
// (on the user's stream, waited for) before MPI_Isend; a Recv receives into
// a pooled host buffer and copies it to the device after the wait, at
// GroupEnd. The leases live in this object, so until the group ends.
#pragma once

#include <mpi.h>

#include <vector>

#include "core/coll_args.h"
#include "comm/communicator.h"
#include "comm/group.h"
#include "device/device_runtime.h"
#include "staging/staging_pool.h"

namespace infiniccl {

class GroupP2p final : public DeferredWork {
 public:
  // This thread's batch in its open group (made on first use).
  static GroupP2p &OfCurrentGroup();

  ~GroupP2p() override;

  // `a` is a validated Send/Recv whose buffers MPI can access.
  Status Post(Communicator &comm, const CollArgs &a);
  // `a` is a validated Send/Recv on `device` memory, staged through host memory.
  Status PostStaged(Communicator &comm, DeviceRuntime &device, const CollArgs &a);

  Status Complete() override;

 private:
  struct Op {
    CollKind kind;
    int peer;
    size_t count;
    // Published to the watchdog while GroupEnd waits for this operation.
    Communicator *comm = nullptr;  // kept alive by the group until it clears
    infinicclDataType_t dtype = infinicclInt8;
    CallPath path = CallPath::kNone;
    size_t first_req, end_req;  // its requests in reqs_
    // Staged Recv: host buffer -> device buffer after the wait.
    DeviceRuntime *device = nullptr;
    void *device_dst = nullptr;
    const char *host_src = nullptr;
    size_t bytes = 0;
    void *stream = nullptr;
  };
  class PublishWait;
  Status PostRequests(Communicator &comm, const CollArgs &a, const void *buf, Op op);
  Status Unstage(const std::vector<bool> &ok);

  std::vector<MPI_Request> reqs_;
  std::vector<Op> ops_;
  std::vector<StagingLease> leases_;
};

}  // namespace infiniccl
