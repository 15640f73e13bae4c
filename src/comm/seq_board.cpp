#include "comm/seq_board.h"

#include <unistd.h>

namespace infiniccl {

Status SeqBoard::Create(MPI_Comm comm, std::unique_ptr<SeqBoard> *out, std::string *why) {
  out->reset();
  std::unique_ptr<NodeSegment> segment;
  INFINICCL_RETURN_IF_ERROR(NodeSegment::Create(comm, kSlotBytes, kSlotBytes, "seq", &segment, why));
  return Adopt(std::move(segment), out);
}

Status SeqBoard::Create(Exchange &ex, std::unique_ptr<SeqBoard> *out, std::string *why) {
  out->reset();
  std::unique_ptr<NodeSegment> segment;
  INFINICCL_RETURN_IF_ERROR(
      NodeSegment::CreateOn(ex, kSlotBytes, kSlotBytes, "seq", &segment, why));
  return Adopt(std::move(segment), out);
}

Status SeqBoard::Adopt(std::unique_ptr<NodeSegment> segment, std::unique_ptr<SeqBoard> *out) {
  if (segment == nullptr) return Status::Ok();
  std::unique_ptr<SeqBoard> board(new SeqBoard());
  board->my_slot_ = segment->node_rank();
  board->claim_slot_ = segment->node_size();
  board->slot_of_rank_ = segment->node_rank_of();
  board->segment_ = std::move(segment);
  __atomic_store_n(board->Field32(board->my_slot_, kPidOffset),
                   static_cast<uint32_t>(getpid()), __ATOMIC_RELEASE);
  *out = std::move(board);
  return Status::Ok();
}

bool SeqBoard::Read(int rank, View *out) const {
  if (rank < 0 || rank >= static_cast<int>(slot_of_rank_.size())) return false;
  const int slot = slot_of_rank_[rank];
  if (slot < 0) return false;
  out->entered = __atomic_load_n(Slot(slot), __ATOMIC_ACQUIRE);
  out->kind =
      static_cast<int>(__atomic_load_n(Field32(slot, kKindOffset), __ATOMIC_RELAXED));
  out->returned = __atomic_load_n(Field64(slot, kDoneOffset), __ATOMIC_ACQUIRE);
  out->result =
      static_cast<int>(__atomic_load_n(Field32(slot, kResultOffset), __ATOMIC_RELAXED));
  out->pid =
      static_cast<int>(__atomic_load_n(Field32(slot, kPidOffset), __ATOMIC_ACQUIRE));
  out->left =
      static_cast<Left>(__atomic_load_n(Field32(slot, kLeftOffset), __ATOMIC_ACQUIRE));
  return true;
}

std::vector<int> SeqBoard::PeerPids() const {
  std::vector<int> pids;
  for (size_t r = 0; r < slot_of_rank_.size(); ++r) {
    const int slot = slot_of_rank_[r];
    if (slot < 0 || slot == my_slot_) continue;
    const int pid =
        static_cast<int>(__atomic_load_n(Field32(slot, kPidOffset), __ATOMIC_ACQUIRE));
    if (pid > 0) pids.push_back(pid);
  }
  return pids;
}

bool SeqBoard::LastEntered(int rank, uint64_t *seq) const {
  if (rank < 0 || rank >= static_cast<int>(slot_of_rank_.size())) return false;
  const int slot = slot_of_rank_[rank];
  if (slot < 0) return false;
  *seq = __atomic_load_n(Slot(slot), __ATOMIC_RELAXED);
  return true;
}

}  // namespace infiniccl
