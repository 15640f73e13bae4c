#include "route/group_p2p.h"

#include <cstdio>
#include <set>

#include "mpi/large_count.h"
#include "backend/mpi/mpi_backend.h"
#include "mpi/mpi_error.h"
#include "mpi/mpi_thread.h"
#include "mpi/mpi_types.h"
#include "core/dtype.h"

namespace infiniccl {

namespace {

const char kKey = 0;  // address identifies this work in the group

// MPICH 4.0 reports a failed MPI_Wait (MPI_ERR_TRUNCATE, say) through the
// error handler of MPI_COMM_WORLD, fatal by default, rather than that of the
// request's communicator (MPI_ERRORS_RETURN on ours), as Open MPI does. So
// while the group's requests are waited for, MPI_COMM_WORLD returns errors;
// its own handler is put back afterwards.
class WorldErrorsReturn {
 public:
  WorldErrorsReturn() {
#ifdef MPICH_VERSION
    mpi::SerialLock lock;
    if (MPI_Comm_get_errhandler(MPI_COMM_WORLD, &saved_) == MPI_SUCCESS) {
      MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    } else {
      saved_ = MPI_ERRHANDLER_NULL;
    }
#endif
  }
  ~WorldErrorsReturn() {
    if (saved_ != MPI_ERRHANDLER_NULL) {
      mpi::SerialLock lock;
      MPI_Comm_set_errhandler(MPI_COMM_WORLD, saved_);
      MPI_Errhandler_free(&saved_);
    }
  }
  WorldErrorsReturn(const WorldErrorsReturn &) = delete;
  WorldErrorsReturn &operator=(const WorldErrorsReturn &) = delete;

 private:
  MPI_Errhandler saved_ = MPI_ERRHANDLER_NULL;
};

}  // namespace

// While GroupEnd waits for one operation, its communicator shows it in
// flight (a Send or Recv, not sequenced, naming the peer).
class GroupP2p::PublishWait {
 public:
  explicit PublishWait(const Op &op) : comm_(*op.comm) {
    CollArgs a{};
    a.kind = op.kind;
    a.count = op.count;
    a.dtype = op.dtype;
    a.op = infinicclSum;
    a.root = op.peer;
    comm_.BeginCall(a, 0);
    comm_.inflight().SetPath(op.path);
  }
  ~PublishWait() { comm_.EndCall(); }
  PublishWait(const PublishWait &) = delete;
  PublishWait &operator=(const PublishWait &) = delete;

