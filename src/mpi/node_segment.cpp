#include "mpi/node_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <string>

#include "core/log.h"
#include "mpi/mpi_error.h"
#include "mpi/mpi_exchange.h"

// Headers older than Linux 5.6 lack the numbers; they are the same on
// every architecture but alpha (the unified system call table).
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif

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

void (*g_step_hook)(const char *tag, const char *step) = nullptr;
bool g_force_named = false;

void Step(const char *tag, const char *step) {
  if (g_step_hook != nullptr) g_step_hook(tag, step);
}
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


// How the node's ranks came to hold one descriptor of the segment.
enum class Sharing { kNone, kMemfd, kNamed };

// The leader's anonymous segment (memfd_create), taken by every other rank
// of the node from the leader's descriptor table (pidfd_open, pidfd_getfd):
// no name exists at any moment, so a rank killed anywhere in here leaves
// nothing behind; the memory goes with the last descriptor or mapping.
// pidfd_getfd needs Linux 5.6 and the right to ptrace the leader (same
// user, a dumpable process, Yama's ptrace_scope, a seccomp filter that
// allows it); where any rank lacks it, false and every rank agrees.
Status ShareByMemfd(Exchange &node, int node_rank, size_t bytes, const char *tag, FdGuard *fd,
                    bool *all_opened, std::string *why) {
  struct Offer {
    int64_t pid = 0, fd = -1;
    uint64_t dev = 0, ino = 0;
  } offer;
  std::string local_why;
  if (node_rank == 0) {
    const std::string label = std::string("infiniccl-") + tag;
    fd->fd = static_cast<int>(memfd_create(label.c_str(), MFD_CLOEXEC));
    struct stat st;
    if (fd->fd < 0 || ftruncate(fd->fd, static_cast<off_t>(bytes)) != 0 ||
        fstat(fd->fd, &st) != 0) {
      local_why = std::string("memfd_create/ftruncate (") + std::to_string(bytes) +
                  " bytes): " + std::strerror(errno);
      if (fd->fd >= 0) close(fd->fd);
      fd->fd = -1;
    } else {
      offer.pid = getpid();
      offer.fd = fd->fd;
      offer.dev = static_cast<uint64_t>(st.st_dev);
      offer.ino = static_cast<uint64_t>(st.st_ino);
    }
  }
  Step(tag, "memfd made");
  {
    std::string bytes_of(reinterpret_cast<const char *>(&offer), sizeof offer);
    INFINICCL_RETURN_IF_ERROR(node.Bcast(0, &bytes_of));
    if (bytes_of.size() != sizeof offer) {
      return Status(infinicclInternalError, "the node's first rank sent no segment offer");
    }
    std::memcpy(&offer, bytes_of.data(), sizeof offer);
  }
  if (node_rank != 0 && offer.fd >= 0) {
    const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, static_cast<pid_t>(offer.pid), 0));
    if (pidfd < 0) {
      local_why = std::string("pidfd_open of the node's first rank: ") + std::strerror(errno);
    } else {
      fd->fd = static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, static_cast<int>(offer.fd), 0));
      if (fd->fd < 0) local_why = std::string("pidfd_getfd: ") + std::strerror(errno);
      close(pidfd);
    }
    // The descriptor is the leader's segment, not another process's that
    // bears its pid in another pid namespace.
    struct stat st;
    if (fd->fd >= 0 && (fstat(fd->fd, &st) != 0 || static_cast<uint64_t>(st.st_dev) != offer.dev ||
                        static_cast<uint64_t>(st.st_ino) != offer.ino)) {
      local_why = "pidfd_getfd gave a descriptor that is not the node's first rank's segment "
                  "(another pid namespace?)";
      close(fd->fd);
      fd->fd = -1;
    }
  }
  Step(tag, "memfd taken");
  int64_t all = 0;
  INFINICCL_RETURN_IF_ERROR(node.Min(fd->fd >= 0 ? 1 : 0, &all));
  *all_opened = all != 0;
  if (!*all_opened) {
    if (!local_why.empty()) *why = local_why;
    if (fd->fd >= 0) close(fd->fd);
    fd->fd = -1;
  }
  return Status::Ok();
}

