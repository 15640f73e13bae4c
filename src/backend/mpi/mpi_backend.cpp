#include "backend/mpi/mpi_backend.h"

#include <cstring>

#include "backend/mpi/large_count.h"
#include "backend/mpi/mpi_error.h"
#include "backend/mpi/mpi_types.h"
#include "backend/mpi/reduce_scatter_ring.h"
#include "core/dtype.h"

namespace infiniccl {

namespace {

const void *SendOrInPlace(const CollArgs &a) {
  return a.in_place ? MPI_IN_PLACE : a.sendbuff;
}

}  // namespace

Status MpiBackend::Run(const CollArgs &a) {
  switch (a.kind) {
    case CollKind::kAllReduce: return AllReduce(a);
    case CollKind::kBroadcast: return Broadcast(a);
    case CollKind::kReduce: return Reduce(a);
    case CollKind::kAllGather: return AllGather(a);
    case CollKind::kGather: return Gather(a);
    case CollKind::kScatter: return Scatter(a);
    case CollKind::kReduceScatter: return ReduceScatter(a);
    case CollKind::kAllToAll: return AllToAll(a);
    case CollKind::kSend: return Send(a);
    case CollKind::kRecv: return Recv(a);
  }
  return MakeStatus(infinicclInternalError, "unknown collective kind %d",
                    static_cast<int>(a.kind));
}

Status MpiBackend::AllReduce(const CollArgs &a) {
  INFINICCL_RETURN_IF_ERROR(MpiCheck(
      mpi::Allreduce(SendOrInPlace(a), a.recvbuff, a.count, MpiTypeTable::Type(a.dtype),
                     DataTypeSize(a.dtype), MpiTypeTable::Op(a.dtype, a.op), comm_),
      "MPI_Allreduce"));
  if (a.op == infinicclAvg) DivideInPlace(a.recvbuff, a.count, a.dtype, size_);
  return Status::Ok();
}

Status MpiBackend::Broadcast(const CollArgs &a) {
  // The root broadcasts straight from sendbuff (MPI does not write the root's
  // buffer) and copies it to its own recvbuff only when they differ.
  void *buf = rank_ == a.root ? const_cast<void *>(a.sendbuff) : a.recvbuff;
  INFINICCL_RETURN_IF_ERROR(MpiCheck(
      mpi::Bcast(buf, a.count, MpiTypeTable::Type(a.dtype), DataTypeSize(a.dtype),
                 a.root, comm_),
      "MPI_Bcast"));
  if (rank_ == a.root && !a.in_place) {
    std::memcpy(a.recvbuff, a.sendbuff, a.count * DataTypeSize(a.dtype));
  }
  return Status::Ok();
}

void *MpiBackend::Scratch(size_t bytes) {
  if (scratch_.size() < bytes) scratch_.resize(bytes);
  return scratch_.data();
}

Status MpiBackend::Reduce(const CollArgs &a) {
  const bool root = rank_ == a.root;
  const void *send = root && a.in_place ? MPI_IN_PLACE : a.sendbuff;
#ifdef MPICH_VERSION
  // MPICH 4.0 dereferences MPI_IN_PLACE in MPI_Reduce at a root other than 0
  // once the message exceeds 2 KiB (segfault). Give it a copy instead.
  if (send == MPI_IN_PLACE && a.root != 0) {
    const size_t bytes = a.count * DataTypeSize(a.dtype);
    send = std::memcpy(Scratch(bytes), a.recvbuff, bytes);
  }
#endif
  INFINICCL_RETURN_IF_ERROR(MpiCheck(
      mpi::Reduce(send,
                  root ? a.recvbuff : nullptr, a.count, MpiTypeTable::Type(a.dtype),
                  DataTypeSize(a.dtype), MpiTypeTable::Op(a.dtype, a.op), a.root, comm_),
      "MPI_Reduce"));
  if (root && a.op == infinicclAvg) DivideInPlace(a.recvbuff, a.count, a.dtype, size_);
  return Status::Ok();
}

Status MpiBackend::AllGather(const CollArgs &a) {
  return MpiCheck(mpi::Allgather(SendOrInPlace(a), a.recvbuff, a.count,
                                 MpiTypeTable::Type(a.dtype), DataTypeSize(a.dtype), comm_),
                  "MPI_Allgather");
}

Status MpiBackend::Gather(const CollArgs &a) {
  const bool root = rank_ == a.root;
  return MpiCheck(mpi::Gather(root && a.in_place ? MPI_IN_PLACE : a.sendbuff,
                              root ? a.recvbuff : nullptr, a.count,
                              MpiTypeTable::Type(a.dtype), DataTypeSize(a.dtype), a.root,
                              comm_),
                  "MPI_Gather");
}

Status MpiBackend::Scatter(const CollArgs &a) {
  const bool root = rank_ == a.root;
  return MpiCheck(mpi::Scatter(root ? a.sendbuff : nullptr,
                               root && a.in_place ? MPI_IN_PLACE : a.recvbuff, a.count,
                               MpiTypeTable::Type(a.dtype), DataTypeSize(a.dtype), a.root,
                               comm_),
                  "MPI_Scatter");
}

Status MpiBackend::ReduceScatter(const CollArgs &a) {
  const size_t elem = DataTypeSize(a.dtype);
  const MPI_Datatype type = MpiTypeTable::Type(a.dtype);
  const MPI_Op op = MpiTypeTable::Op(a.dtype, a.op);
  // The ring combines on the CPU, so device memory read by MPI itself keeps
  // the MPI call.
  if (!a.mpi_reads_device && UseReduceScatterRing(size_, a.count, elem)) {
    INFINICCL_RETURN_IF_ERROR(ReduceScatterRing(a, type, op, comm_, rank_, size_,
                                                Scratch(2 * kRingChunkBytes)));
  } else {
    // NCCL's in-place layout keeps the result in the caller's own block of
    // sendbuff; MPI_IN_PLACE leaves it at the start of the buffer, so move it.
    void *mpi_recv = a.in_place ? const_cast<void *>(a.sendbuff) : a.recvbuff;
    INFINICCL_RETURN_IF_ERROR(
        MpiCheck(mpi::ReduceScatterBlock(SendOrInPlace(a), mpi_recv, a.count, type, elem, op,
                                         comm_),
                 "MPI_Reduce_scatter_block"));
    if (a.in_place && rank_ != 0) std::memmove(a.recvbuff, mpi_recv, a.count * elem);
  }
  if (a.op == infinicclAvg) DivideInPlace(a.recvbuff, a.count, a.dtype, size_);
  return Status::Ok();
}

Status MpiBackend::AllToAll(const CollArgs &a) {
  return MpiCheck(mpi::Alltoall(SendOrInPlace(a), a.recvbuff, a.count,
                                MpiTypeTable::Type(a.dtype), DataTypeSize(a.dtype), comm_),
                  "MPI_Alltoall");
}

Status MpiBackend::Send(const CollArgs &a) {
  return MpiCheck(mpi::Send(a.sendbuff, a.count, MpiTypeTable::Type(a.dtype),
                            DataTypeSize(a.dtype), a.root, kMpiP2pTag, comm_),
                  "MPI_Send");
}

Status MpiBackend::Recv(const CollArgs &a) {
  return MpiCheck(mpi::Recv(a.recvbuff, a.count, MpiTypeTable::Type(a.dtype),
                            DataTypeSize(a.dtype), a.root, kMpiP2pTag, comm_),
                  "MPI_Recv");
}

}  // namespace infiniccl
