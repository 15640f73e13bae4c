// Two threads per rank, each running collectives on its own communicator,
// with exact values. The argument picks the thread level the program starts
// MPI with before infinicclInit:
//   multiple    the calls run concurrently;
//   serialized, funneled: the library must say so once at INFO and
//               serialise its MPI calls without deadlocking, although the
//               threads of different ranks reach their collectives in
//               different orders (even ranks start thread 0 first, odd ranks
//               thread 1, with rank-dependent pauses).
#include <mpi.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "mpi/mpi_thread.h"
#include "comm/runtime.h"
#include "test_util.h"

using namespace itest;

namespace {

int g_n = 1;
constexpr int kIters = 40;

void Worker(infinicclComm_t comm, int t, long *failures) {
  long bad = 0;
  for (int it = 0; it < kIters; ++it) {
    if ((g_rank + it + t) % 3 == 0)
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    int64_t v[3];
    for (int64_t &x : v) x = 1000 * t + 10 * g_rank + it;
    const int64_t sum =
        int64_t(g_n) * (1000 * t + it) + 10 * int64_t(g_n) * (g_n - 1) / 2;
    bad += infinicclAllReduce(v, v, 3, infinicclInt64, infinicclSum, comm, nullptr) !=
           infinicclSuccess;
    bad += v[0] != sum || v[2] != sum;
    const int root = it % g_n;
    int32_t b = g_rank == root ? 7 * it + t : -1;
    bad += infinicclBcast(&b, 1, infinicclInt32, root, comm, nullptr) != infinicclSuccess;
    bad += b != 7 * it + t;
    std::vector<int32_t> all(g_n, -1);
    int32_t mine = 100 * g_rank + t + it;
    bad += infinicclAllGather(&mine, all.data(), 1, infinicclInt32, comm, nullptr) !=
           infinicclSuccess;
    for (int r = 0; r < g_n; ++r) bad += all[r] != 100 * r + t + it;
  }
  *failures = bad;
}

// CommDestroy while another thread of this rank is blocked in a call on the
// communicator: refused with InvalidUsage (the call and the communicator
// stay as they were), and accepted once the call has returned. Rank 0's
// second thread enters an AllReduce the other ranks join only after rank 0
// has tried the destroy.
void DestroyWhileInFlight() {
  infinicclComm_t comm = nullptr;
  CHECK_RC(infinicclCommInitAll(&comm, 0, nullptr), infinicclSuccess);
  int64_t v = g_rank + 1;
  infinicclResult_t call_rc = infinicclInternalError;
  if (g_rank == 0) {
    std::shared_ptr<infiniccl::Communicator> c;
    CHECK(infiniccl::Runtime::Lookup(comm, &c).ok());
    std::thread caller([&] {
      call_rc =
          infinicclAllReduce(&v, &v, 1, infinicclInt64, infinicclSum, comm, nullptr);
    });
    // Inside the call (counted on entry, before it reaches MPI).
    while (c && c->calls_in_flight() == 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const infinicclResult_t rc = infinicclCommDestroy(comm);
    CHECK(rc == infinicclInvalidUsage, "CommDestroy with a call in flight: %d", int(rc));
    const std::string msg = infinicclGetLastError(nullptr);
    CHECK(msg.find("in flight") != std::string::npos, "message: %s", msg.c_str());
    MPI_Barrier(MPI_COMM_WORLD);  // now the others join the AllReduce
    caller.join();
  } else {
    MPI_Barrier(MPI_COMM_WORLD);
    call_rc = infinicclAllReduce(&v, &v, 1, infinicclInt64, infinicclSum, comm, nullptr);
  }
  CHECK(call_rc == infinicclSuccess && v == int64_t(g_n) * (g_n + 1) / 2,
        "AllReduce: rc %d v %lld", int(call_rc), (long long)v);
  CHECK_RC(infinicclCommDestroy(comm), infinicclSuccess);
}

int CountLines(const std::string &path, const char *needle) {
  std::ifstream in(path);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) n += line.find(needle) != std::string::npos;
  return n;
}

}  // namespace

int main(int argc, char **argv) {
  const char *level_name = argc > 1 ? argv[1] : "multiple";
  int level = MPI_THREAD_MULTIPLE;
  if (std::strcmp(level_name, "serialized") == 0) level = MPI_THREAD_SERIALIZED;
  if (std::strcmp(level_name, "funneled") == 0) level = MPI_THREAD_FUNNELED;
  int provided = -1;
  MPI_Init_thread(&argc, &argv, level, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_n);
  // Only MPI_THREAD_MULTIPLE makes the library run calls concurrently.
  const bool expect_serialised = provided < MPI_THREAD_MULTIPLE;

  // The library's log goes to a file of this rank, to look for its INFO line.
  const std::string log =
      (std::filesystem::temp_directory_path() /
       ("infiniccl_test_threads_" + std::to_string(getpid()) + ".log"))
          .string();
  setenv("INFINICCL_DEBUG", "INFO", 1);
  setenv("INFINICCL_DEBUG_FILE", log.c_str(), 1);
  CHECK_RC(infinicclInit(&argc, &argv), infinicclSuccess);
  CHECK(infiniccl::mpi::Serialized() == expect_serialised, "provided %d, serialised %d",
        provided, int(infiniccl::mpi::Serialized()));

  infinicclComm_t comms[2] = {};
  CHECK_RC(infinicclCommInitAll(&comms[0], 0, nullptr), infinicclSuccess);
  CHECK_RC(infinicclCommInitAll(&comms[1], 0, nullptr), infinicclSuccess);
  long failures[2] = {0, 0};
  {
    const int first = g_rank % 2;
    std::thread a(Worker, comms[first], first, &failures[first]);
    if (g_rank % 3 == 1) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    std::thread b(Worker, comms[1 - first], 1 - first, &failures[1 - first]);
    a.join();
    b.join();
  }
  CHECK(failures[0] == 0 && failures[1] == 0,
        "wrong results or errors: thread 0 %ld, thread 1 %ld", failures[0], failures[1]);
  CHECK_RC(infinicclCommDestroy(comms[0]), infinicclSuccess);
  CHECK_RC(infinicclCommDestroy(comms[1]), infinicclSuccess);
  // Needs MPI_Barrier beside a blocked library call: MULTIPLE only.
  if (!expect_serialised) DestroyWhileInFlight();
  CHECK_RC(infinicclFinalize(), infinicclSuccess);

  const int said = CountLines(log, "serialises its MPI calls");
  CHECK(said == (expect_serialised ? 1 : 0),
        "the serialisation INFO line appears %d times", said);
  std::filesystem::remove(log);
  const long total = TotalFailures();
  std::printf("[rank %d/%d] test_threads (%s, provided %d): %ld failures\n", g_rank, g_n,
              level_name, provided, g_failures);
  MPI_Finalize();
  return g_failures == 0 && total == 0 ? 0 : 1;
}