 private:
  Communicator &comm_;
};

GroupP2p &GroupP2p::OfCurrentGroup() {
  return Group::Current().Deferred<GroupP2p>(&kKey,
                                             [] { return std::make_unique<GroupP2p>(); });
}

GroupP2p::~GroupP2p() {
  // Only reached with requests outstanding when a thread exits inside a
  // group (Complete always waits): release them rather than leak them.
  int finalized = 1;
  MPI_Finalized(&finalized);
  if (finalized) return;
  mpi::SerialLock lock;
  for (const Op &op : ops_) {
    for (size_t i = op.first_req; i < op.end_req; ++i) {
      if (reqs_[i] == MPI_REQUEST_NULL) continue;
      if (op.kind == CollKind::kRecv) MPI_Cancel(&reqs_[i]);
      MPI_Request_free(&reqs_[i]);
    }
  }
}

Status GroupP2p::PostRequests(Communicator &comm, const CollArgs &a, const void *buf,
                              Op op) {
  op.kind = a.kind;
  op.peer = a.root;
  op.count = a.count;
  op.comm = &comm;
  op.dtype = a.dtype;
  // Posted from inside the published call, which route.cpp labelled.
  op.path = static_cast<CallPath>(comm.inflight().path.load(std::memory_order_relaxed));
  op.first_req = reqs_.size();
  const MPI_Datatype type = MpiTypeTable::Type(a.dtype);
  const size_t elem = DataTypeSize(a.dtype);
  int rc;
  if (a.kind == CollKind::kSend) {
    rc =
        mpi::Isend(buf, a.count, type, elem, a.root, kMpiP2pTag, comm.mpi_comm(), &reqs_);
  } else {
    rc = mpi::Irecv(const_cast<void *>(buf), a.count, type, elem, a.root, kMpiP2pTag,
                    comm.mpi_comm(), &reqs_);
  }
  op.end_req = reqs_.size();
  // Requests already started (one chunk of several) are waited for at End.
  if (op.end_req > op.first_req) ops_.push_back(op);
  return MpiCheck(rc, a.kind == CollKind::kSend ? "MPI_Isend" : "MPI_Irecv");
}

Status GroupP2p::Post(Communicator &comm, const CollArgs &a) {
  return PostRequests(comm, a, a.kind == CollKind::kSend ? a.sendbuff : a.recvbuff, Op{});
}

Status GroupP2p::PostStaged(Communicator &comm, DeviceRuntime &device,
                            const CollArgs &a) {
  StagingPool &pool = StagingPool::Global();
  const size_t bytes = a.count * DataTypeSize(a.dtype);
  StagingLease lease;
  INFINICCL_RETURN_IF_ERROR(pool.Lease(bytes, device, &comm, &lease));
  // Kept until the group is cleared whatever fails below, so that no copy
  // still in flight writes into a buffer back in the pool.
  char *host = lease.data();
  leases_.push_back(std::move(lease));
  pool.CountCall(false);
  Op op;
  if (a.kind == CollKind::kSend) {
    // The data must be on the host before MPI may read it.
    INFINICCL_RETURN_IF_ERROR(
        device.MemcpyAsync(host, a.sendbuff, bytes, CopyKind::kDeviceToHost, a.stream));
    pool.CountCopy(CopyKind::kDeviceToHost, bytes);
    INFINICCL_RETURN_IF_ERROR(device.StreamSynchronize(a.stream));
  } else {
    op.device = &device;
    op.device_dst = a.recvbuff;
    op.host_src = host;
    op.bytes = bytes;
    op.stream = a.stream;
  }
  return PostRequests(comm, a, host, op);
}

Status GroupP2p::Unstage(const std::vector<bool> &ok) {
  Status first;
  std::set<std::pair<DeviceRuntime *, void *>> streams;
  StagingPool &pool = StagingPool::Global();
  for (size_t k = 0; k < ops_.size(); ++k) {
    const Op &op = ops_[k];
    if (op.device == nullptr) continue;
    if (!ok[k]) continue;  // nothing valid arrived: leave the device buffer alone
    Status st = op.device->MemcpyAsync(op.device_dst, op.host_src, op.bytes,
                                       CopyKind::kHostToDevice, op.stream);
    if (st.ok()) {
      pool.CountCopy(CopyKind::kHostToDevice, op.bytes);
      streams.insert({op.device, op.stream});
    } else if (first.ok()) {
      first = st;
    }
  }
  // The leases go back to the pool when the group is cleared, so the copies
  // out of them must be done by then; GroupEnd returns with recvbuff filled.
  for (const auto &[device, stream] : streams) {
    Status st = device->StreamSynchronize(stream);
    if (!st.ok() && first.ok()) first = st;
  }
  return first;
}

Status GroupP2p::Complete() {
  // Every operation is posted before any is waited for, so waiting for them
  // one by one cannot deadlock (MPI's progress rule), and each failure is
  // attributed to its operation. One MPI_Waitall would do the same, but Open
  // MPI 4.1 was seen to hang in it when one request fails (MPI_ERR_TRUNCATE)
  // with three or more ranks.
  Status first;
  std::vector<bool> ok(ops_.size(), true);
  WorldErrorsReturn errors_return;
  for (size_t k = 0; k < ops_.size(); ++k) {
    const Op &op = ops_[k];
    // The watchdog sees the wait as this Send or Recv, so a peer that never
    // posts its side is reported (and the job ended) as for a blocking call.
    PublishWait published(op);
    for (size_t i = op.first_req; i < op.end_req; ++i) {
      // Serialised (below MPI_THREAD_MULTIPLE): polled under the library's
      // lock, never held across the wait (mpi_thread.h).
      const int rc = mpi::Serialized() ? mpi::WaitSerialized(&reqs_[i])
                                       : MPI_Wait(&reqs_[i], MPI_STATUS_IGNORE);
      if (rc == MPI_SUCCESS) continue;
      ok[k] = false;
      if (first.ok()) {
        char what[160];
        std::snprintf(what, sizeof what, "completing %s of %zu elements %s peer %d",
                      CollKindName(op.kind), op.count,
                      op.kind == CollKind::kSend ? "to" : "from", op.peer);
        first = MpiError(rc, what);
      }
      // A failed request is freed by MPI; make sure it is not touched again.
      reqs_[i] = MPI_REQUEST_NULL;
    }
  }
  Status unstaged = Unstage(ok);
  return first.ok() ? unstaged : first;
}

}  // namespace infiniccl
