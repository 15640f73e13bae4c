#include "modes.h"

namespace bench {
namespace {

constexpr Collective kCollectives[] = {
    Collective::kAllReduce, Collective::kAllGather, Collective::kAllToAll,
    Collective::kBroadcast, Collective::kReduce,    Collective::kReduceScatter,
    Collective::kGather,    Collective::kScatter,   Collective::kSendRecv,
};

const char *MpiName(Collective c) {
  switch (c) {
    case Collective::kAllReduce: return "MPI_Allreduce";
    case Collective::kAllGather: return "MPI_Allgather";
    case Collective::kAllToAll: return "MPI_Alltoall";
    case Collective::kBroadcast: return "MPI_Bcast";
    case Collective::kReduce: return "MPI_Reduce";
    case Collective::kReduceScatter: return "MPI_Reduce_scatter_block";
    case Collective::kGather: return "MPI_Gather";
    case Collective::kScatter: return "MPI_Scatter";
    case Collective::kSendRecv: return "MPI_Sendrecv";
    default: return "";
  }
}

std::vector<Mode> BuildModes() {
  std::vector<Mode> modes;
  for (Collective c : kCollectives) {
    const std::string n = Info(c).name, mpi = MpiName(c), label = Info(c).label;
    modes.push_back(
        {"host_" + n, Family::kHost, c, RsVariant::kNone, mpi + " on host buffers"});
    // SendRecv is a pair of calls in the API: there is no infinicclSendRecv.
    const std::string api = c == Collective::kSendRecv
                                ? std::string("infinicclSend + infinicclRecv")
                                : "infiniccl" + label;
    modes.push_back({"infiniccl_" + n, Family::kInfiniccl, c, RsVariant::kNone,
                     api + " on device buffers"});
    modes.push_back(
        {"stage_alloc_" + n, Family::kStageAlloc, c, RsVariant::kNone,
         "device buffers copied through host buffers malloc'd per call, " + mpi});
    modes.push_back(
        {"stage_reuse_" + n, Family::kStageReuse, c, RsVariant::kNone,
         "device buffers copied through host buffers allocated once, " + mpi});
  }
  modes.push_back({"copy_d2h", Family::kCopyD2H, Collective::kCopy, RsVariant::kNone,
                   "device to host copy"});
  modes.push_back({"copy_h2d", Family::kCopyH2D, Collective::kCopy, RsVariant::kNone,
                   "host to device copy"});
  modes.push_back({"copy_roundtrip", Family::kCopyRoundtrip, Collective::kCopy,
                   RsVariant::kNone, "device to host, then host to device"});
  const Collective rs = Collective::kReduceScatter;
  const Family v = Family::kReduceScatterVariant;
  modes.push_back(
      {"rs_block", v, rs, RsVariant::kBlock, "MPI_Reduce_scatter_block on host buffers"});
  modes.push_back({"rs_counts", v, rs, RsVariant::kCounts,
                   "MPI_Reduce_scatter with equal counts on host buffers"});
  modes.push_back({"rs_allreduce", v, rs, RsVariant::kAllReduce,
                   "MPI_Allreduce of the whole buffer, keep own block"});
  modes.push_back({"rs_reduce_scatter", v, rs, RsVariant::kReduceThenScatter,
                   "MPI_Reduce to rank 0, then MPI_Scatter"});
  modes.push_back(
      {"rs_ring", v, rs, RsVariant::kRing, "ring of MPI_Sendrecv with local reduction"});
  modes.push_back({"return_allreduce", Family::kReturnTime, Collective::kAllReduce,
                   RsVariant::kNone,
                   "infinicclAllReduce on device buffers: host time until the call "
                   "returns, and until a stream synchronize after it"});
  modes.push_back({"overlap", Family::kOverlap, Collective::kAllReduce, RsVariant::kNone,
                   "DDP-like loop: per bucket a kernel on one stream, then the bucket's "
                   "infinicclAllReduce on a second stream after it (once per run)"});
  return modes;
}

}  // namespace

const std::vector<Mode> &AllModes() {
  static const std::vector<Mode> modes = BuildModes();
  return modes;
}

const Mode *FindMode(const std::string &name) {
  const std::string canonical =
      name == "stage_alloc" || name == "stage_reuse" ? name + "_allreduce" : name;
  for (const Mode &m : AllModes())
    if (m.name == canonical) return &m;
  return nullptr;
}

bool SupportsInplace(const Mode &m) {
  return m.coll != Collective::kSendRecv && m.coll != Collective::kCopy &&
         m.family != Family::kReduceScatterVariant && m.family != Family::kOverlap;
}

}  // namespace bench
