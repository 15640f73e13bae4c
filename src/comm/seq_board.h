// SeqBoard: a node-local shared-memory array with one slot per rank of a
// communicator on this node, holding the last collective (sequence number
// and operation) that rank has entered, the last it returned from and how,
// its process id, and whether it has left the communicator.
//
// Every rank stores into its own slot (one relaxed atomic store per call);
// the watchdog reads the others' slots with plain atomic loads, no MPI
// call, so it can name the ranks that have not reached a call even when
// they are stopped, spinning elsewhere or dead. Ranks on other nodes have no
// slot here and are reported as unknown.
//
// The slots live in a NodeSegment (mpi/node_segment.h: POSIX shared memory,
// unlinked once mapped, so destroying a communicator stays local).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/exchange.h"
#include "mpi/node_segment.h"

namespace infiniccl {

class SeqBoard {
 public:
  // Collective over `comm`. On success *out is the board, or null with
  // *why set when shared memory is unavailable (the watchdog then reports
  // every peer as unknown); an error status only for a failed MPI call.
  static Status Create(MPI_Comm comm, std::unique_ptr<SeqBoard> *out, std::string *why);
  // The same over `ex`, every rank of which is on this node; no MPI call.
  static Status Create(Exchange &ex, std::unique_ptr<SeqBoard> *out, std::string *why);
  ~SeqBoard() = default;
  SeqBoard(const SeqBoard &) = delete;
  SeqBoard &operator=(const SeqBoard &) = delete;

  // Why a rank no longer takes part in the communicator (kPresent: it
  // still does, as far as this node can tell).
  enum Left : uint32_t { kPresent = 0, kDestroyed, kAborted, kFinalized };

  // The calling rank has entered collective `seq` of kind `kind` (a CollKind
  // value). Kind first, then the number: a reader that sees the number sees
  // its kind, or the next call's (a poll racing a call, harmless here).
  void Enter(uint64_t seq, int kind) {
    __atomic_store_n(Field32(my_slot_, kKindOffset), static_cast<uint32_t>(kind),
                     __ATOMIC_RELAXED);
    __atomic_store_n(Slot(my_slot_), seq, __ATOMIC_RELEASE);
  }
  // The calling rank has returned from collective `seq` with `result` (an
  // infinicclResult_t): a rank that returned early (its arguments were
  // refused) is then told apart from one stuck inside the call.
  void Returned(uint64_t seq, int result) {
    __atomic_store_n(Field32(my_slot_, kResultOffset), static_cast<uint32_t>(result),
                     __ATOMIC_RELAXED);
    __atomic_store_n(Field64(my_slot_, kDoneOffset), seq, __ATOMIC_RELEASE);
  }
  // The calling rank has left the communicator (destroyed, aborted or
  // finalised it); written before its view of the board goes away.
  void Leave(Left why) {
    __atomic_store_n(Field32(my_slot_, kLeftOffset), static_cast<uint32_t>(why),
                     __ATOMIC_RELEASE);
  }

  // What the watchdog reads of one rank's slot.
  struct View {
    uint64_t entered = 0;   // last collective entered (0: none yet)
    int kind = 0;           // its CollKind
    uint64_t returned = 0;  // last collective returned from
    int result = 0;         // its infinicclResult_t
    int pid = 0;
    Left left = kPresent;
  };
  // False when communicator rank `rank` is on another node.
  bool Read(int rank, View *out) const;
  // Last sequence number entered by communicator rank `rank`; false when
  // that rank is on another node.
  bool LastEntered(int rank, uint64_t *seq) const;
  // True for the first rank of this node to call it, ever: the watchdog's
  // way to let exactly one rank call MPI_Abort.
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
  static Status Adopt(std::unique_ptr<NodeSegment> segment, std::unique_ptr<SeqBoard> *out);
  // One slot per rank's region of the segment (and the claim in its tail),
  // so ranks do not false-share on every call: entered seq (8 bytes),
  // returned seq (8), kind, result, pid, left (4 each).
  static constexpr size_t kSlotBytes = 64;
  static constexpr size_t kDoneOffset = 8, kKindOffset = 16, kResultOffset = 20,
                          kPidOffset = 24, kLeftOffset = 28;
  uint64_t *Slot(int i) const {
    return reinterpret_cast<uint64_t *>(SlotBase(i));
  }
  uint64_t *Field64(int i, size_t offset) const {
    return reinterpret_cast<uint64_t *>(SlotBase(i) + offset);
  }
  uint32_t *Field32(int i, size_t offset) const {
    return reinterpret_cast<uint32_t *>(SlotBase(i) + offset);
  }
  // Slot `claim_slot_` (one past the node's ranks) is the tail.
  char *SlotBase(int i) const {
    return i == claim_slot_ ? segment_->tail() : segment_->region(i);
  }

  std::unique_ptr<NodeSegment> segment_;
  int my_slot_ = 0;
  int claim_slot_ = 0;
  std::vector<int> slot_of_rank_;  // -1: on another node
};

}  // namespace infiniccl
