#include "api/cross_check.h"

#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "mpi/large_count.h"
#include "mpi/mpi_error.h"
#include "core/dtype.h"
#include "core/rank_list.h"

namespace infiniccl {

namespace {

// Compared in this order; only the first field that differs is reported,
// since later differences usually follow from it (another operation has
// another count).
enum Field { kOperation, kSequence, kArguments, kCount, kDtype, kOp, kRoot, kNumFields };
const char *const kFieldNames[kNumFields] = {
    "operation", "sequence number", "argument validation", "count", "datatype", "op",
    "root"};
const char *const kValueNames[kNumFields] = {"",         "seq", "",    "count",
                                             "datatype", "op",  "root"};

// The operation field of a CommDestroy record (not a CollKind).
constexpr int64_t kDestroyRecord = 1000;

std::string Value(Field f, int64_t v) {
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
std::string Describe(Field f, const std::vector<int64_t> &all, int size) {
  std::vector<std::string> values;
  std::vector<std::vector<int>> groups;
  for (int r = 0; r < size; ++r) {
    const int64_t *rec = &all[static_cast<size_t>(r) * kNumFields];
    const std::string v =
        f == kOperation ? Operation(rec[kOperation], rec[kSequence])
                        : (*kValueNames[f] ? std::string(kValueNames[f]) + "=" : "") +
                              Value(f, rec[f]);
    size_t g = 0;
    while (g < values.size() && values[g] != v) ++g;
    if (g == values.size()) {
      values.push_back(v);
      groups.emplace_back();
    }
    groups[g].push_back(r);
  }
  std::string msg = std::string(kFieldNames[f]) + " differs:";
  constexpr size_t kMaxGroups = 8;
  for (size_t g = 0; g < values.size() && g < kMaxGroups; ++g) {
    msg += g == 0 ? " rank " : ", rank ";
    msg += RankList(groups[g]);
    msg += ' ';
    msg += values[g];
  }
  if (values.size() > kMaxGroups) msg += ", ...";
  return msg;
}

// One record per rank, gathered on every rank; the first field that differs
// (in Field order) is reported, the same on every rank. `any_destroy` is set
// when some rank's record is a CommDestroy.
Status Exchange(Communicator &comm, const int64_t (&mine)[kNumFields],
                bool *any_destroy) {
  std::vector<int64_t> all(static_cast<size_t>(comm.size()) * kNumFields);
  INFINICCL_RETURN_IF_ERROR(
      MpiCheck(mpi::Allgather(mine, all.data(), kNumFields, MPI_INT64_T, sizeof(int64_t),
                              comm.mpi_comm()),
               "MPI_Allgather (INFINICCL_CHECK)"));
  *any_destroy = false;
  for (int r = 0; r < comm.size(); ++r)
    if (all[static_cast<size_t>(r) * kNumFields + kOperation] == kDestroyRecord)
      *any_destroy = true;
  for (int f = 0; f < kNumFields; ++f) {
    for (int r = 1; r < comm.size(); ++r) {
      if (all[static_cast<size_t>(r) * kNumFields + f] != all[f]) {
        return MakeStatus(infinicclInvalidUsage,
                          "INFINICCL_CHECK: %s (this is rank %d; the call was not run on "
                          "any rank)",
                          Describe(static_cast<Field>(f), all, comm.size()).c_str(),
                          comm.rank());
      }
    }
  }
  return Status::Ok();
}

}  // namespace

Status CrossCheck(Communicator &comm, const CollArgs &a, uint64_t seq, bool args_valid) {
  if (comm.size() == 1) return Status::Ok();
  int dtype, op;  // raw bits: a C caller may pass any int
  std::memcpy(&dtype, &a.dtype, sizeof dtype);
  std::memcpy(&op, &a.op, sizeof op);
  const int64_t mine[kNumFields] = {
      static_cast<int64_t>(a.kind),
      static_cast<int64_t>(seq),
      args_valid ? 1 : 0,
      static_cast<int64_t>(a.count),
      dtype,
      IsReduction(a.kind) ? op : -1,
      IsRooted(a.kind) ? a.root : -1,
  };
  bool any_destroy = false;
  Status st = Exchange(comm, mine, &any_destroy);
  // A peer destroyed the communicator while this rank is in a collective:
  // nothing will ever match this rank's next call there.
  if (!st.ok() && any_destroy) comm.MarkDiverged(st.message());
  return st;
}

Status CrossCheckDestroy(Communicator &comm) {
  if (comm.size() == 1) return Status::Ok();
  // Collectives made so far: equal on every rank unless one skipped or
  // added a call, which is what this record is there to catch.
  const int64_t mine[kNumFields] = {
      kDestroyRecord, static_cast<int64_t>(comm.seq()), 1, 0, -1, -1, -1};
  bool any_destroy = true;
  Status st = Exchange(comm, mine, &any_destroy);
  if (!st.ok()) {
    comm.MarkDiverged(st.message());
    // Reworded for this side: the communicator is released all the same.
    std::string msg = st.message();
    const std::string not_run = "the call was not run on any rank";
    const size_t at = msg.find(not_run);
    if (at != std::string::npos)
      msg.replace(at, not_run.size(),
                  "the communicator was released here; the other ranks' call failed");
    return Status(infinicclInvalidUsage, msg);
  }
  return Status::Ok();
}

}  // namespace infiniccl
