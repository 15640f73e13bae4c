#include "backend/ccl/ccl_known_bugs.h"

#include <cstring>

namespace infiniccl {

namespace {

// NCCL's one-rank reduce kernel (onerank.cu) splits the elements across
// blocks with a floor division, so the last count % blocks elements of a
// one-rank Avg (the op that needs the kernel; the others are copies) are never
// written. Seen here on an H200 with NCCL 2.28.3 (float64 Avg, 65537
// elements); NCCL 2.10 introduced ncclAvg.
bool OneRankAvg(const CollArgs &a, int nranks) {
  return nranks == 1 && IsReduction(a.kind) && a.op == infinicclAvg;
}

constexpr CclKnownBug kBugs[] = {
    {"NCCL", 21000, 22907, OneRankAvg,
     "NCCL 2.10-2.29.6 leaves the tail of a one-rank Avg reduction unwritten "
     "(NVIDIA/nccl issue 1950, fixed in 2.29.7)"},
};

}  // namespace

const char *CclKnownBugReason(const char *ccl, int version, int nranks, const CollArgs &a) {
  if (version < 0) return nullptr;
  for (const CclKnownBug &b : kBugs) {
    if (std::strcmp(b.ccl, ccl) == 0 && version >= b.first_bad && version < b.fixed_in &&
        b.affects(a, nranks)) {
      return b.what;
    }
  }
  return nullptr;
}

}  // namespace infiniccl
