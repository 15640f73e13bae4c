// Topology: how a communicator's ranks fall into groups for the two-level
// (hierarchical) collectives. A group is the ranks of one node bound to one
// device kind (host-only ranks form a group of their own kind, cpu); each
// group may have a CCL communicator of its own; its local rank 0 is its
// leader. Built once, at communicator creation, by comm/comm_groups.cpp (the
// one place communicators are made); read by hier/hier_collectives.cpp and
// shown by infiniccl-info.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/shm/shm_backend.h"
#include "core/coll_args.h"
#include "device/device_runtime.h"

namespace infiniccl {

struct Topology {
  struct Group {
    int node = 0;                        // index of its node, in rank order
    DeviceKind kind = DeviceKind::kCpu;  // kCpu: host-only ranks
    bool has_device = false;
    std::vector<int> ranks;              // communicator ranks, ascending
    std::string ccl;                     // the CCL's name; empty: none
  };
  // The same on every rank.
  int nodes = 1;
  // Every rank drives a device and no group has a CCL: device buffers of
  // this communicator go through host memory (staged, or shared memory).
  bool DevicesWithoutCcl() const {
    for (const Group &g : groups) {
      if (!g.has_device || !g.ccl.empty()) return false;
    }
    return !groups.empty();
  }
  std::vector<Group> groups;
  // All groups of one size: the shard communicators exist and AllReduce
  // takes ReduceScatter / AllReduce by shard / AllGather.
  bool equal_groups = false;
  // Every group holds consecutive ranks (the usual block placement of
  // ranks on nodes): AllGather and ReduceScatter have their two-level form
  // only then, since a group's blocks then lie side by side in the buffer.
  bool consecutive_groups = false;
  // The two-level path is on (INFINICCL_HIERARCHY and the groups allow it).
  bool hierarchical = false;
  // No group has a CCL and every group of two or more ranks has its
  // shared-memory segment (group_shm below): the steps inside groups run
  // there (agreed by every rank).
  bool inside_shm = false;
  std::string why;  // why not, when !hierarchical
  // The MPI step across groups, agreed by every rank so that all cut it
  // alike: staged in chunks of `across_chunk_bytes` (host-only ranks too,
  // through the cpu runtime) when any rank's MPI cannot read its device
  // memory, otherwise one MPI call on the buffers (direct or host).
  bool across_staged = false;
  size_t across_chunk_bytes = 0;
  // The ranks differ in how device buffers reach MPI (host-only ranks
  // beside staging ones, direct beside staged, chunk sizes that differ):
  // the flat paths then stage on every rank, host-only ranks through the
  // cpu runtime, in chunks of across_chunk_bytes, so that all cut alike.
  bool uniform_staging = false;

  // This rank.
  int my_group = 0;
  int local_rank = 0;
  int local_size = 1;
  bool leader() const { return local_rank == 0; }
  int group_count() const { return static_cast<int>(groups.size()); }
  // Group g's lowest rank, and its number of ranks.
  size_t FirstRank(int g) const {
    return static_cast<size_t>(groups[static_cast<size_t>(g)].ranks.front());
  }
  size_t GroupSize(int g) const { return groups[static_cast<size_t>(g)].ranks.size(); }
  // Where a communicator rank sits: its group and its local rank there.
  struct Place {
    int group = 0, local = 0;
  };
  Place PlaceOf(int rank) const;

  // Only when hierarchical. Inside the group (MPI always, the CCL where the
  // group has one), among the leaders (null elsewhere), and among the ranks
  // of the same local rank in every group (equal_groups only).
  MPI_Comm group_comm = MPI_COMM_NULL;
  MPI_Comm leader_comm = MPI_COMM_NULL;
  MPI_Comm shard_comm = MPI_COMM_NULL;
  std::unique_ptr<Backend> group_ccl;
  std::unique_ptr<Backend> group_mpi;
  // Shared memory inside the group (every group's ranks share a node), for
  // the steps its CCL does not take: made unless INFINICCL_SHM=0, null when
  // the segment could not be made (then MPI).
  std::unique_ptr<ShmBackend> group_shm;
  std::unique_ptr<Backend> leader_mpi;
  std::unique_ptr<Backend> shard_mpi;

  // The step of a two-level call this rank is in, for the watchdog's ERROR
  // line (read by another thread while the call runs).
  enum Step : int {
    kNoStep = 0,
    kInGroupCcl,
    kInGroupShm,
    kInGroupMpi,
    kAcrossLeaders,
    kAcrossShards
  };
  std::atomic<int> step{kNoStep};
  // "inside group 1 (ranks 2,3) on its emulated CCL", "across groups among
  // the leaders (ranks 0,2) on MPI", ...
  std::string DescribeStep(int s) const;

  // Which forms already said at INFO that they ran (once per communicator).
  std::atomic<unsigned> announced{0};

