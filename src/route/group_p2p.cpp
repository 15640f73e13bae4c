#include "route/group_p2p.h"

namespace infiniccl {

namespace {
const char kKey = 0;  // address identifies this work in the group
}  // namespace

GroupP2p &GroupP2p::OfCurrentGroup() {
  return Group::Current().Deferred<GroupP2p>(&kKey,
                                             [] { return std::make_unique<GroupP2p>(); });
}

Status GroupP2p::Post(Communicator &comm, const CollArgs &a, Path path,
                      DeviceRuntime *device) {
  PerComm *entry = nullptr;
  for (const auto &c : comms_) {
    if (c->comm == &comm) entry = c.get();
  }
  if (entry == nullptr) {
    auto made = std::make_unique<PerComm>();
    made->comm = &comm;
    made->batch = comm.mpi_backend().NewP2pBatch();
    if (made->batch == nullptr) {
      return Status(infinicclInternalError, "the MPI backend has no grouped Send/Recv");
    }
    entry = made.get();
    comms_.push_back(std::move(made));
  }
  P2pBatch &batch = *entry->batch;
  const size_t before = batch.ops();
  const Status st =
      path == Path::kHostMpi
          ? batch.Post(a, a.kind == CollKind::kSend ? a.sendbuff : a.recvbuff)
          : entry->staging.Post(batch, a, *device, path == Path::kDirectMpi, &comm);
  // Started (possibly in part): waited for at GroupEnd.
  if (batch.ops() > before) entry->ops.push_back({a.kind, a.root, a.count, a.dtype, path});
  return st;
}

Status GroupP2p::Complete() {
  Status first;
  for (const auto &entry : comms_) {
    Communicator &comm = *entry->comm;
    // The watchdog sees each wait as that Send or Recv (not sequenced,
    // naming the peer), so a peer that never posts its side is reported
    // (and the job ended) as for a blocking call.
    auto waiting = [&](size_t k) {
      const Op &op = entry->ops[k];
      CollArgs a{};
      a.kind = op.kind;
      a.count = op.count;
      a.dtype = op.dtype;
      a.op = infinicclSum;
      a.root = op.peer;
      comm.BeginCall(a, 0);
      comm.inflight().SetPath(op.path);
    };
    std::vector<bool> ok;
    Status st = entry->batch->Complete(waiting, &ok);
    comm.EndCall();
    if (!st.ok() && first.ok()) first = st;
    st = entry->staging.Finish(ok);
    if (!st.ok() && first.ok()) first = st;
  }
  return first;
}

}  // namespace infiniccl
