#include "hier/topology.h"

#include "mpi/mpi_thread.h"

namespace infiniccl {

namespace {
std::atomic<uint64_t> g_counts[3];
}  // namespace

HierStats GetHierStats() {
  HierStats s;
  s.sharded = g_counts[0].load();
  s.leader = g_counts[1].load();
  s.other = g_counts[2].load();
  return s;
}

void CountHier(int form) { g_counts[form].fetch_add(1); }

void Topology::Release(bool free_comms) {
  group_ccl.reset();  // first: destroying it waits for its queued work
  group_mpi.reset();
  leader_mpi.reset();
  shard_mpi.reset();
  if (!free_comms) return;
  mpi::SerialLock lock;
  for (MPI_Comm *c : {&group_comm, &leader_comm, &shard_comm}) {
    if (*c != MPI_COMM_NULL) MPI_Comm_free(c);
  }
}

std::vector<std::string> Topology::Describe() const {
  std::vector<std::string> out;
  for (size_t g = 0; g < groups.size(); ++g) {
    const Group &gr = groups[g];
    std::string ranks;
    for (int r : gr.ranks) ranks += (ranks.empty() ? "" : ",") + std::to_string(r);
    out.push_back("group " + std::to_string(g) + ": node " + std::to_string(gr.node) + ", " +
                  (gr.has_device ? DeviceKindName(gr.kind) : "host-only") + " x" +
                  std::to_string(gr.ranks.size()) + " (ranks " + ranks + "), " +
                  (gr.ccl.empty() ? std::string("no CCL (MPI, staged for device buffers)")
                                  : gr.ccl) +
                  ", leader " + std::to_string(gr.ranks.front()));
  }
  if (hierarchical) {
    out.push_back(std::string("hierarchical: ") + std::to_string(nodes) + " node(s), " +
                  std::to_string(groups.size()) + " groups; AllReduce " +
                  (equal_groups ? "by shard (ReduceScatter in group, AllReduce across "
                                  "groups by the ranks of each shard, AllGather in group)"
                                : "through the leaders (groups differ in size: reduce to "
                                  "the leader, MPI among leaders, broadcast in group)"));
  } else {
    out.push_back("flat (no hierarchy): " + why);
  }
  return out;
}

}  // namespace infiniccl
