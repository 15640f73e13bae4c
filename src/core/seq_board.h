// SeqBoard: a node-local shared-memory array with one slot per rank of a
// communicator on this node, holding the last collective sequence number
// that rank has entered.
//
// Every rank stores into its own slot (one relaxed atomic store per call);
// the watchdog reads the others' slots with plain atomic loads, no MPI
// call, so it can name the ranks that have not reached a call even when
// they are stopped, spinning elsewhere or dead. Ranks on other nodes have no
// slot here and are reported as unknown.
//
// POSIX shared memory rather than an MPI shared window: an MPI window must
// be freed collectively (MPI_Win_free synchronises), which would make
// infinicclCommDestroy/CommAbort collective and could deadlock when ranks
// destroy communicators in different orders. Here the segment is unlinked
// as soon as every rank on the node has mapped it, and each rank unmaps its
// view alone.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace infiniccl {

class SeqBoard {
 public:
  // Collective over `comm`. On success *out is the board, or null with
  // *why set when shared memory is unavailable (the watchdog then reports
  // every peer as unknown); an error status only for a failed MPI call.
  static Status Create(MPI_Comm comm, std::unique_ptr<SeqBoard> *out, std::string *why);
  ~SeqBoard();
  SeqBoard(const SeqBoard &) = delete;
  SeqBoard &operator=(const SeqBoard &) = delete;

  // The calling rank has entered collective `seq`.
  void Enter(uint64_t seq) { __atomic_store_n(Slot(my_slot_), seq, __ATOMIC_RELAXED); }
  // Last sequence number entered by communicator rank `rank`; false when
  // that rank is on another node.
  bool LastEntered(int rank, uint64_t *seq) const;
  // True for the first rank of this node to call it, ever: the watchdog's
  // way to let exactly one rank call MPI_Abort first.
  bool ClaimAbort() const {  // const: the claim lives in the shared segment
    uint64_t expected = 0;
    return __atomic_compare_exchange_n(Slot(claim_slot_), &expected, 1, false,
                                       __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
  }
  // Process ids of this node's ranks other than the caller (as each wrote
  // it when the board was made): the watchdog's last resort ends them when
  // the launcher did not.
  std::vector<int> PeerPids() const;

 private:
  SeqBoard() = default;
  // One cache line per slot, so ranks do not false-share on every call:
  // the entered seq (8 bytes) and, at kPidOffset, the rank's pid.
  static constexpr size_t kSlotBytes = 64;
  static constexpr size_t kPidOffset = 24;
  uint32_t *Pid(int i) const {
    return reinterpret_cast<uint32_t *>(static_cast<char *>(base_) + i * kSlotBytes +
                                        kPidOffset);
  }
  uint64_t *Slot(int i) const {
    return reinterpret_cast<uint64_t *>(static_cast<char *>(base_) + i * kSlotBytes);
  }

  void *base_ = nullptr;
  size_t bytes_ = 0;
  int my_slot_ = 0;
  int claim_slot_ = 0;
  std::vector<int> slot_of_rank_;  // -1: on another node
};

}  // namespace infiniccl
