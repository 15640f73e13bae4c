// The overlap mode: a DDP-like loop on two streams. Per bucket, an emulated
// kernel on the compute stream, an event recorded after it, the
// communication stream made to wait for that event, and the bucket's
// infinicclAllReduce on the communication stream; then both streams are
// synchronised. Timed as three loops each time round: compute alone
// (the kernels), communication alone (the AllReduces), both together.
#ifndef INFINICCL_BENCH_OVERLAP_H_
#define INFINICCL_BENCH_OVERLAP_H_

#include "run.h"
#include "runner.h"

namespace bench {

// Empty when the overlap mode can run on env's device; otherwise why not.
std::string OverlapUnavailable(const Env &env);

// One repeat: warm-up, env.opt->iters timed loops of each part (the median
// of the slowest rank's times, folded into *res as minimums over repeats), and, with `validate`, one checked loop in
// which each kernel is followed by the copy that writes its bucket on the
// compute stream, so an AllReduce that ran early would read poison.
void RunOverlap(const Env &env, bool validate, Result *res);

}  // namespace bench

#endif  // INFINICCL_BENCH_OVERLAP_H_