  // Working memory of the two-level forms (a leader's partial result, its
  // group's blocks): device memory of `device` (host memory when null),
  // kept between calls and grown when a call needs more. A call queued to
  // the progress engine reserves it first on the caller's thread
  // (ReserveScratch): Malloc may wait for the device (the CUDA guide's
  // implicit synchronisation), whose streams wait for that engine's gates.
  Status Scratch(DeviceRuntime *device, size_t bytes, void **out);
  // What a `kind` call of `send_bytes` each needs (Reduce, ReduceScatter).
  Status ReserveScratch(DeviceRuntime *device, CollKind kind, size_t send_bytes);

  Topology() = default;
  Topology(const Topology &) = delete;
  Topology &operator=(const Topology &) = delete;
  // Gives up the backends (the CCL first) and the scratch and, when
  // `free_comms`, frees the MPI communicators (collective: not after an abort).
  void Release(bool free_comms);
  // Revokes every transport of the two levels (Backend::Revoke, and the
  // group's shared memory): the peers' steps that wait on this rank return.
  // What a rank does when a step of a two-level call failed on it, and what
  // infinicclCommRevoke does.
  void Revoke();
  // infinicclCommAbort of the communicator: the library's waits on the
  // group, leader and shard MPI communicators end (mpi::RevokeLocally,
  // marked aborted); with `ft_revoke` and a fault-tolerant MPI they are
  // revoked as well, which ends calls blocked inside MPI on them.
  void AbortMpi(bool ft_revoke);
  ~Topology() { FreeScratch(); }

  // One line per group: "group 1: node 0, sim x2 (ranks 2,3), emulated CCL,
  // leader 2", then the mode. For INFO and infiniccl-info.
  std::vector<std::string> Describe() const;

 private:
  void FreeScratch();
  // Scratch outgrown by a later call: kept until the topology goes, since a
  // call may run on the progress engine's thread, where freeing device
  // memory (cudaFree synchronises the device) would wait for the caller's
  // stream that the engine itself holds.
  struct Retired {
    DeviceRuntime *device;
    void *ptr;
  };
  std::mutex scratch_mutex_;  // the engine's thread and a caller's reserving
  std::vector<Retired> retired_;
  DeviceRuntime *scratch_device_ = nullptr;
  void *scratch_ = nullptr;
  size_t scratch_bytes_ = 0;
};

// INFINICCL_HIERARCHY_MIN_BYTES=auto (the default): each form's own
// threshold, HierMinBytes below.
inline constexpr size_t kHierMinBytesAuto = SIZE_MAX;

// From how many bytes (each rank's send buffer) a call of `kind` on `t`
// takes its two-level form; SIZE_MAX: never (it has none: docs/CCL.md says
// why, or its flat path is measured to be as good). `configured`: the value
// of INFINICCL_HIERARCHY_MIN_BYTES, every form's threshold unless it is
// kHierMinBytesAuto, which gives each form the threshold measured in
// docs/PERFORMANCE.md, "Two-level collectives (emulated)":
// - Broadcast, Reduce, AllGather, ReduceScatter: 64 KiB (over a slow link,
//   1.03-5.75x faster than the flat path from there at 2 nodes x 2 ranks, up
//   to 6.5x at 2 x 3; below 64 KiB three steps' latency can lose);
// - AllReduce: 16 MiB (0.75-0.92 below it at 2 x 3, 1.9-2.0x from it), and
//   never when the flat AllReduce already sends the least across groups
//   (FlatAllReduceIsTwoLevel) unless the groups reduce in shared memory
//   (inside_shm: 1.11-1.16x the flat path at 16-64 MiB at 2 x 2, host
//   buffers, where MPI's in-node steps copy through its own segments).
size_t HierMinBytes(CollKind kind, const Topology &t, size_t configured);

// Open MPI's and MPICH's AllReduce of a large buffer over a power-of-two
// number of ranks is recursive halving then doubling, nearest partners first
// (Rabenseifner). When the groups hold consecutive ranks, all of one
// power-of-two size k, and their number m is a power of two, its first
// log2(k) steps stay inside the groups and the others cross with
// 2(m-1)/(mk) of the buffer per rank: what the sharded two-level form sends.
// Then the two-level form can only save staging copies, and measured
// 0.92-1.01x of the flat path at 2 x 2 (docs/PERFORMANCE.md, "Two-level collectives (emulated)").
bool FlatAllReduceIsTwoLevel(const Topology &t);

// Counters of the two-level forms that ran in this process (for tests).
struct HierStats {
  uint64_t sharded = 0;  // ReduceScatter / AllReduce by shard / AllGather
  uint64_t leader = 0;   // reduce to the leader / MPI among leaders / broadcast
  uint64_t other = 0;    // the other collectives' two-level forms
  uint64_t group_shm = 0;  // steps inside a group on its shared memory
};
HierStats GetHierStats();
void CountHier(int form);  // 0 sharded, 1 leader, 2 other, 3 a step on group_shm

}  // namespace infiniccl
