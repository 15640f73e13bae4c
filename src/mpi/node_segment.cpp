#include "mpi/node_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

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

Status NodeSegment::Create(MPI_Comm comm, size_t region_bytes, size_t tail_bytes,
                           const char *tag, std::unique_ptr<NodeSegment> *out,
                           std::string *why) {
  out->reset();
  CommGuard node;
  INFINICCL_RETURN_IF_ERROR(MpiCheck(
      MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node.comm),
      "MPI_Comm_split_type"));
  std::unique_ptr<NodeSegment> seg(new NodeSegment());
  int size = 1;
  MPI_Comm_rank(node.comm, &seg->node_rank_);
  MPI_Comm_size(node.comm, &seg->node_size_);
  MPI_Comm_size(comm, &size);

  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  seg->region_bytes_ = (region_bytes + page - 1) / page * page;
  seg->bytes_ = (static_cast<size_t>(seg->node_size_) * seg->region_bytes_ + tail_bytes +
                 page - 1) / page * page;

  // The node leader names and sizes the segment; the others open it.
  char name[kNameBytes] = "";
  FdGuard fd;
  std::string local_why;
  if (seg->node_rank_ == 0) {
    static std::atomic<unsigned> counter{0};
    std::snprintf(name, sizeof name, "/infiniccl-%s-%d-%u", tag, static_cast<int>(getpid()),
                  counter.fetch_add(1));
    fd.fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
    // The pages are reserved now: a tmpfs too small for them (a container's
    // 64 MiB /dev/shm, several jobs) fails here, and the ranks use MPI,
    // instead of a SIGBUS at the first touch of a page past its end.
    const bool sized = fd.fd >= 0 && ftruncate(fd.fd, static_cast<off_t>(seg->bytes_)) == 0;
    const int reserve = sized ? posix_fallocate(fd.fd, 0, static_cast<off_t>(seg->bytes_)) : 0;
    if (!sized || reserve != 0) {
      local_why = std::string(reserve != 0 ? "posix_fallocate " : "shm_open/ftruncate ") + name +
                  " (" + std::to_string(seg->bytes_) + " bytes): " +
                  std::strerror(reserve != 0 ? reserve : errno) +
                  (reserve != 0 ? " (is /dev/shm large enough?)" : "");
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
  if (name[0] != '\0' && seg->node_rank_ != 0) {
    fd.fd = shm_open(name, O_RDWR, 0600);
    if (fd.fd < 0) local_why = std::string("shm_open ") + name + ": " + std::strerror(errno);
  }
  if (fd.fd >= 0) {
    // Mapped page by page now rather than at each page's first touch: the
    // first pass of calls over a segment otherwise takes one fault per page
    // and process (about 1 ms over the first 100 AllReduce calls of 64 KiB).
    void *p = mmap(nullptr, seg->bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
                   fd.fd, 0);
    if (p == MAP_FAILED) {
      local_why = std::string("mmap: ") + std::strerror(errno);
    } else {
      seg->base_ = static_cast<char *>(p);  // unmapped by ~NodeSegment from here on
    }
  }
  // Every rank of the node holds a view, or none uses the segment.
  int ok = seg->base_ != nullptr ? 1 : 0, all_ok = 0;
  const Status agreed = MpiCheck(
      MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, node.comm), "MPI_Allreduce");
  if (seg->node_rank_ == 0 && name[0] != '\0') shm_unlink(name);  // all have mapped it
  INFINICCL_RETURN_IF_ERROR(agreed);
  if (!all_ok) {
    *why = local_why.empty() ? "another rank on this node could not map the segment"
                             : local_why;
    return Status::Ok();
  }

  GroupGuard comm_group, node_group;
  MPI_Comm_group(comm, &comm_group.group);
  MPI_Comm_group(node.comm, &node_group.group);
  std::vector<int> ranks(static_cast<size_t>(size)), of(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) ranks[static_cast<size_t>(r)] = r;
  INFINICCL_RETURN_IF_ERROR(
      MpiCheck(MPI_Group_translate_ranks(comm_group.group, size, ranks.data(),
                                         node_group.group, of.data()),
               "MPI_Group_translate_ranks"));
  for (int &s : of)
    if (s == MPI_UNDEFINED) s = -1;
  seg->node_rank_of_ = std::move(of);
  *out = std::move(seg);
  return Status::Ok();
}

NodeSegment::~NodeSegment() {
  if (base_ != nullptr) munmap(base_, bytes_);
}

}  // namespace infiniccl
