// MpiBackend: every collective over MPI on buffers MPI can read (host memory,
// or device memory with a GPU-aware MPI). The user's buffers go to MPI as
// they are: no copies, no allocations, MPI_IN_PLACE where MPI defines it.
// Exceptions: large ReduceScatter on Open MPI runs the library's own ring
// (rings.h), through the kept scratch, still allocation-free; above
// INFINICCL_HOST_PIECE_THRESHOLD, host-buffer AllReduce and Reduce are one
// MPI call per piece, MPICH's Scatter one per column of pieces, ReduceScatter
// takes the ring under every MPI and Open MPI's AllGather a ring too
// (host_pieces.h: MPI's message-sized temporary faults in on every call).
// On the direct path (CollArgs::device set) the buffers are device memory:
// the few local copies the backend makes (the root's Broadcast copy, Avg's
// division, MPICH's Reduce workaround) go through the device runtime.
#pragma once

#include <mpi.h>

#include <atomic>
#include <vector>

#include "backend/backend.h"
#include "device/device_runtime.h"

namespace infiniccl {

class MpiBackend final : public Backend {
 public:
  MpiBackend(MPI_Comm comm, int rank, int size)
      : comm_(comm), rank_(rank), size_(size) {}
  const char *Name() const override { return "MPI"; }
  Status Run(const CollArgs &args) override;
  bool ReadsDeviceMemory(DeviceKind kind) const override;
  std::unique_ptr<P2pBatch> NewP2pBatch() override;
  Status CheckMatching(const CollArgs &args, bool grouped) const override;
  void Revoke() override;

 private:
  Status RunKind(const CollArgs &a);
  Status AllReduce(const CollArgs &a);
  Status Broadcast(const CollArgs &a);
  Status Reduce(const CollArgs &a);
  Status AllGather(const CollArgs &a);
  Status Gather(const CollArgs &a);
  Status Scatter(const CollArgs &a);
  Status ReduceScatter(const CollArgs &a);
  Status AllToAll(const CollArgs &a);
  Status Send(const CollArgs &a);
  Status Recv(const CollArgs &a);

  // Grows on demand and is kept (up to 2 MiB), so steady state allocates
  // nothing; used by the ReduceScatter ring (Open MPI), Avg on device
  // buffers, and the MPICH in-place Reduce workaround, which gives back
  // what it grew beyond that after the call.
  void *Scratch(size_t bytes);
  // memcpy, or the device runtime's copy (finished on return) for device buffers.
  Status LocalCopy(const CollArgs &a, void *dst, const void *src, size_t bytes,
                   CopyKind kind);
  // Avg: the Sum in `buf` divided by the number of ranks (device memory
  // through the scratch on the host).
  Status Average(const CollArgs &a, void *buf, size_t count);

  // MPI_TAG_UB of the communicator, read on first use.
  int TagUpperBound() const;

  MPI_Comm comm_;
  int rank_;
  int size_;
  std::vector<char> scratch_;
  mutable std::atomic<int> tag_ub_{-1};
};

// The MPI rank of a Send/Recv peer: MPI_ANY_SOURCE for kAnySource.
inline int MpiPeer(int peer) { return peer == kAnySource ? MPI_ANY_SOURCE : peer; }

}  // namespace infiniccl
