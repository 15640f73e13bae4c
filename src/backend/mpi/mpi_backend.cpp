#include "backend/mpi/mpi_backend.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstring>

#include "backend/mpi/gpu_aware.h"
#include "backend/mpi/host_pieces.h"
#include "backend/mpi/p2p_batch.h"
#include "mpi/fault_tolerance.h"
#include "mpi/large_count.h"
#include "mpi/mpi_error.h"
#include "mpi/mpi_tags.h"
#include "mpi/mpi_thread.h"
#include "mpi/mpi_types.h"
#include "backend/mpi/rings.h"
#include "core/dtype.h"
#include "core/log.h"
#include "core/pieces.h"

namespace infiniccl {

namespace {

// From this size (the same on every rank) Broadcast is nonblocking and the
// root copies into its recvbuff while MPI sends, in pieces of
// kBcastCopyPiece between MPI_Test calls. Measured in docs/PERFORMANCE.md.
constexpr size_t kBcastOverlapBytes = size_t{256} << 10;
constexpr size_t kBcastCopyPiece = size_t{256} << 10;
// Avg on device buffers (direct path) is divided on the host through this
// much scratch at a time.
constexpr size_t kAveragePieceBytes = size_t{1} << 20;
#ifdef MPICH_VERSION
// What the scratch may keep between calls: what the ring and Avg use.
constexpr size_t kKeptScratchBytes = 2 * kRingChunkBytes;
// The root's buffer from which MPICH 4.0's MPI_Scatter crashes (Scatter).
constexpr size_t kMpichScatterCrashBytes = size_t{1} << 31;
#endif

const void *SendOrInPlace(const CollArgs &a) {
  return a.in_place ? MPI_IN_PLACE : a.sendbuff;
}

// `p` advanced by `bytes`; MPI_IN_PLACE and nullptr stay what they are.
const void *At(const void *p, size_t bytes) {
  if (p == MPI_IN_PLACE || p == nullptr) return p;
  return static_cast<const char *>(p) + bytes;
}
void *At(void *p, size_t bytes) {
  if (p == nullptr) return p;
  return static_cast<char *>(p) + bytes;
}

}  // namespace

bool MpiBackend::ReadsDeviceMemory(DeviceKind kind) const {
  return MpiReadsDeviceMemory(kind);
}

std::unique_ptr<P2pBatch> MpiBackend::NewP2pBatch() {
  return std::make_unique<MpiP2pBatch>(comm_);
}

Status MpiBackend::Run(const CollArgs &a) {
  Status st = RunKind(a);
  // Its wait ended by infinicclCommRevoke on this rank (mpi_thread.h).
  if (!st.ok() && mpi::RevokedLocally(comm_)) return RevokedStatus(comm_, CollKindName(a.kind));
  // A process of comm_ failed during the call. MPI reports it only to the
  // processes that talked to the failed one; a peer that talks only to this
  // process, and would wait forever for a message this process will not
  // send, returns once comm_ is revoked (with a fault-tolerant MPI).
  if (st.code() == infinicclRemoteError && mpi::FtCompiled()) {
    std::vector<int> failed;
    if (mpi::FailedRanks(comm_, &failed).ok() && !failed.empty()) {
      INFINICCL_INFO("%s: a process of its MPI communicator failed; revoking it so that the "
                     "peers still inside the call return", CollKindName(a.kind));
      (void)mpi::Revoke(comm_);
    }
  }
  return st;
}

Status MpiBackend::RunKind(const CollArgs &a) {
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
  const size_t elem = DataTypeSize(a.dtype);
  const MPI_Datatype type = MpiTypeTable::Type(a.dtype);
  const MPI_Op op = MpiTypeTable::Op(a.dtype, a.op);
  // Large host buffers: one MPI call per piece (host_pieces.h); Avg divides
  // each piece while it is still in cache.
  const HostPiecePlan plan = HostPiecesFor(a, 1);
  for (size_t k = 0; k < plan.pieces(); ++k) {
    const size_t off = plan.offset(k) * elem, n = plan.size(k);
    INFINICCL_RETURN_IF_ERROR(MpiCheck(mpi::Allreduce(At(SendOrInPlace(a), off),
                                                      At(a.recvbuff, off), n, type, elem, op,
                                                      comm_),
                                       "MPI_Allreduce"));
    if (a.op == infinicclAvg) INFINICCL_RETURN_IF_ERROR(Average(a, At(a.recvbuff, off), n));
  }
  return Status::Ok();
}

Status MpiBackend::Broadcast(const CollArgs &a) {
  const size_t elem = DataTypeSize(a.dtype), bytes = a.count * elem;
  const MPI_Datatype type = MpiTypeTable::Type(a.dtype);
  // The root broadcasts straight from sendbuff (MPI does not write the
  // root's buffer) and copies it to its own recvbuff when they differ.
  const bool root = rank_ == a.root, copy = root && !a.in_place;
  void *buf = root ? const_cast<void *>(a.sendbuff) : a.recvbuff;
  if (bytes < kBcastOverlapBytes || a.count > static_cast<size_t>(INT_MAX)) {
    INFINICCL_RETURN_IF_ERROR(
        MpiCheck(mpi::Bcast(buf, a.count, type, elem, a.root, comm_), "MPI_Bcast"));
    if (copy) return LocalCopy(a, a.recvbuff, a.sendbuff, bytes, CopyKind::kDeviceToDevice);
    return Status::Ok();
  }
  // Larger: nonblocking, so the root's copy overlaps the transfer. Every rank
  // takes this branch by the size alone (a blocking and a nonblocking
  // collective do not match).
  MPI_Request req = MPI_REQUEST_NULL;
  int rc;
  {
    mpi::SerialLock lock;
    rc = MPI_Ibcast(buf, static_cast<int>(a.count), type, a.root, comm_, &req);
  }
  INFINICCL_RETURN_IF_ERROR(MpiCheck(rc, "MPI_Ibcast"));
  int done = 0;
  Status copied;
  if (copy && a.device != nullptr) {
    copied = a.device->MemcpyAsync(a.recvbuff, a.sendbuff, bytes, CopyKind::kDeviceToDevice,
                                   a.stream);
  } else if (copy) {
    // In pieces, testing the request between them: MPI progresses the
    // broadcast (the root's later sends) only inside MPI calls.
    const char *from = static_cast<const char *>(a.sendbuff);
    char *to = static_cast<char *>(a.recvbuff);
    for (const Piece p : Pieces(bytes, kBcastCopyPiece)) {
      std::memcpy(to + p.offset, from + p.offset, p.size);
      if (done || rc != MPI_SUCCESS) continue;
      mpi::SerialLock lock;
      rc = MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    }
  }
  if (rc == MPI_SUCCESS && !done) {
    rc = mpi::Wait(&req);
  }
  INFINICCL_RETURN_IF_ERROR(MpiCheck(rc, "MPI_Ibcast (wait)"));
  INFINICCL_RETURN_IF_ERROR(copied);
  if (copy && a.device != nullptr) return a.device->StreamSynchronize(a.stream);
  return Status::Ok();
}

void *MpiBackend::Scratch(size_t bytes) {
  if (scratch_.size() < bytes) scratch_.resize(bytes);
  return scratch_.data();
}

Status MpiBackend::LocalCopy(const CollArgs &a, void *dst, const void *src, size_t bytes,
                             CopyKind kind) {
  if (a.device == nullptr) {
    std::memcpy(dst, src, bytes);
    return Status::Ok();
  }
  INFINICCL_RETURN_IF_ERROR(a.device->MemcpyAsync(dst, src, bytes, kind, a.stream));
  return a.device->StreamSynchronize(a.stream);
}

Status MpiBackend::Average(const CollArgs &a, void *buf, size_t count) {
  if (a.device == nullptr) {
    DivideInPlace(buf, count, a.dtype, a.avg_divisor > 0 ? a.avg_divisor : size_);
    return Status::Ok();
  }
  // Device memory: divided on the host in pieces, so the scratch the
  // communicator keeps stays small whatever the count.
  const size_t elem = DataTypeSize(a.dtype);
  const Pieces pieces(count, Pieces::WidthFor(kAveragePieceBytes, elem));
  void *host = Scratch(pieces.max_size() * elem);
  for (const Piece p : pieces) {
    char *at = static_cast<char *>(buf) + p.offset * elem;
    const size_t bytes = p.size * elem;
    INFINICCL_RETURN_IF_ERROR(LocalCopy(a, host, at, bytes, CopyKind::kDeviceToHost));
    DivideInPlace(host, p.size, a.dtype, a.avg_divisor > 0 ? a.avg_divisor : size_);
    INFINICCL_RETURN_IF_ERROR(LocalCopy(a, at, host, bytes, CopyKind::kHostToDevice));
  }
  return Status::Ok();
}

Status MpiBackend::Reduce(const CollArgs &a) {
  const bool root = rank_ == a.root;
  const size_t elem = DataTypeSize(a.dtype);
  const MPI_Datatype type = MpiTypeTable::Type(a.dtype);
  const MPI_Op op = MpiTypeTable::Op(a.dtype, a.op);
  const void *send = root && a.in_place ? MPI_IN_PLACE : a.sendbuff;
  void *recv = root ? a.recvbuff : nullptr;
  // Large host buffers: one MPI call per piece (host_pieces.h).
  const HostPiecePlan plan = HostPiecesFor(a, 1);
  Status reduced;
  for (size_t k = 0; k < plan.pieces() && reduced.ok(); ++k) {
    const size_t off = plan.offset(k) * elem, n = plan.size(k);
    const void *piece_send = At(send, off);
#ifdef MPICH_VERSION
    // MPICH 4.0 dereferences MPI_IN_PLACE in MPI_Reduce at a root other than 0
    // once the message exceeds 2 KiB (segfault). Give it a copy instead (of
    // one piece at a time when cut).
    if (send == MPI_IN_PLACE && a.root != 0) {
      void *copy = Scratch(n * elem);
      reduced = LocalCopy(a, copy, At(a.recvbuff, off), n * elem, CopyKind::kDeviceToHost);
      if (!reduced.ok()) break;
      piece_send = copy;
    }
#endif
    reduced = MpiCheck(mpi::Reduce(piece_send, At(recv, off), n, type, elem, op, a.root, comm_),
                       "MPI_Reduce");
    if (reduced.ok() && root && a.op == infinicclAvg) reduced = Average(a, At(recv, off), n);
  }
#ifdef MPICH_VERSION
  // The workaround's copy is as large as the message (or piece): not kept
  // beyond the little the other users of the scratch need.
  if (scratch_.size() > kKeptScratchBytes) std::vector<char>().swap(scratch_);
#endif
  return reduced;
}

Status MpiBackend::AllGather(const CollArgs &a) {
  if (UseAllGatherRing(size_) && HostPiecesFor(a, static_cast<size_t>(size_)).cut()) {
    return AllGatherRing(a, MpiTypeTable::Type(a.dtype), comm_, rank_, size_);
  }
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
  const size_t elem = DataTypeSize(a.dtype);
  const MPI_Datatype type = MpiTypeTable::Type(a.dtype);
  const void *send = root ? a.sendbuff : nullptr;
  void *recv = root && a.in_place ? MPI_IN_PLACE : a.recvbuff;
  // MPICH's binomial Scatter gives every even relative rank but the root a
  // temporary of half the root's buffer (size/2 blocks), mapped afresh on
  // every call once that passes glibc's mmap limit (host_pieces.h); there is
  // such a rank from 3 ranks on. Large host buffers there run as one MPI call
  // per column of pieces, planned on that temporary so that each column's
  // stays within one piece. Open MPI's Scatter allocates nothing per call (no
  // faults measured), nor MPICH's at 2 ranks: one call.
#ifdef MPICH_VERSION
  HostPiecePlan plan = size_ >= 3 ? HostPiecesFor(a, static_cast<size_t>(size_ / 2))
                                  : HostPiecePlan::Whole(a.count);
  // MPICH 4.0's MPI_Scatter crashes (segfault inside the call, on the ranks
  // that receive) once the root's buffer reaches 2 GiB: found by
  // mpi_large_count at 2 ranks, reported for 3+ as pmodels/mpich#6332. So a
  // column never reaches it, whatever the settings: at most 1 GiB in all.
  size_t column = 0;
  if (__builtin_mul_overflow(plan.piece, elem * static_cast<size_t>(size_), &column) ||
      column >= kMpichScatterCrashBytes) {
    static std::atomic<bool> said{false};
    if (!said.exchange(true)) {
      INFINICCL_INFO("MPICH: a Scatter of 2 GiB or more at the root runs as columns of at "
                     "most 1 GiB (MPI_Scatter crashes there, pmodels/mpich#6332)");
    }
    plan = PlanHostPieces(a.count, elem, static_cast<size_t>(size_),
                          kMpichScatterCrashBytes / 2, 0);
  }
#else
  const HostPiecePlan plan = HostPiecePlan::Whole(a.count);
#endif
  if (!plan.cut()) {
    return MpiCheck(mpi::Scatter(send, recv, a.count, type, elem, a.root, comm_),
                    "MPI_Scatter");
  }
  for (size_t k = 0; k < plan.pieces(); ++k) {
    const size_t off = plan.offset(k) * elem;
    INFINICCL_RETURN_IF_ERROR(
        MpiCheck(mpi::ScatterColumn(At(send, off), recv == MPI_IN_PLACE ? recv : At(recv, off),
                                    a.count, plan.size(k), type, elem, a.root, comm_),
                 "MPI_Scatter"));
  }
  return Status::Ok();
}

Status MpiBackend::ReduceScatter(const CollArgs &a) {
  const size_t elem = DataTypeSize(a.dtype);
  const MPI_Datatype type = MpiTypeTable::Type(a.dtype);
  const MPI_Op op = MpiTypeTable::Op(a.dtype, a.op);
  // The ring combines on the CPU, so device memory read by MPI itself keeps
  // the MPI call.
  // Above the host piece threshold the ring is also how MPICH's ReduceScatter
  // is cut (its MPI_Reduce_scatter_block allocates a message-sized temporary
  // per call, host_pieces.h): the ring works in kRingChunkBytes columns, and
  // a piece of a ReduceScatter is not contiguous in sendbuff.
  if (a.device == nullptr && size_ > 1 &&
      (UseReduceScatterRing(size_, a.count, elem) ||
       HostPiecesFor(a, static_cast<size_t>(size_)).cut())) {
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
    // Disjoint: rank_ != 0 puts the own block after the first.
    if (a.in_place && rank_ != 0) {
      INFINICCL_RETURN_IF_ERROR(
          LocalCopy(a, a.recvbuff, mpi_recv, a.count * elem, CopyKind::kDeviceToDevice));
    }
  }
  if (a.op == infinicclAvg) return Average(a, a.recvbuff, a.count);
  return Status::Ok();
}

Status MpiBackend::AllToAll(const CollArgs &a) {
  return MpiCheck(mpi::Alltoall(SendOrInPlace(a), a.recvbuff, a.count,
                                MpiTypeTable::Type(a.dtype), DataTypeSize(a.dtype), comm_),
                  "MPI_Alltoall");
}

Status MpiBackend::Send(const CollArgs &a) {
  return MpiCheck(mpi::Send(a.sendbuff, a.count, MpiTypeTable::Type(a.dtype),
                            DataTypeSize(a.dtype), a.root, MpiP2pTag(a.tag), comm_),
                  "MPI_Send");
}

Status MpiBackend::Recv(const CollArgs &a) {
  return MpiCheck(mpi::Recv(a.recvbuff, a.count, MpiTypeTable::Type(a.dtype),
                            DataTypeSize(a.dtype), MpiPeer(a.root), MpiP2pTag(a.tag),
                            comm_, a.source),
                  "MPI_Recv");
}

int MpiBackend::TagUpperBound() const {
  int ub = tag_ub_.load(std::memory_order_relaxed);
  if (ub >= 0) return ub;
  void *value = nullptr;
  int found = 0;
  {
    mpi::SerialLock lock;
    if (MPI_Comm_get_attr(comm_, MPI_TAG_UB, &value, &found) != MPI_SUCCESS) found = 0;
  }
  // The standard's least value where the attribute cannot be read.
  ub = found && value != nullptr ? *static_cast<int *>(value) : 32767;
  tag_ub_.store(ub, std::memory_order_relaxed);
  return ub;
}

Status MpiBackend::CheckMatching(const CollArgs &a, bool grouped) const {
  if (!IsP2p(a.kind)) return Status::Ok();
  if (a.tag != 0 && MpiP2pTag(a.tag) > TagUpperBound()) {
    return MakeStatus(infinicclNotSupported,
                      "tag %d needs MPI tag %d, above this MPI's MPI_TAG_UB (%d): it carries "
                      "tags 0..%d",
                      a.tag, MpiP2pTag(a.tag), TagUpperBound(),
                      LargestApiTag(TagUpperBound()));
  }
  if (grouped && a.kind == CollKind::kRecv && a.root == kAnySource &&
      !mpi::OneMessage(a.count)) {
    return MakeStatus(infinicclNotSupported,
                      "a receive from any source of %zu elements inside a group: with this "
                      "MPI (MPI-%d) messages above INT_MAX elements are cut into several, "
                      "whose sender a nonblocking receive cannot know in advance; receive "
                      "it outside a group, or name the peer",
                      a.count, MPI_VERSION);
  }
  return Status::Ok();
}

void MpiBackend::Revoke() {
  mpi::RevokeLocally(comm_);
  if (mpi::FtCompiled()) (void)mpi::Revoke(comm_);
}

}  // namespace infiniccl
