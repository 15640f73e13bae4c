#include "mpi/node_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstdint>
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
constexpr int kNameAttempts = 16;

// 64 bits from the kernel's random source (getrandom, /dev/urandom); the
// clock and a counter mixed in where that fails.
uint64_t RandomBits() {
  uint64_t bits = 0;
  if (getrandom(&bits, sizeof bits, GRND_NONBLOCK) == static_cast<ssize_t>(sizeof bits)) {
    return bits;
  }
  static std::atomic<uint64_t> counter{0};
  uint64_t x = static_cast<uint64_t>(
                   std::chrono::steady_clock::now().time_since_epoch().count()) ^
               (counter.fetch_add(1) * 0x9E3779B97F4A7C15ULL);
  x ^= x >> 33;  // splitmix64's finaliser
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  return x ^ (x >> 33);
}

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
    // A name nobody can guess (64 random bits), made here or not at all
    // (O_EXCL): a name another process made first, by chance or to take
    // the ranks off shared memory, is passed over for a fresh one.
    for (int attempt = 0; attempt < kNameAttempts; ++attempt) {
      std::snprintf(name, sizeof name, "/infiniccl-%s-%d-%016llx", tag,
                    static_cast<int>(getpid()), static_cast<unsigned long long>(RandomBits()));
      fd.fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
      if (fd.fd >= 0 || errno != EEXIST) break;
    }
    // Sized now, its pages reserved once the name is gone (below).
    if (fd.fd < 0 || ftruncate(fd.fd, static_cast<off_t>(seg->bytes_)) != 0) {
      local_why = std::string("shm_open/ftruncate ") + name + " (" +
                  std::to_string(seg->bytes_) + " bytes): " + std::strerror(errno);
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
  // The name goes as soon as every rank of the node holds the segment open
  // (an open descriptor keeps it; mapping needs no name): it exists from
  // the leader's shm_open to the slowest rank's, every rank already inside
  // Create (MPI_Comm_split_type above), not through the reservation and
  // the mapping.
  int opened = fd.fd >= 0 ? 1 : 0, all_opened = 0;
  const Status agreed_open = MpiCheck(
      MPI_Allreduce(&opened, &all_opened, 1, MPI_INT, MPI_MIN, node.comm), "MPI_Allreduce");
  if (seg->node_rank_ == 0 && name[0] != '\0') shm_unlink(name);
  INFINICCL_RETURN_IF_ERROR(agreed_open);
  if (!all_opened) {
    *why = local_why.empty() ? "another rank on this node could not open the segment"
                             : local_why;
    return Status::Ok();
  }
  // The pages are reserved now: a tmpfs too small for them (a container's
  // 64 MiB /dev/shm, several jobs) fails here, and the ranks use MPI,
  // instead of a SIGBUS at the first touch of a page past its end. The
  // other ranks map it meanwhile: prefaulting (MAP_POPULATE) a page the
  // tmpfs cannot hold fails quietly, and no rank touches the segment before
  // all agree below.
  if (seg->node_rank_ == 0) {
    const int reserve = posix_fallocate(fd.fd, 0, static_cast<off_t>(seg->bytes_));
    if (reserve != 0) {
      local_why = std::string("posix_fallocate ") + name + " (" +
                  std::to_string(seg->bytes_) + " bytes): " + std::strerror(reserve) +
                  " (is /dev/shm large enough?)";
    }
  }
  // Mapped page by page now rather than at each page's first touch: the
  // first pass of calls over a segment otherwise takes one fault per page
  // and process (about 1 ms over the first 100 AllReduce calls of 64 KiB).
  void *p = mmap(nullptr, seg->bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
                 fd.fd, 0);
  if (!local_why.empty()) {
    if (p != MAP_FAILED) munmap(p, seg->bytes_);
  } else if (p == MAP_FAILED) {
    local_why = std::string("mmap: ") + std::strerror(errno);
  } else {
    seg->base_ = static_cast<char *>(p);  // unmapped by ~NodeSegment from here on
  }
  // Every rank of the node holds a view, or none uses the segment.
  int ok = seg->base_ != nullptr ? 1 : 0, all_ok = 0;
  INFINICCL_RETURN_IF_ERROR(MpiCheck(
      MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, node.comm), "MPI_Allreduce"));
  if (!all_ok) {
    *why = local_why.empty() ? "another rank on this node could not reserve or map the "
                               "segment"
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
