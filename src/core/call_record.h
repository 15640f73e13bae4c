// What a rank is about to do in a collective, as a record of seven numbers
// that the ranks compare: INFINICCL_CHECK exchanges them over MPI before each
// call (api/cross_check.cpp), the shared-memory transport reads them from the
// segment at each call's first chunk (backend/shm). Both report a mismatch in
// the same words: the first field that differs and the ranks with each value
// ("count differs: rank 0,2 count=1024, rank 1 count=2048").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/coll_args.h"

namespace infiniccl {

// Compared in this order; only the first field that differs is reported,
// since later differences usually follow from it (another operation has
// another count).
enum CallField { kOperation, kSequence, kArguments, kCount, kDtype, kOp, kRoot, kNumCallFields };

// The operation field of a CommDestroy record (not a CollKind).
constexpr int64_t kDestroyRecord = 1000;

// The record of `a`, the collective numbered `seq`; op and root -1 where the
// kind has none. `args_valid`: whether this rank's validation passed.
void MakeCallRecord(const CollArgs &a, uint64_t seq, bool args_valid,
                    int64_t (&out)[kNumCallFields]);

// `all`: `size` records, rank after rank. The first field in which they
// differ, in the words above; empty when every record is the same.
// `names`, when given: the rank each record's index is in the words
// (ascending as the indices are).
std::string FirstDifference(const int64_t *all, int size,
                            const std::vector<int> *names = nullptr);

}  // namespace infiniccl
