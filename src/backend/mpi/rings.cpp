#include "backend/mpi/rings.h"

#include <cstring>
#include <utility>

#include "core/dtype.h"
#include "core/pieces.h"
#include "mpi/large_count.h"
#include "mpi/mpi_error.h"

namespace infiniccl {

bool UseReduceScatterRing(int nranks, size_t count, size_t elem) {
#ifdef OPEN_MPI
  if (nranks < 2 || elem == 0) return false;
  const size_t per_column = elem * static_cast<size_t>(nranks);
  // count * per_column >= kRingMinTotalBytes, without overflowing.
  return count >= (kRingMinTotalBytes + per_column - 1) / per_column;
#else
  (void)nranks;
  (void)count;
  (void)elem;
  return false;
#endif
}

// For each round of columns [col, col + w) of every block: in step s
// (0 .. n-2) rank r sends block r-s-1 to r+1 (its own input at step 0, then
// the partial result it formed in the step before), receives block r-s-2
// from r-1 and combines its own input of that block into it. After n-1 steps
// block r holds all n contributions.
Status ReduceScatterRing(const CollArgs &a, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                         int rank, int nranks, void *scratch) {
  const size_t elem = DataTypeSize(a.dtype);
  const size_t block = a.count * elem;
  const int n = nranks, next = (rank + 1) % n, prev = (rank + n - 1) % n;
  const char *in = static_cast<const char *>(a.sendbuff);
  char *out = static_cast<char *>(a.recvbuff);
  auto input = [&](int b) { return in + static_cast<size_t>(((b % n) + n) % n) * block; };
  char *partial = static_cast<char *>(scratch);
  char *incoming = partial + kRingChunkBytes;

  for (const Piece cols : Pieces(a.count, Pieces::WidthFor(kRingChunkBytes, elem))) {
    const size_t w = cols.size;
    const int k = static_cast<int>(w);  // w * elem <= kRingChunkBytes
    const size_t off = cols.offset * elem;
    for (int step = 0; step < n - 1; ++step) {
      const char *send = step == 0 ? input(rank - 1) + off : partial;
      INFINICCL_RETURN_IF_ERROR(
          MpiCheck(mpi::Sendrecv(send, incoming, k, type, next, prev, kMpiRingTag, comm),
                   "MPI_Sendrecv (ReduceScatter ring)"));
      const int b = rank - step - 2;  // the block that just arrived
      if (step < n - 2) {
        INFINICCL_RETURN_IF_ERROR(
            MpiCheck(MPI_Reduce_local(input(b) + off, incoming, k, type, op),
                     "MPI_Reduce_local (ReduceScatter ring)"));
        std::swap(partial, incoming);  // what arrived, combined, goes on next
        continue;
      }
      // Last step, block b is this rank's own. In place it is recvbuff
      // itself (read only now, so it was safe to leave it untouched until
      // here); out of place copy the input there first.
      if (!a.in_place) std::memcpy(out + off, input(b) + off, w * elem);
      INFINICCL_RETURN_IF_ERROR(
          MpiCheck(MPI_Reduce_local(incoming, out + off, k, type, op),
                   "MPI_Reduce_local (ReduceScatter ring)"));
    }
  }
  return Status::Ok();
}

bool UseAllGatherRing(int nranks) {
#ifdef OPEN_MPI
  return nranks >= 3;
#else
  (void)nranks;
  return false;
#endif
}

Status AllGatherRing(const CollArgs &a, MPI_Datatype type, MPI_Comm comm, int rank,
                     int nranks) {
  const size_t elem = DataTypeSize(a.dtype);
  const size_t block = a.count * elem;
  const int n = nranks, next = (rank + 1) % n, prev = (rank + n - 1) % n;
  char *out = static_cast<char *>(a.recvbuff);
  auto at = [&](int b) { return out + static_cast<size_t>(((b % n) + n) % n) * block; };
  // In place the own block is already there (sendbuff is that block).
  if (!a.in_place) std::memcpy(at(rank), a.sendbuff, block);
  for (const Piece cols : Pieces(a.count, Pieces::WidthFor(size_t{1} << 30, elem))) {
    const size_t off = cols.offset * elem;
    const int k = static_cast<int>(cols.size);
    for (int step = 0; step < n - 1; ++step) {
      INFINICCL_RETURN_IF_ERROR(
          MpiCheck(mpi::Sendrecv(at(rank - step) + off, at(rank - step - 1) + off, k, type,
                                 next, prev, kMpiRingTag, comm),
                   "MPI_Sendrecv (AllGather ring)"));
    }
  }
  return Status::Ok();
}

}  // namespace infiniccl