// The named path: the leader makes "/infiniccl-<tag>-<pid>-<random>" with
// O_EXCL, every rank opens it, the leader unlinks it once all did. A rank
// killed between the leader's shm_open and the unlink leaves the name.
Status ShareByName(Exchange &node, int node_rank, size_t bytes, const char *tag, FdGuard *fd,
                   bool *all_opened, std::string *made, std::string *why) {
  char name[kNameBytes] = "";
  std::string local_why;
  if (node_rank == 0) {
    // A name nobody can guess (64 random bits), made here or not at all
    // (O_EXCL): a name another process made first, by chance or to take
    // the ranks off shared memory, is passed over for a fresh one.
    for (int attempt = 0; attempt < kNameAttempts; ++attempt) {
      std::snprintf(name, sizeof name, "/infiniccl-%s-%d-%016llx", tag,
                    static_cast<int>(getpid()), static_cast<unsigned long long>(RandomBits()));
      fd->fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
      if (fd->fd >= 0 || errno != EEXIST) break;
    }
    // Sized now, its pages reserved once the name is gone (Create).
    if (fd->fd < 0 || ftruncate(fd->fd, static_cast<off_t>(bytes)) != 0) {
      local_why = std::string("shm_open/ftruncate ") + name + " (" + std::to_string(bytes) +
                  " bytes): " + std::strerror(errno);
      if (fd->fd >= 0) {
        shm_unlink(name);
        close(fd->fd);
        fd->fd = -1;
      }
      name[0] = '\0';
    }
  }
  Step(tag, "name made");
  {
    std::string sent(name, kNameBytes);
    INFINICCL_RETURN_IF_ERROR(node.Bcast(0, &sent));
    if (sent.size() != static_cast<size_t>(kNameBytes)) {
      return Status(infinicclInternalError, "the node's first rank sent no segment name");
    }
    sent.copy(name, kNameBytes);
    name[kNameBytes - 1] = '\0';
  }
  if (name[0] != '\0' && node_rank != 0) {
    fd->fd = shm_open(name, O_RDWR, 0600);
    if (fd->fd < 0) local_why = std::string("shm_open ") + name + ": " + std::strerror(errno);
  }
  Step(tag, "name opened");
  // The name goes as soon as every rank of the node holds the segment open
  // (an open descriptor keeps it; mapping needs no name): it exists from
  // the leader's shm_open to the slowest rank's, every rank already inside
  // Create (MPI_Comm_split_type there), not through the reservation and
  // the mapping.
  int64_t all = 0;
  const Status agreed_open = node.Min(fd->fd >= 0 ? 1 : 0, &all);
  if (node_rank == 0 && name[0] != '\0') shm_unlink(name);
  INFINICCL_RETURN_IF_ERROR(agreed_open);
  *all_opened = all != 0;
  *made = name;
  if (!*all_opened) {
    *why = local_why.empty() ? "another rank on this node could not open the segment"
                             : local_why;
  }
  return Status::Ok();
}

}  // namespace

void NodeSegment::SetStepHookForTesting(void (*hook)(const char *tag, const char *step)) {
  g_step_hook = hook;
}
void NodeSegment::ForceNamedForTesting(bool named) { g_force_named = named; }

