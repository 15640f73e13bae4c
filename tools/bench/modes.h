// The table of benchmark modes. A mode is a way of running one collective:
//   host_C         the raw MPI call on host buffers;
//   infiniccl_C    the InfiniCCL call on --device buffers;
//   stage_alloc_C  --device buffers staged through host buffers malloc'd and
//                  freed on every call, around the raw MPI call (what the
//                  upstream project did);
//   stage_reuse_C  the same with host buffers allocated once;
//   copy_*         device<->host copies alone;
//   rs_*           ReduceScatter decompositions on host buffers;
//   return_allreduce  each infinicclAllReduce timed alone: until it returns,
//                  and until a stream synchronize after it;
//   overlap        a DDP-like loop of kernels and bucket AllReduces on two
//                  streams (overlap.cpp), once per run, not per size.
// A device build adds no mode: the families run on whatever Device is chosen.
#ifndef INFINICCL_BENCH_MODES_H_
#define INFINICCL_BENCH_MODES_H_

#include <string>
#include <vector>

#include "calls.h"
#include "collective.h"

namespace bench {

enum class Family {
  kHost,
  kInfiniccl,
  kStageAlloc,
  kStageReuse,
  kCopyD2H,
  kCopyH2D,
  kCopyRoundtrip,
  kReduceScatterVariant,
  kReturnTime,
  kOverlap,
};

struct Mode {
  std::string name;
  Family family;
  Collective coll;
  RsVariant rs = RsVariant::kNone;
  std::string description;
};

const std::vector<Mode> &AllModes();
// Accepts the aliases stage_alloc and stage_reuse (= *_allreduce).
const Mode *FindMode(const std::string &name);
// Whether --inplace applies (not to copies, rs_* and sendrecv).
bool SupportsInplace(const Mode &m);

}  // namespace bench

#endif  // INFINICCL_BENCH_MODES_H_
