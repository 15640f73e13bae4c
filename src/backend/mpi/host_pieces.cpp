#include "backend/mpi/host_pieces.h"

#include <algorithm>

#include "core/config.h"
#include "core/dtype.h"

namespace infiniccl {

HostPiecePlan PlanHostPieces(size_t count, size_t elem, size_t blocks, size_t piece_bytes,
                             size_t threshold_bytes) {
  HostPiecePlan plan = HostPiecePlan::Whole(count);
  if (piece_bytes == 0 || count == 0 || elem == 0 || blocks == 0) return plan;
  // count * elem * blocks <= threshold (an overflow is above any threshold).
  // Multiplications, not divisions: this runs on every host reduction.
  size_t bytes = 0;
  if (!__builtin_mul_overflow(count, elem, &bytes) &&
      !__builtin_mul_overflow(bytes, blocks, &bytes) && bytes <= threshold_bytes) {
    return plan;
  }
  // A piece of every block (a Scatter's column) together within piece_bytes.
  plan.piece = std::min(count, std::max<size_t>(1, piece_bytes / elem / blocks));
  return plan;
}

HostPiecePlan HostPiecesFor(const CollArgs &a, size_t blocks) {
  if (a.device != nullptr || a.staged) return HostPiecePlan::Whole(a.count);
  const Config &config = GlobalConfig();
  return PlanHostPieces(a.count, DataTypeSize(a.dtype), blocks, config.host_piece_bytes,
                        config.host_piece_threshold);
}

}  // namespace infiniccl
