#include "core/call_record.h"

#include <cstdio>
#include <cstring>
#include <vector>

#include "core/dtype.h"
#include "core/rank_list.h"

namespace infiniccl {

namespace {

const char *const kFieldNames[kNumCallFields] = {
    "operation", "sequence number", "argument validation", "count", "datatype", "op",
    "root"};
const char *const kValueNames[kNumCallFields] = {"",         "seq", "",    "count",
                                                 "datatype", "op",  "root"};

std::string Value(CallField f, int64_t v) {
  char buf[64];
  switch (f) {
    case kOperation:
      if (v == kDestroyRecord) return "CommDestroy";
      return v >= 0 && v < kNumCollKinds ? CollKindName(static_cast<CollKind>(v)) : "?";
    case kArguments: return v ? "valid" : "rejected";
    case kDtype:
      if (!IsValidDataType(static_cast<int>(v))) break;
      return DataTypeName(static_cast<infinicclDataType_t>(v));
    case kOp:
      if (v == -1) return "none";
      if (!IsValidRedOp(static_cast<int>(v))) break;
      return RedOpName(static_cast<infinicclRedOp_t>(v));
    case kRoot:
      if (v == -1) return "none";
      break;
    default: break;
  }
  std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
  return buf;
}

// "AllReduce #10", "CommDestroy after #9": what a rank is doing, with the
// number of the collective (its own count of calls on the communicator).
std::string Operation(int64_t kind, int64_t seq) {
  if (kind == kDestroyRecord) return "CommDestroy after #" + std::to_string(seq);
  return Value(kOperation, kind) + " #" + std::to_string(seq);
}

// "count differs: rank 0,2 count=1024, rank 1 count=2048". The operation is
// shown with each rank's sequence number ("operation differs: rank 0
// AllReduce #5, rank 1 Broadcast #5").
std::string Describe(CallField f, const int64_t *all, int size, const std::vector<int> *names) {
  std::vector<std::string> values;
  for (int r = 0; r < size; ++r) {
    const int64_t *rec = all + static_cast<size_t>(r) * kNumCallFields;
    values.push_back(f == kOperation
                         ? Operation(rec[kOperation], rec[kSequence])
                         : (*kValueNames[f] ? std::string(kValueNames[f]) + "=" : "") +
                               Value(f, rec[f]));
  }
  return std::string(kFieldNames[f]) + " differs: " + RanksByValue(values, 8, names);
}

}  // namespace

void MakeCallRecord(const CollArgs &a, uint64_t seq, bool args_valid,
                    int64_t (&out)[kNumCallFields]) {
  int dtype, op;  // raw bits: a C caller may pass any int
  std::memcpy(&dtype, &a.dtype, sizeof dtype);
  std::memcpy(&op, &a.op, sizeof op);
  out[kOperation] = static_cast<int64_t>(a.kind);
  out[kSequence] = static_cast<int64_t>(seq);
  out[kArguments] = args_valid ? 1 : 0;
  out[kCount] = static_cast<int64_t>(a.count);
  out[kDtype] = dtype;
  out[kOp] = IsReduction(a.kind) ? op : -1;
  out[kRoot] = IsRooted(a.kind) ? a.root : -1;
}

std::string FirstDifference(const int64_t *all, int size, const std::vector<int> *names) {
  for (int f = 0; f < kNumCallFields; ++f) {
    for (int r = 1; r < size; ++r) {
      if (all[static_cast<size_t>(r) * kNumCallFields + f] != all[f]) {
        return Describe(static_cast<CallField>(f), all, size, names);
      }
    }
  }
  return std::string();
}

}  // namespace infiniccl
