// The library's own rings of MPI_Sendrecv, used where MPI's call is slow for
// large host messages:
// - ReduceScatter (+ MPI_Reduce_local) instead of MPI_Reduce_scatter_block
//   (Open MPI: see UseReduceScatterRing; every MPI above the host piece
//   threshold, host_pieces.h);
// - AllGather instead of Open MPI's MPI_Allgather above the host piece
//   threshold (UseAllGatherRing).
#pragma once

#include <mpi.h>

#include <cstddef>

#include "core/coll_args.h"
#include "core/status.h"
#include "mpi/mpi_tags.h"

namespace infiniccl {

// The rings' messages carry kMpiRingTag (mpi/mpi_tags.h): below every tag of
// Send/Recv, so a grouped Isend/Irecv still pending on the same
// communicator can never match a ring message (or the other way round).

// Open MPI 4.1's default MPI_Reduce_scatter_block is "reduce to rank 0, then
// scatter" (coll/base basic_linear). Measured with infiniccl-bench on 2 cores,
// float32 sum: 16 MiB total at 2 ranks 17.5 ms vs 3.4 ms for the ring, at 4
// ranks 40 ms vs 11.4 ms; 64 MiB at 4 ranks 163 ms vs 62 ms. Below ~1 MiB
// total the MPI call is as good or better, so the ring starts at 4 MiB.
inline constexpr size_t kRingMinTotalBytes = size_t{4} << 20;

// Columns processed per round: every message is at most this many bytes (an
// int count) and the ring's scratch is two such buffers.
inline constexpr size_t kRingChunkBytes = size_t{1} << 20;

// Whether MpiBackend takes the ring: built against Open MPI (MPICH's own
// MPI_Reduce_scatter_block is as fast as the ring), at least two ranks, and
// at least kRingMinTotalBytes in all (count * elem * nranks).
bool UseReduceScatterRing(int nranks, size_t count, size_t elem);

// Runs the ring for args `a` (host buffers, or device buffers the CPU can
// address; NCCL's in-place layout allowed) on `comm` of `nranks` ranks.
// `scratch` holds at least 2 * kRingChunkBytes. Avg is left to the caller:
// this reduces with `op`, which for Avg is Sum.
Status ReduceScatterRing(const CollArgs &a, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                         int rank, int nranks, void *scratch);

// Open MPI 4.1's MPI_Allgather at a rank count that is not a power of two
// maps a temporary of (n-1) blocks afresh on every call: 10923 page faults
// per 64 MiB call at 3 ranks, 469 ms against 37 ms for MPICH's (host_pieces.h
// has why faults cost that much). The ring works in recvbuff itself and
// allocates nothing: at 3 ranks 0.08-0.12 of MPI_Allgather's time at 64 and
// 256 MiB, at 4 ranks (no faults there) still 0.73-0.76 (docs/PERFORMANCE.md
// section 1). Taken on Open MPI builds, 3 ranks or more (at 2 the ring is
// the one exchange MPI makes), for host buffers whose recvbuff (count *
// elem * nranks) is larger than the host piece threshold (the caller asks
// HostPiecesFor(a, nranks).cut() once this says yes).
bool UseAllGatherRing(int nranks);

// AllGather for args `a` (host buffers; NCCL's in-place layout allowed): in
// step s (0 .. n-2) rank r sends block r-s to r+1 and receives block r-s-1
// from r-1, in columns of at most 1 GiB (int counts).
Status AllGatherRing(const CollArgs &a, MPI_Datatype type, MPI_Comm comm, int rank,
                     int nranks);

}  // namespace infiniccl
