// Versions of native collective libraries with known wrong-result bugs, and
// the calls each one gets wrong. The route asks before it hands a call to a
// CCL (CclBackend::Unsupported), so a call a CCL is known to get wrong takes
// another path and INFO says why. Vendor libraries have bugs; when one is
// known, we route around it and say so.
#pragma once

#include "core/coll_args.h"

namespace infiniccl {

struct CclKnownBug {
  const char *ccl;    // CclProvider::Name(): "NCCL", "MCCL"
  int first_bad;      // the CCL's version code (ncclGetVersion), inclusive
  int fixed_in;       // first version code without the bug
  bool (*affects)(const CollArgs &a, int nranks);
  const char *what;   // the reason INFO gives, naming the upstream report
};

// The bug of `ccl` at `version` that `a` on `nranks` ranks would hit, as its
// text; nullptr when none is known (or the version is unknown, < 0).
const char *CclKnownBugReason(const char *ccl, int version, int nranks, const CollArgs &a);

}  // namespace infiniccl