Status NodeSegment::Create(MPI_Comm comm, size_t region_bytes, size_t tail_bytes,
                           const char *tag, std::unique_ptr<NodeSegment> *out,
                           std::string *why) {
  out->reset();
  CommGuard node;
  INFINICCL_RETURN_IF_ERROR(MpiCheck(
      MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node.comm),
      "MPI_Comm_split_type"));
  MpiExchange node_exchange(node.comm);
  std::unique_ptr<NodeSegment> seg;
  INFINICCL_RETURN_IF_ERROR(CreateOn(node_exchange, region_bytes, tail_bytes, tag, &seg, why));
  if (seg == nullptr) return Status::Ok();
  int size = 1;
  MPI_Comm_size(comm, &size);
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

Status NodeSegment::CreateOn(Exchange &node, size_t region_bytes, size_t tail_bytes,
                             const char *tag, std::unique_ptr<NodeSegment> *out,
                             std::string *why) {
  out->reset();
  std::unique_ptr<NodeSegment> seg(new NodeSegment());
  seg->node_rank_ = node.rank();
  seg->node_size_ = node.size();
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  seg->region_bytes_ = (region_bytes + page - 1) / page * page;
  seg->bytes_ = (static_cast<size_t>(seg->node_size_) * seg->region_bytes_ + tail_bytes +
                 page - 1) / page * page;

  // The leader makes and sizes the segment; the others take a descriptor
  // of it: without a name where the kernel lets them, by name otherwise.
  FdGuard fd;
  bool all_opened = false;
  Sharing sharing = Sharing::kNone;
  std::string memfd_why, name = std::string("memfd:infiniccl-") + tag;
  if (!g_force_named) {
    INFINICCL_RETURN_IF_ERROR(ShareByMemfd(node, seg->node_rank_, seg->bytes_, tag, &fd,
                                           &all_opened, &memfd_why));
    if (all_opened) sharing = Sharing::kMemfd;
  }
  if (sharing == Sharing::kNone) {
    if (!g_force_named) {
      static std::atomic<bool> said{false};
      if (!memfd_why.empty() && !said.exchange(true)) {
        INFINICCL_WARN("the node's shared-memory segments cannot be passed without a name "
                       "(%s): they are made under a name in /dev/shm, which a rank killed "
                       "while its node's ranks open one leaves behind",
                       memfd_why.c_str());
      }
    }
    INFINICCL_RETURN_IF_ERROR(ShareByName(node, seg->node_rank_, seg->bytes_, tag, &fd,
                                          &all_opened, &name, why));
    if (!all_opened) return Status::Ok();
    sharing = Sharing::kNamed;
  }
  std::string local_why;
  // The pages are reserved now: on the named path a tmpfs too small for
  // them (a container's 64 MiB /dev/shm, several jobs) fails here, and the
  // ranks use MPI, instead of a SIGBUS at the first touch of a page past
  // its end; a memfd's pages count against the process's memory. The
  // other ranks map it meanwhile: prefaulting (MAP_POPULATE) a page that
  // cannot be had fails quietly, and no rank touches the segment before
  // all agree below.
  if (seg->node_rank_ == 0) {
    const int reserve = posix_fallocate(fd.fd, 0, static_cast<off_t>(seg->bytes_));
    if (reserve != 0) {
      local_why = std::string("posix_fallocate ") + name + " (" +
                  std::to_string(seg->bytes_) + " bytes): " + std::strerror(reserve) +
                  (sharing == Sharing::kNamed ? " (is /dev/shm large enough?)"
                                              : " (is the memory limit large enough?)");
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
  int64_t all_ok = 0;
  INFINICCL_RETURN_IF_ERROR(node.Min(seg->base_ != nullptr ? 1 : 0, &all_ok));
  if (!all_ok) {
    *why = local_why.empty() ? "another rank on this node could not reserve or map the "
                               "segment"
                             : local_why;
    return Status::Ok();
  }

  for (int r = 0; r < seg->node_size_; ++r) seg->node_rank_of_.push_back(r);
  *out = std::move(seg);
  return Status::Ok();
}

NodeSegment::~NodeSegment() {
  if (base_ != nullptr) munmap(base_, bytes_);
}

}  // namespace infiniccl
