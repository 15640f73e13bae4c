// NodeSegment: one POSIX shared-memory segment mapped by the ranks of an MPI
// communicator that share a node (MPI_COMM_TYPE_SHARED), with one region per
// rank of the node and an optional shared tail.
//
// Shared memory of the kernel's own rather than an MPI shared window: an
// MPI window must be freed collectively (MPI_Win_free synchronises), which
// would make infinicclCommDestroy and CommAbort collective and could
// deadlock when ranks destroy communicators in different orders. Each rank
// unmaps its view alone.
//
// The node's first rank makes the segment without a name (memfd_create);
// the others take a descriptor of it out of the first rank's descriptor
// table (pidfd_open, pidfd_getfd: Linux 5.6, and the right to ptrace it).
// No name exists at any moment, so nothing is left behind whenever a rank
// is killed; the memory goes with the last descriptor or mapping. Where
// some rank of the node is refused that (an older kernel, Yama's
// ptrace_scope, a seccomp filter, a process that is not dumpable), every
// rank of the node agrees on the named path, with a warning: POSIX shared
// memory under a random name sent over MPI, made with O_EXCL and unlinked
// by the first rank as soon as every rank of the node opened it, so only a
// rank killed between that shm_open and the unlink leaves the name in
// /dev/shm, sized but with no page allocated (the leader reserves the
// pages after the unlink).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "core/exchange.h"
#include "core/status.h"

namespace infiniccl {

class NodeSegment {
 public:
  // Collective over `comm`. Each rank of the node gets `region_bytes`
  // (rounded up to whole pages, so regions start page-aligned), then
  // `tail_bytes` follow for all. On success *out is the segment, or null with
  // *why set when shared memory is unavailable on some rank of the node (all
  // of them agree); an error status only for a failed MPI call. `tag` labels
  // the segment ("memfd:infiniccl-<tag>" in /proc/<pid>/maps), or names it
  // on the named path while it exists ("/infiniccl-<tag>-<leader's
  // pid>-<64 random bits in hex>", made with O_EXCL, a fresh name on
  // EEXIST).
  static Status Create(MPI_Comm comm, size_t region_bytes, size_t tail_bytes, const char *tag,
                       std::unique_ptr<NodeSegment> *out, std::string *why);
  // The same over `node`, whose ranks the caller knows to share this node
  // (a communicator made through the bootstrap): node rank r is rank r of
  // `node`. No MPI call.
  static Status CreateOn(Exchange &node, size_t region_bytes, size_t tail_bytes,
                         const char *tag, std::unique_ptr<NodeSegment> *out,
                         std::string *why);
  ~NodeSegment();
  // Tests only: `hook` is called on every rank at each step of Create with
  // the tag and the step ("memfd made", "memfd taken", "name made", "name
  // opened"), in the calling thread; and the named path taken without
  // trying memfd.
  static void SetStepHookForTesting(void (*hook)(const char *tag, const char *step));
  static void ForceNamedForTesting(bool named);
  NodeSegment(const NodeSegment &) = delete;
  NodeSegment &operator=(const NodeSegment &) = delete;

  int node_rank() const { return node_rank_; }
  int node_size() const { return node_size_; }
  // The region of node rank `i`, and the shared tail.
  char *region(int i) const { return base_ + static_cast<size_t>(i) * region_bytes_; }
  char *tail() const { return region(node_size_); }
  size_t region_bytes() const { return region_bytes_; }
  // The whole mapping (every region and the tail), as this rank sees it.
  char *base() const { return base_; }
  size_t bytes() const { return bytes_; }
  // The node rank of each rank of `comm` (-1: on another node).
  const std::vector<int> &node_rank_of() const { return node_rank_of_; }

 private:
  NodeSegment() = default;
  char *base_ = nullptr;
  size_t bytes_ = 0, region_bytes_ = 0;
  int node_rank_ = 0, node_size_ = 1;
  std::vector<int> node_rank_of_;
};

}  // namespace infiniccl
