#include "api/validate.h"

#include <cstdint>
#include <cstring>

#include "core/dtype.h"

namespace infiniccl {

namespace {

bool Overlap(const void *a, size_t a_bytes, const void *b, size_t b_bytes) {
  const uintptr_t x = reinterpret_cast<uintptr_t>(a);
  const uintptr_t y = reinterpret_cast<uintptr_t>(b);
  return x < y + b_bytes && y < x + a_bytes;
}

}  // namespace

Status ValidateCollective(int rank, int size, bool in_group, CollArgs *a) {
  // A C caller may pass any int; reading such a value through the C++ enum
  // type is undefined, so look at the raw bits.
  int dtype, op;
  std::memcpy(&dtype, &a->dtype, sizeof dtype);
  std::memcpy(&op, &a->op, sizeof op);
  if (!IsValidDataType(dtype)) {
    return MakeStatus(infinicclInvalidArgument,
                      "datatype %d is not a valid infinicclDataType_t (0..%d)", dtype,
                      infinicclNumTypes - 1);
  }
  if (IsReduction(a->kind) && !IsValidRedOp(op)) {
    return MakeStatus(infinicclInvalidArgument,
                      "op %d is not a valid infinicclRedOp_t (0..%d)", op,
                      infinicclNumOps - 1);
  }
  if (IsReduction(a->kind) && IsBitwiseRedOp(op) && !IsIntegerDataType(dtype)) {
    return MakeStatus(infinicclInvalidArgument,
                      "op %s is bitwise and takes integer types only (int8..uint64), not %s",
                      RedOpName(a->op), DataTypeName(a->dtype));
  }
  const bool p2p = IsP2p(a->kind);
  if (p2p && (a->tag < 0 || a->tag > INFINICCL_TAG_MAX)) {
    return MakeStatus(infinicclInvalidArgument,
                      "tag %d is out of range (0..INFINICCL_TAG_MAX, %d)", a->tag,
                      INFINICCL_TAG_MAX);
  }
  const bool any_source = p2p && a->root == kAnySource && a->tagged;
  if (any_source && a->kind == CollKind::kSend) {
    return MakeStatus(infinicclInvalidArgument,
                      "peer %d (INFINICCL_ANY_SOURCE) names no rank to send to; any "
                      "source is for receives",
                      a->root);
  }
  if (any_source && !in_group && size < 2) {
    return MakeStatus(infinicclInvalidArgument,
                      "peer INFINICCL_ANY_SOURCE outside a group on a communicator of one "
                      "rank: no other rank can send, and the receive would wait forever");
  }
  if ((IsRooted(a->kind) || p2p) && !any_source && (a->root < 0 || a->root >= size)) {
    return MakeStatus(infinicclInvalidArgument, "%s %d is out of range for %d ranks%s",
                      p2p ? "peer" : "root", a->root, size,
                      p2p && a->tagged && a->kind == CollKind::kRecv
                          ? " (or INFINICCL_ANY_SOURCE)"
                          : "");
  }
  if (p2p && a->root == rank && !in_group) {
    return MakeStatus(infinicclInvalidArgument,
                      "peer %d is the calling rank; sending to oneself needs a group "
                      "(infinicclGroupStart/End) around the Send and the Recv",
                      a->root);
  }

  const CallShape blocks = ShapeOf(a->kind, rank, a->root, size);
  const size_t elem = DataTypeSize(a->dtype);
  size_t send_bytes = 0, recv_bytes = 0, block_bytes = 0;
  const size_t limit = static_cast<size_t>(PTRDIFF_MAX);
  if (__builtin_mul_overflow(a->count, elem, &block_bytes) ||
      __builtin_mul_overflow(block_bytes, blocks.send_blocks, &send_bytes) ||
      __builtin_mul_overflow(block_bytes, blocks.recv_blocks, &recv_bytes) ||
      send_bytes > limit || recv_bytes > limit) {
    return MakeStatus(infinicclInvalidArgument,
                      "count %zu of %s (x %d ranks where the call needs it) overflows "
                      "the address space",
                      a->count, DataTypeName(a->dtype), size);
  }
  a->send_bytes = send_bytes;
  a->recv_bytes = recv_bytes;
  if (a->count == 0) return Status::Ok();

  if (blocks.send_blocks > 0 && a->sendbuff == nullptr) {
    return MakeStatus(infinicclInvalidArgument, "sendbuff is NULL but count is %zu",
                      a->count);
  }
  if (blocks.recv_blocks > 0 && a->recvbuff == nullptr) {
    return MakeStatus(infinicclInvalidArgument, "recvbuff is NULL but count is %zu",
                      a->count);
  }
  if (blocks.send_blocks == 0 || blocks.recv_blocks == 0) return Status::Ok();

  a->in_place = IsInPlace(*a, blocks, elem);
  if (a->in_place) return Status::Ok();
  if (Overlap(a->sendbuff, send_bytes, a->recvbuff, recv_bytes)) {
    return MakeStatus(infinicclInvalidArgument,
                      "sendbuff %p (%zu bytes) and recvbuff %p (%zu bytes) overlap but "
                      "do not follow the in-place layout of %s",
                      a->sendbuff, send_bytes, a->recvbuff, recv_bytes,
                      CollKindName(a->kind));
  }
  return Status::Ok();
}

}  // namespace infiniccl
