// What a CCL (NCCL, MCCL) can do with our calls, as pure functions of the
// call: no vendor header here, so unit tests check the mapping on any build.
// Each vendor header (vendor_nccl.h, vendor_mccl.h) turns CclType/CclOp into
// its own enum values.
#pragma once

#include <infiniccl/infiniccl.h>

#include <cstddef>

#include "core/coll_args.h"

namespace infiniccl {

// The element types NCCL and MCCL share (NCCL has no 16-bit integers).
enum class CclType {
  kInt8,
  kUint8,
  kInt32,
  kUint32,
  kInt64,
  kUint64,
  kFloat16,
  kBfloat16,
  kFloat32,
  kFloat64,
};
enum class CclOp { kSum, kProd, kMax, kMin, kAvg };

// How a call's buffers travel: `count` elements of `type`. Int16/UInt16 data
// movement goes as twice as many int8 elements (bytes are bytes); their
// reductions cannot, see CclUnsupportedReason.
struct CclElements {
  CclType type;
  size_t count;
};
CclElements MapElements(infinicclDataType_t dtype, size_t count);
CclOp MapRedOp(infinicclRedOp_t op);

// nullptr when a CCL runs `args` with our semantics; otherwise why not (the
// route then takes MPI, or fails when INFINICCL_BACKEND=ccl):
//   - reductions of Int16/UInt16 (no 16-bit integer type in NCCL/MCCL);
//   - Avg of integer types (our Avg truncates toward zero; a CCL's integer
//     Avg is not documented to, so we do not rely on it);
//   - the bitwise ops Band, Bor, Bxor (NCCL's ncclRedOp_t has none; MCCL,
//     RCCL, HCCL and CNCL get the same answer here);
//   - in-place AllToAll (NCCL documents no in-place AlltoAll, and grouped
//     Send/Recv would overwrite blocks not yet sent);
//   - Send/Recv with a tag other than 0 or from any source (SendTagged,
//     RecvTagged): CCLs match messages by peer and order alone.
const char *CclUnsupportedReason(const CollArgs &args);

// NCCL's and MCCL's result codes 0..7 (success, unhandled CUDA error, system,
// internal, invalid argument, invalid usage, remote, in progress) are ours
// in the same order; anything else is an internal error.
infinicclResult_t CclResultCode(int ccl_result);

}  // namespace infiniccl
