// Send/Recv inside a group: finished at the outermost infinicclGroupEnd, so a
// ring in which every rank sends before it receives works for any message
// size. The posting is the backend's (P2pBatch), the staging of device
// buffers staging/'s (P2pStaging); this work keeps one batch per
// communicator in the group and shows each wait to the watchdog.
//
// Two ways, per communicator in the group:
// - Queued: device-buffer Send/Recv that go through MPI on a communicator
//   whose calls the progress engine queues (progress/engine.h), all on one
//   stream of one device, are kept until GroupEnd and handed to the engine
//   there as ONE operation (post all, wait all, copy the staged receives
//   back), ordered on that stream; GroupEnd returns at once.
// - Posted now, completed at GroupEnd on this thread: host buffers, a
//   communicator that does not queue, or a group that mixes streams or
//   devices. The first such call posts the operations kept so far before
//   itself, so every rank posts in call order (MPI matches in that order).
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
  // or staged MPI); `device` and `device_id` are its buffer's runtime and
  // device on the device paths.
  Status Post(Communicator &comm, const CollArgs &a, Path path, DeviceRuntime *device,
              int device_id);

  Status Complete() override;

 private:
  struct Op {
    CollArgs args;
    Path path;
    DeviceRuntime *device;
    int device_id;
  };
  struct PerComm {
    Communicator *comm;  // kept alive by the group until it clears
    std::vector<Op> kept;  // not posted yet: queued at GroupEnd
    bool posting = false;  // posted from this thread (kept is empty then)
    P2pStaging staging;  // declared first: its leases outlive the requests
    std::unique_ptr<P2pBatch> batch;
    std::vector<Op> posted;  // what the watchdog shows while GroupEnd waits
  };
  // Posts `op` into `entry`'s batch (made on first use) from this thread.
  static Status PostNow(PerComm &entry, const Op &op);
  std::vector<std::unique_ptr<PerComm>> comms_;
};

}  // namespace infiniccl
