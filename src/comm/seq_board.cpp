#include "comm/seq_board.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "mpi/mpi_error.h"

namespace infiniccl {

namespace {

// Frees the node communicator and groups on every return path.
struct CommGuard {
  MPI_Comm comm = MPI_COMM_NULL;
  ~CommGuard() {
    if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
  }
};
struct GroupGuard {
  MPI_Group group = MPI_GROUP_NULL;
  ~GroupGuard() {
    if (group != MPI_GROUP_NULL) MPI_Group_free(&group);
  }
};
struct FdGuard {
  int fd = -1;
  ~FdGuard() {
    if (fd >= 0) close(fd);
  }
};

constexpr int kNameBytes = 64;

}  // namespace

Status SeqBoard::Create(MPI_Comm comm, std::unique_ptr<SeqBoard> *out, std::string *why) {
  out->reset();
  CommGuard node;
  INFINICCL_RETURN_IF_ERROR(MpiCheck(
      MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node.comm),
      "MPI_Comm_split_type"));
  int node_rank = 0, node_size = 1, size = 1;
  MPI_Comm_rank(node.comm, &node_rank);
  MPI_Comm_size(node.comm, &node_size);
  MPI_Comm_size(comm, &size);

  std::unique_ptr<SeqBoard> board(new SeqBoard());
  const long page = sysconf(_SC_PAGESIZE);
  // One slot per rank of the node, then the abort claim's line.
  board->bytes_ = ((node_size + 1) * kSlotBytes + page - 1) / page * page;
  board->claim_slot_ = node_size;
  board->my_slot_ = node_rank;

  // The node leader names and sizes the segment; the others open it.
  char name[kNameBytes] = "";
  FdGuard fd;
  std::string local_why;
  if (node_rank == 0) {
    static std::atomic<unsigned> counter{0};
    std::snprintf(name, sizeof name, "/infiniccl-seq-%d-%u", static_cast<int>(getpid()),
                  counter.fetch_add(1));
    fd.fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd.fd < 0 || ftruncate(fd.fd, static_cast<off_t>(board->bytes_)) != 0) {
      local_why = std::string("shm_open/ftruncate ") + name + ": " + std::strerror(errno);
      if (fd.fd >= 0) {
        shm_unlink(name);
        close(fd.fd);
        fd.fd = -1;
      }
      name[0] = '\0';
    }
  }
  INFINICCL_RETURN_IF_ERROR(
      MpiCheck(MPI_Bcast(name, kNameBytes, MPI_CHAR, 0, node.comm), "MPI_Bcast"));
  if (name[0] != '\0' && node_rank != 0) {
    fd.fd = shm_open(name, O_RDWR, 0600);
    if (fd.fd < 0)
      local_why = std::string("shm_open ") + name + ": " + std::strerror(errno);
  }
  if (fd.fd >= 0) {
    void *p = mmap(nullptr, board->bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd.fd, 0);
    if (p == MAP_FAILED) {
      local_why = std::string("mmap: ") + std::strerror(errno);
    } else {
      board->base_ = p;  // unmapped by ~SeqBoard from here on
    }
  }
  // Everyone on the node must hold a view, or slots would read as "not
  // reached" for a rank that merely could not map them.
  int ok = board->base_ != nullptr ? 1 : 0, all_ok = 0;
  const Status agreed = MpiCheck(
      MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, node.comm), "MPI_Allreduce");
  if (node_rank == 0 && name[0] != '\0') shm_unlink(name);  // all have mapped it
  INFINICCL_RETURN_IF_ERROR(agreed);
  if (!all_ok) {
    *why = local_why.empty() ? "another rank on this node could not map the segment"
                             : local_why;
    return Status::Ok();
  }

  GroupGuard comm_group, node_group;
  MPI_Comm_group(comm, &comm_group.group);
  MPI_Comm_group(node.comm, &node_group.group);
  std::vector<int> ranks(size), slots(size);
  for (int r = 0; r < size; ++r) ranks[r] = r;
  INFINICCL_RETURN_IF_ERROR(
      MpiCheck(MPI_Group_translate_ranks(comm_group.group, size, ranks.data(),
                                         node_group.group, slots.data()),
               "MPI_Group_translate_ranks"));
  for (int &s : slots)
    if (s == MPI_UNDEFINED) s = -1;
  board->slot_of_rank_ = std::move(slots);
  __atomic_store_n(board->Field32(board->my_slot_, kPidOffset),
                   static_cast<uint32_t>(getpid()), __ATOMIC_RELEASE);
  *out = std::move(board);
  return Status::Ok();
}

SeqBoard::~SeqBoard() {
  if (base_ != nullptr) munmap(base_, bytes_);
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
