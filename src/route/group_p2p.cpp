#include "route/group_p2p.h"

#include <utility>

namespace infiniccl {

namespace {
const char kKey = 0;  // address identifies this work in the group

// The batch of the backend of `path`: the node's shared memory, or MPI.
std::unique_ptr<P2pBatch> NewBatch(Communicator &comm, Path path) {
  if (path == Path::kShm) return comm.shm_backend()->NewP2pBatch();
  return comm.has_mpi() ? comm.mpi_backend().NewP2pBatch() : nullptr;
}

// Posts `a` into `batch`, its buffer staged by `staging` on the device paths.
Status PostInto(P2pBatch &batch, P2pStaging &staging, const CollArgs &a, Path path,
                DeviceRuntime *device, const void *owner) {
  if (path == Path::kHostMpi || (path == Path::kShm && device == nullptr)) {
    return batch.Post(a, a.kind == CollKind::kSend ? a.sendbuff : a.recvbuff);
  }
  return staging.Post(batch, a, *device, path == Path::kDirectMpi, owner);
}
}  // namespace

GroupP2p &GroupP2p::OfCurrentGroup() {
  return Group::Current().Deferred<GroupP2p>(&kKey,
                                             [] { return std::make_unique<GroupP2p>(); });
}

Status GroupP2p::PostNow(PerComm &entry, const Op &op) {
  Communicator &comm = *entry.comm;
  if (!entry.posting) {
    // From this thread: after the communicator's queued work.
    INFINICCL_RETURN_IF_ERROR(comm.DrainQueued());
    entry.posting = true;
  }
  if (entry.batch == nullptr) {
    entry.batch = NewBatch(comm, op.path);
    if (entry.batch == nullptr) {
      return Status(infinicclInternalError, "the backend has no grouped Send/Recv");
    }
  }
  P2pBatch &batch = *entry.batch;
  const size_t before = batch.ops();
  const Status st = PostInto(batch, entry.staging, op.args, op.path, op.device, &comm);
  // Started (possibly in part): waited for at GroupEnd.
  if (batch.ops() > before) entry.posted.push_back(op);
  return st;
}

Status GroupP2p::Post(Communicator &comm, const CollArgs &a, Path path,
                      DeviceRuntime *device, int device_id) {
  PerComm *entry = nullptr;
  for (const auto &c : comms_) {
    if (c->comm == &comm) entry = c.get();
  }
  if (entry == nullptr) {
    comms_.push_back(std::make_unique<PerComm>());
    entry = comms_.back().get();
    entry->comm = &comm;
  }
  const Op op{a, path, device, device_id};
  const bool queueable = path != Path::kHostMpi && device != nullptr &&
                         comm.QueuesFor(*device) &&
                         (entry->kept.empty() || (entry->kept[0].device == device &&
                                                  entry->kept[0].device_id == device_id &&
                                                  entry->kept[0].args.stream == a.stream));
  if (!entry->posting && queueable) {
    entry->kept.push_back(op);
    return Status::Ok();
  }
  // Posted now: what was kept goes first, in call order.
  std::vector<Op> kept = std::move(entry->kept);
  entry->kept.clear();
  Status first;
  for (const Op &k : kept) {
    Status st = PostNow(*entry, k);
    if (!st.ok() && first.ok()) first = st;
  }
  Status st = PostNow(*entry, op);
  return first.ok() ? st : first;
}

Status GroupP2p::Complete() {
  Status first;
  for (const auto &entry : comms_) {
    Communicator &comm = *entry->comm;
    if (!entry->kept.empty()) {
      // One queued operation: the engine posts them all, waits for them all
      // and copies the staged receives back, on its own stream, after the
      // caller's stream reaches GroupEnd; that stream waits for it.
      std::vector<Op> ops = std::move(entry->kept);
      entry->kept.clear();
      QueuedOp q;
      q.args = ops[0].args;
      q.seq = 0;
      q.path = ops[0].path;
      q.device = ops[0].device;
      q.device_id = ops[0].device_id;
      Communicator *c = &comm;
      q.run = [c, ops = std::move(ops)](const CollArgs &x) -> Status {
        P2pStaging staging;  // declared first: its leases outlive the requests
        std::unique_ptr<P2pBatch> batch = NewBatch(*c, ops[0].path);
        if (batch == nullptr) {
          return Status(infinicclInternalError, "the backend has no grouped Send/Recv");
        }
        Status st;
        for (const Op &op : ops) {
          CollArgs a = op.args;
          a.stream = x.stream;
          Status posted = PostInto(*batch, staging, a, op.path, op.device, c);
          if (!posted.ok() && st.ok()) st = posted;
        }
        std::vector<bool> ok;
        // The engine shows the group (its first operation) to the watchdog.
        Status done = batch->Complete([](size_t) {}, &ok);
        if (!done.ok() && st.ok()) st = done;
        done = staging.Finish(ok);
        if (!done.ok() && st.ok()) st = done;
        return st;
      };
      q.done = [c](const Status &st) { c->NoteReturned(0, static_cast<int>(st.code())); };
      Status st = comm.Enqueue(std::move(q));
      if (!st.ok() && first.ok()) first = st;
      continue;
    }
    if (entry->batch == nullptr) continue;
    // The watchdog sees each wait as that Send or Recv (not sequenced,
    // naming the peer), so a peer that never posts its side is reported
    // (and the job ended) as for a blocking call.
    auto waiting = [&](size_t k) {
      const Op &op = entry->posted[k];
      comm.BeginCall(op.args, 0);
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
