// Large host-buffer reductions through MPI run as a sequence of MPI calls on
// pieces of the buffers instead of one call on the whole.
//
// Why (measured, docs/PERFORMANCE.md, "Host buffers against MPI"): Open MPI 4.1 and MPICH 4.0
// allocate a temporary as large as the message inside every MPI_Allreduce
// (and Open MPI's MPI_Reduce at 3+ ranks, MPICH's MPI_Reduce_scatter_block;
// MPICH's binomial MPI_Scatter, at every even relative rank but the root, one
// as large as half the root's buffer).
// Above glibc's largest mmap threshold (32 MiB) malloc maps it fresh and
// free unmaps it, so every call page-faults the whole temporary in again:
// 8192 minor faults per 64 MiB AllReduce at 2 ranks. A piece's temporary is
// small enough for malloc to keep and reuse: no faults after the first call.
//
// Every rank must cut the same way (each piece is a collective call), so the
// plan depends only on what is equal on every rank: count, element size,
// number of blocks and the settings.
#pragma once

#include <cstddef>

#include "core/coll_args.h"

namespace infiniccl {

struct HostPiecePlan {
  size_t count = 0;  // elements of one block, in all
  size_t piece = 0;  // elements per piece (the last may be shorter)

  static HostPiecePlan Whole(size_t count) { return HostPiecePlan{count, count}; }

  size_t pieces() const { return count == 0 || piece >= count ? 1 : (count + piece - 1) / piece; }
  bool cut() const { return pieces() > 1; }
  size_t offset(size_t k) const { return k * piece; }  // in elements
  size_t size(size_t k) const {
    const size_t at = offset(k);
    return count - at < piece ? count - at : piece;
  }
};

// `blocks`: how many blocks of `count` elements the widest buffer holds (1
// for AllReduce and Reduce, the number of ranks for ReduceScatter, half of
// it for MPICH's Scatter). Whole (one piece) when piece_bytes is 0, when the widest buffer
// is at most threshold_bytes, or when one piece holds everything; otherwise
// pieces of max(1, piece_bytes / elem / blocks) whole elements, so that one
// MPI call on a piece of every block (a column) moves at most piece_bytes.
HostPiecePlan PlanHostPieces(size_t count, size_t elem, size_t blocks, size_t piece_bytes,
                             size_t threshold_bytes);

// The plan for `a` on the MPI backend, from the process's settings
// (INFINICCL_HOST_PIECE_BYTES, INFINICCL_HOST_PIECE_THRESHOLD). Whole for
// buffers that are not plain host memory (the direct path: a GPU-aware MPI
// handles device memory its own way) and for the staging pipeline's chunks,
// which that layer has already cut (INFINICCL_PIPELINE_CHUNK_BYTES): the two
// layers never cut the same call twice.
HostPiecePlan HostPiecesFor(const CollArgs &a, size_t blocks);

}  // namespace infiniccl
