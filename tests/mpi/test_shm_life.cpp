// The shared-memory segment's lifetime and name (docs/reliability/shared-memory.md,
// "Shared memory: the segment's lifetime and name"), every rank on one
// node, on the EMULATED device (INFINICCL_DEVICE=sim) with INFINICCL_SHM=1.
//
// Modes (argv[1]):
//   abort_cycles [n]  - n (default 24) times: a communicator, a queued
//                       AllReduce of device buffers (it lands in the
//                       segment) behind a 100 ms emulated kernel, then
//                       infinicclCommAbort. Once the kernels have run, the
//                       process's mapped shared memory (RssShmem) has grown
//                       by less than two segments' worth over where it
//                       stood before the first cycle; then a new
//                       communicator's AllReduce behind a kernel is exact.
//   finalize_bound    - a queued AllReduce behind a 600 s kernel, the
//                       communicator aborted, then infinicclFinalize: it
//                       returns successfully between 4 and 60 s later (it
//                       waits 5 s for the aborted communicator's engine,
//                       then leaves it behind), with the kernel still
//                       running; the process then exits.
//   precreated        - on the named path (NodeSegment's test switch), the
//                       node's first rank makes every name of the
//                       predictable form "/infiniccl-<tag>-<pid>-<n>" (tags
//                       shm and seq, n 0..63) before its first
//                       communicator: the communicator still gets its
//                       segment (no fallback to MPI), sums exactly, and no
//                       other name of this job is left in /dev/shm.
//   refused           - a communicator's segment is mapped on every rank as
//                       "/memfd:infiniccl-shm" (no name); then the odd
//                       ranks refuse themselves pidfd_getfd (a seccomp
//                       filter: EPERM), and the next communicator's segment
//                       is mapped on every rank from "/dev/shm/infiniccl-shm-"
//                       (the named path, all ranks alike), not as a memfd;
//                       both sum exactly, and no name is left in /dev/shm.
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <infiniccl/infiniccl_sim.h>
#include <mpi.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "comm/runtime.h"
#include "mpi/node_segment.h"
#include "test_util.h"

using namespace itest;

namespace {

int g_size = 1;

// RssShmem of /proc/self/status, in bytes (-1: not found).
long long RssShmem() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("RssShmem:", 0) == 0) return std::atoll(line.c_str() + 9) * 1024;
  }
  return -1;
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

constexpr size_t kCount = 4096;  // int32: 16 KiB, within one stage (lands)

// Rank r's input: (r + 1) * (i % 1000) + 1; the sum over every rank.
int Input(int r, size_t i) { return (r + 1) * static_cast<int>(i % 1000) + 1; }
long long Sum(size_t i) {
  long long s = 0;
  for (int r = 0; r < g_size; ++r) s += Input(r, i);
  return s;
}

struct DeviceBuffers {
  int *send = nullptr, *recv = nullptr;
  void *stream = nullptr;
  DeviceBuffers() {
    CHECK_RC(infinicclSimMalloc(reinterpret_cast<void **>(&send), kCount * sizeof(int)),
             infinicclSuccess);
    CHECK_RC(infinicclSimMalloc(reinterpret_cast<void **>(&recv), kCount * sizeof(int)),
             infinicclSuccess);
    CHECK_RC(infinicclSimStreamCreate(&stream), infinicclSuccess);
    std::vector<int> host(kCount);
    for (size_t i = 0; i < kCount; ++i) host[i] = Input(g_rank, i);
    CHECK_RC(infinicclSimMemcpy(send, host.data(), kCount * sizeof(int), nullptr),
             infinicclSuccess);
  }
};

