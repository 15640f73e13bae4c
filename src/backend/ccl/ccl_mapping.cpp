#include "backend/ccl/ccl_mapping.h"

#include "core/dtype.h"

namespace infiniccl {

CclElements MapElements(infinicclDataType_t dtype, size_t count) {
  switch (dtype) {
    case infinicclInt8: return {CclType::kInt8, count};
    case infinicclInt16:
    case infinicclUInt16: return {CclType::kInt8, count * 2};
    case infinicclInt32: return {CclType::kInt32, count};
    case infinicclInt64: return {CclType::kInt64, count};
    case infinicclUInt8: return {CclType::kUint8, count};
    case infinicclUInt32: return {CclType::kUint32, count};
    case infinicclUInt64: return {CclType::kUint64, count};
    case infinicclFloat16: return {CclType::kFloat16, count};
    case infinicclBFloat16: return {CclType::kBfloat16, count};
    case infinicclFloat32: return {CclType::kFloat32, count};
    case infinicclFloat64: return {CclType::kFloat64, count};
    default: break;
  }
  return {CclType::kInt8, count};  // unreachable after validation
}

CclOp MapRedOp(infinicclRedOp_t op) {
  switch (op) {
    case infinicclSum: return CclOp::kSum;
    case infinicclProd: return CclOp::kProd;
    case infinicclMax: return CclOp::kMax;
    case infinicclMin: return CclOp::kMin;
    case infinicclAvg: return CclOp::kAvg;
    default: break;
  }
  return CclOp::kSum;  // unreachable: validation, and CclUnsupportedReason for Band/Bor/Bxor
}

namespace {
bool IsFloating(infinicclDataType_t t) {
  return t == infinicclFloat16 || t == infinicclBFloat16 || t == infinicclFloat32 ||
         t == infinicclFloat64;
}
}  // namespace

const char *CclUnsupportedReason(const CollArgs &a) {
  if (NeedsMpiMatching(a)) {
    return a.root == kAnySource
               ? "a receive from any source (CCLs have no wildcard receive)"
               : "a tag other than 0 (CCLs have no message tags)";
  }
  if (a.kind == CollKind::kAllToAll && a.in_place) {
    return "in-place AllToAll (needs distinct send and receive buffers)";
  }
  if (!IsReduction(a.kind)) return nullptr;
  if (IsBitwiseRedOp(a.op)) {
    return "a bitwise reduction (Band, Bor, Bxor: NCCL, MCCL, RCCL, HCCL and CNCL have "
           "none)";
  }
  if (a.dtype == infinicclInt16 || a.dtype == infinicclUInt16) {
    return "the CCL has no 16-bit integer type to reduce";
  }
  if (a.op == infinicclAvg && !IsFloating(a.dtype)) {
    return "Avg of an integer type (InfiniCCL truncates toward zero; the CCL's integer "
           "Avg is not documented to)";
  }
  return nullptr;
}

infinicclResult_t CclResultCode(int r) {
  if (r >= 0 && r <= 7) return static_cast<infinicclResult_t>(r);
  return infinicclInternalError;
}

}  // namespace infiniccl
