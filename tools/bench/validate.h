// Inputs and exact expected results, as nccl-tests does: small integers that
// every type represents exactly, so every correct result is bit-exact.
#ifndef INFINICCL_BENCH_VALIDATE_H_
#define INFINICCL_BENCH_VALIDATE_H_

#include <infiniccl/infiniccl.h>

#include <cstddef>

#include "collective.h"
#include "dtype.h"

namespace bench {

struct Expectation {
  Collective coll;
  const Layout *layout;
  const DType *dtype;
  infinicclRedOp_t op;
  int rank;
  int nranks;
  int root;
};

// Element i of `rank`'s send buffer (every collective sends value(rank, i)):
//  - data movement: ((29*rank + i) % 113) + 1;
//  - Sum/Max/Min/Avg/Band/Bor/Bxor: ((rank + i) % 7) + 1, so a sum over n
//    ranks is <= 7n (and the bitwise ops combine three bits);
//  - Prod: 2 where (rank + i) % 4 == 0, else 1, so a product is <= 2^ceil(n/4).
double InputValue(const Expectation &e, int rank, size_t i);

// Writes InputValue(e, e.rank, i) for i < count into p (host memory).
void FillInput(const Expectation &e, void *p, size_t count);

// Every byte 0xff: NaN for floating types, -1 or the maximum for integers;
// never a value any check expects.
void Poison(void *p, size_t bytes);

// Elements of this rank's result (host memory, layout->recv_count elements)
// that differ from the independently computed expectation. 0 where the
// result is not significant on this rank (Reduce/Gather off the root).
size_t CountWrong(const Expectation &e, const void *result);

}  // namespace bench

#endif  // INFINICCL_BENCH_VALIDATE_H_