// A new communicator's AllReduce of device buffers behind a kernel: exact.
void ExactAfter(DeviceBuffers &b, const char *what) {
  infinicclComm_t comm = nullptr;
  CHECK_RC(infinicclCommInitAll(&comm, 0, nullptr), infinicclSuccess);
  CHECK_RC(infinicclSimKernel(b.stream, 20000), infinicclSuccess);
  CHECK_RC(infinicclAllReduce(b.send, b.recv, kCount, infinicclInt32, infinicclSum, comm,
                              b.stream),
           infinicclSuccess);
  std::vector<int> out(kCount, -1);
  CHECK_RC(infinicclSimMemcpy(out.data(), b.recv, kCount * sizeof(int), b.stream),
           infinicclSuccess);
  CHECK_RC(infinicclSimStreamSynchronize(b.stream), infinicclSuccess);
  size_t wrong = 0;
  for (size_t i = 0; i < kCount; ++i) wrong += out[i] != Sum(i);
  CHECK(wrong == 0, "%s: %zu of %zu elements wrong (element 0: %d, want %lld)", what, wrong,
        kCount, out[0], Sum(0));
  CHECK_RC(infinicclCommDestroy(comm), infinicclSuccess);
}

void AbortCycles(int cycles) {
  DeviceBuffers b;
  // Where the process stands with MPI's own shared memory mapped, and what
  // one live communicator's segment adds.
  ExactAfter(b, "before the cycles");
  const long long before = RssShmem();
  infinicclComm_t probe = nullptr;
  CHECK_RC(infinicclCommInitAll(&probe, 0, nullptr), infinicclSuccess);
  const long long segment = RssShmem() - before;
  CHECK_RC(infinicclCommDestroy(probe), infinicclSuccess);
  CHECK(before > 0 && segment > 0, "RssShmem %lld bytes, a segment %lld bytes", before,
        segment);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < cycles; ++i) {
    infinicclComm_t comm = nullptr;
    CHECK_RC(infinicclCommInitAll(&comm, 0, nullptr), infinicclSuccess);
    CHECK_RC(infinicclSimKernel(b.stream, 100000), infinicclSuccess);
    CHECK_RC(infinicclAllReduce(b.send, b.recv, kCount, infinicclInt32, infinicclSum, comm,
                                b.stream),
             infinicclSuccess);
    CHECK_RC(infinicclCommAbort(comm), infinicclSuccess);
  }
  const long long peak = RssShmem();
  CHECK_RC(infinicclSimStreamSynchronize(b.stream), infinicclSuccess);
  // The segments go on the threads that destroy the aborted communicators'
  // engines, once the stream has passed their copies.
  long long after = RssShmem();
  const auto wait = std::chrono::steady_clock::now();
  // Waited for until every segment is gone (for the figure), asserted
  // within two (MPI's own shared memory may grow meanwhile).
  while (after - before >= segment / 2 && Seconds(wait) < 10.0) {
    usleep(20000);
    after = RssShmem();
  }
  CHECK(after - before < 2 * segment,
        "RssShmem grew from %lld to %lld bytes over %d aborted communicators (a segment: "
        "%lld bytes; bound: less than two)",
        before, after, cycles, segment);
  std::printf("[rank %d] abort_cycles: %d cycles in %.1f s; RssShmem %.1f MB before, %.1f MB "
              "right after the aborts, %.1f MB %.2f s after the kernels ran (a segment: "
              "%.1f MB)\n",
              g_rank, cycles, Seconds(start), before / 1e6, peak / 1e6, after / 1e6,
              Seconds(wait), segment / 1e6);
  ExactAfter(b, "after the cycles");
}

void FinalizeBound(int *exit_code) {
  DeviceBuffers b;
  infinicclComm_t comm = nullptr;
  CHECK_RC(infinicclCommInitAll(&comm, 0, nullptr), infinicclSuccess);
  CHECK_RC(infinicclSimKernel(b.stream, 600u * 1000u * 1000u), infinicclSuccess);
  CHECK_RC(infinicclAllReduce(b.send, b.recv, kCount, infinicclInt32, infinicclSum, comm,
                              b.stream),
           infinicclSuccess);
  CHECK_RC(infinicclCommAbort(comm), infinicclSuccess);
  *exit_code = TotalFailures() != 0 ? 1 : 0;
  const auto start = std::chrono::steady_clock::now();
  const infinicclResult_t r = infinicclFinalize();
  const double s = Seconds(start);
  CHECK(r == infinicclSuccess, "infinicclFinalize: %d", static_cast<int>(r));
  CHECK(s >= 4.0 && s < 60.0,
        "infinicclFinalize returned after %.2f s (an aborted communicator's engine behind a "
        "600 s kernel; want 4 to 60 s)",
        s);
  std::printf("[rank %d] finalize_bound: infinicclFinalize returned in %.2f s with the "
              "kernel still running\n",
              g_rank, s);
  if (g_failures != 0) *exit_code = 1;
  // The stream and its kernel are left as they are: the process exits.
}

