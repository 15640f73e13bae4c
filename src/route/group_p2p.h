// Send/Recv inside a group: each is started when called (on the path the
// route chose for it) and finished at the outermost infinicclGroupEnd, so a
// ring in which every rank sends before it receives works for any message
// size. The posting is the backend's (P2pBatch), the staging of device
// buffers staging/'s (P2pStaging); this work only keeps one of each per
// communicator in the group and shows each wait to the watchdog.
#pragma once

#include <memory>
#include <vector>

#include "backend/backend.h"
#include "comm/communicator.h"
#include "comm/group.h"
#include "staging/p2p_staging.h"

namespace infiniccl {

class GroupP2p final : public DeferredWork {
 public:
  // This thread's batch in its open group (made on first use).
  static GroupP2p &OfCurrentGroup();

  // `a` is a validated Send/Recv on `comm`, routed to `path` (host, direct
  // or staged MPI); `device` is its buffer's runtime on the device paths.
  Status Post(Communicator &comm, const CollArgs &a, Path path, DeviceRuntime *device);

  Status Complete() override;

 private:
  struct Op {  // what the watchdog shows while GroupEnd waits for it
    CollKind kind;
    int peer;
    size_t count;
    infinicclDataType_t dtype;
    Path path;
  };
  struct PerComm {
    Communicator *comm;  // kept alive by the group until it clears
    P2pStaging staging;  // declared first: its leases outlive the requests
    std::unique_ptr<P2pBatch> batch;
    std::vector<Op> ops;
  };
  std::vector<std::unique_ptr<PerComm>> comms_;
};

}  // namespace infiniccl
