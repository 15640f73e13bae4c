#include "api/cross_check.h"

#include <mpi.h>

#include <string>
#include <vector>

#include "core/call_record.h"
#include "mpi/large_count.h"
#include "mpi/mpi_error.h"

namespace infiniccl {

namespace {

constexpr int kNumFields = kNumCallFields;

// One record per rank, gathered on every rank; the first field that differs
// (in Field order) is reported, the same on every rank. `any_destroy` is set
// when some rank's record is a CommDestroy.
Status ExchangeCheck(Communicator &comm, const int64_t (&mine)[kNumFields],
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
  const std::string diff = FirstDifference(all.data(), comm.size());
  if (!diff.empty()) {
    return MakeStatus(infinicclInvalidUsage,
                      "INFINICCL_CHECK: %s (this is rank %d; the call was not run on "
                      "any rank)",
                      diff.c_str(), comm.rank());
  }
  return Status::Ok();
}

}  // namespace

Status CrossCheck(Communicator &comm, const CollArgs &a, uint64_t seq, bool args_valid) {
  if (comm.size() == 1) return Status::Ok();
  int64_t mine[kNumFields];
  MakeCallRecord(a, seq, args_valid, mine);
  bool any_destroy = false;
  Status st = ExchangeCheck(comm, mine, &any_destroy);
  // A peer destroyed the communicator while this rank is in a collective:
  // nothing will ever match this rank's next call there.
  if (!st.ok() && any_destroy) comm.MarkDiverged(st.message());
  return st;
}

Status CrossCheckDestroy(Communicator &comm, uint64_t collectives) {
  if (comm.size() == 1) return Status::Ok();
  // Collectives made so far: equal on every rank unless one skipped or
  // added a call, which is what this record is there to catch.
  const int64_t mine[kNumFields] = {
      kDestroyRecord, static_cast<int64_t>(collectives), 1, 0, -1, -1, -1};
  bool any_destroy = true;
  Status st = ExchangeCheck(comm, mine, &any_destroy);
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