// The /dev/shm entries whose name starts with `prefix`.
std::vector<std::string> ShmNames(const std::string &prefix) {
  std::vector<std::string> names;
  if (DIR *d = opendir("/dev/shm")) {
    while (dirent *e = readdir(d)) {
      if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0) names.push_back(e->d_name);
    }
    closedir(d);
  }
  return names;
}

void Precreated() {
  infiniccl::NodeSegment::ForceNamedForTesting(true);
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int node_rank = 0, node_size = 1;
  MPI_Comm_rank(node, &node_rank);
  MPI_Comm_size(node, &node_size);
  CHECK(node_size == g_size, "every rank on one node (%d of %d)", node_size, g_size);
  int leader_pid = static_cast<int>(getpid());
  MPI_Bcast(&leader_pid, 1, MPI_INT, 0, node);
  const std::string prefix = "infiniccl-";
  std::vector<std::string> made;
  if (node_rank == 0) {
    for (const char *tag : {"shm", "seq"}) {
      for (int n = 0; n < 64; ++n) {
        const std::string name =
            "/" + prefix + tag + "-" + std::to_string(leader_pid) + "-" + std::to_string(n);
        const int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
        CHECK(fd >= 0, "shm_open %s: %s", name.c_str(), std::strerror(errno));
        if (fd >= 0) {
          close(fd);
          made.push_back(name.substr(1));
        }
      }
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);

  infinicclComm_t comm = nullptr;
  CHECK_RC(infinicclCommInitAll(&comm, 0, nullptr), infinicclSuccess);
  std::shared_ptr<infiniccl::Communicator> c;
  CHECK(infiniccl::Runtime::Lookup(comm, &c).ok() && c != nullptr);
  CHECK(c != nullptr && c->shm_backend() != nullptr,
        "the communicator has no shared-memory segment (fell back to MPI) with the "
        "predictable names taken; last error: %s",
        SafeLastError());
  c.reset();
  std::vector<int> send(kCount), recv(kCount, -1);
  for (size_t i = 0; i < kCount; ++i) send[i] = Input(g_rank, i);
  CHECK_RC(infinicclAllReduce(send.data(), recv.data(), kCount, infinicclInt32, infinicclSum,
                              comm, nullptr),
           infinicclSuccess);
  size_t wrong = 0;
  for (size_t i = 0; i < kCount; ++i) wrong += recv[i] != Sum(i);
  CHECK(wrong == 0, "%zu of %zu elements wrong", wrong, kCount);
  // The segment's name went once every rank had mapped it.
  MPI_Barrier(MPI_COMM_WORLD);
  const std::vector<std::string> during = ShmNames(prefix + "shm-" + std::to_string(leader_pid));
  if (node_rank == 0) {
    size_t extra = 0;
    for (const std::string &n : during) {
      bool ours = false;
      for (const std::string &m : made) ours = ours || m == n;
      if (!ours) {
        ++extra;
        std::fprintf(stderr, "[rank %d] left in /dev/shm: %s\n", g_rank, n.c_str());
      }
    }
    CHECK(extra == 0, "%zu name(s) of this job's segments left in /dev/shm", extra);
  }
  CHECK_RC(infinicclCommDestroy(comm), infinicclSuccess);
  MPI_Barrier(MPI_COMM_WORLD);
  for (const std::string &n : made) shm_unlink(("/" + n).c_str());
  MPI_Comm_free(&node);
  infiniccl::NodeSegment::ForceNamedForTesting(false);
}

// The lines of /proc/self/maps that contain `what`.
int MapsWith(const std::string &what) {
  std::ifstream in("/proc/self/maps");
  std::string line;
  int n = 0;
  while (std::getline(in, line)) n += line.find(what) != std::string::npos ? 1 : 0;
  return n;
}

// A communicator, its shared-memory segment's mappings by kind, an exact
// AllReduce; destroyed.
void MadeAs(const char *what, bool named) {
  const std::string memfd = "/memfd:infiniccl-shm", file = "/dev/shm/infiniccl-shm-";
  const int memfd_before = MapsWith(memfd), file_before = MapsWith(file);
  infinicclComm_t comm = nullptr;
  CHECK_RC(infinicclCommInitAll(&comm, 0, nullptr), infinicclSuccess);
  const int memfd_maps = MapsWith(memfd) - memfd_before, file_maps = MapsWith(file) - file_before;
  CHECK(memfd_maps == (named ? 0 : 1) && file_maps == (named ? 1 : 0),
        "%s: the segment mapped %d time(s) as %s and %d time(s) from %s; expected %s", what,
        memfd_maps, memfd.c_str(), file_maps, file.c_str(), named ? "by name" : "as a memfd");
  std::vector<int> send(kCount), recv(kCount, -1);
  for (size_t i = 0; i < kCount; ++i) send[i] = Input(g_rank, i);
  CHECK_RC(infinicclAllReduce(send.data(), recv.data(), kCount, infinicclInt32, infinicclSum,
                              comm, nullptr),
           infinicclSuccess);
  size_t wrong = 0;
  for (size_t i = 0; i < kCount; ++i) wrong += recv[i] != Sum(i);
  CHECK(wrong == 0, "%s: %zu of %zu elements wrong", what, wrong, kCount);
  CHECK_RC(infinicclCommDestroy(comm), infinicclSuccess);
}

void Refused() {
  MadeAs("pidfd_getfd allowed", false);
  if (g_rank % 2 == 1) {
    // pidfd_getfd fails with EPERM in this thread from here on (as under a
    // container's seccomp profile); every other call is allowed.
    sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_pidfd_getfd, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    sock_fprog prog = {static_cast<unsigned short>(sizeof filter / sizeof filter[0]), filter};
    CHECK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0, "PR_SET_NO_NEW_PRIVS: %s",
          std::strerror(errno));
    CHECK(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0, "PR_SET_SECCOMP: %s",
          std::strerror(errno));
    CHECK(syscall(SYS_pidfd_getfd, -1, 0, 0) < 0 && errno == EPERM,
          "the filter does not refuse pidfd_getfd");
  }
  MadeAs("pidfd_getfd refused on the odd ranks", true);
  MPI_Barrier(MPI_COMM_WORLD);
  const std::vector<std::string> left = ShmNames("infiniccl-shm-" + std::to_string(getpid()));
  CHECK(left.empty(), "%zu name(s) of this rank's segments left in /dev/shm", left.size());
}

}  // namespace

int main(int argc, char **argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (infinicclInit(&argc, &argv) != infinicclSuccess) return 2;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  if (mode == "finalize_bound") {
    int code = 1;
    FinalizeBound(&code);
    if (code != 0) std::fprintf(stderr, "[rank %d] FAIL finalize_bound\n", g_rank);
    return code;
  }
  if (mode == "abort_cycles") {
    AbortCycles(argc > 2 ? std::atoi(argv[2]) : 24);
  } else if (mode == "precreated") {
    Precreated();
  } else if (mode == "refused") {
    Refused();
  } else {
    CHECK(false, "unknown mode '%s' (abort_cycles [n], finalize_bound, precreated, refused)",
          mode.c_str());
  }
  const long failures = TotalFailures();
  if (g_rank == 0) {
    std::printf(failures == 0 ? "shm_life %s: PASS\n" : "shm_life %s: FAIL\n", mode.c_str());
  }
  infinicclFinalize();
  return failures == 0 ? 0 : 1;
}
