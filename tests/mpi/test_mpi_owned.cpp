// When the program starts MPI itself, infinicclFinalize must leave MPI
// running: the program still owns it and finalises it last. Run with the
// argument "single" to start MPI with plain MPI_Init (thread level SINGLE)
// instead of MPI_Init_thread(MPI_THREAD_MULTIPLE).
#include <mpi.h>

#include <cstdint>
#include <cstring>

#include "test_util.h"

using namespace itest;

int main(int argc, char **argv) {
  bool single = argc > 1 && std::strcmp(argv[1], "single") == 0;
  int provided = MPI_THREAD_SINGLE;
  if (single)
    MPI_Init(&argc, &argv);
  else
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int n = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);

  CHECK_RC(infinicclInit(&argc, &argv), infinicclSuccess);
  int v = -1;
  CHECK_RC(infinicclGetRank(&v), infinicclSuccess);
  CHECK(v == g_rank, "GetRank %d", v);
  infinicclComm_t comm = nullptr;
  CHECK_RC(infinicclCommInitAll(&comm, 0, nullptr), infinicclSuccess);
  int64_t x = g_rank + 1;
  CHECK_RC(infinicclAllReduce(&x, &x, 1, infinicclInt64, infinicclSum, comm, nullptr),
           infinicclSuccess);
  CHECK(x == int64_t(n) * (n + 1) / 2, "AllReduce gave %lld", (long long)x);
  CHECK_RC(infinicclCommDestroy(comm), infinicclSuccess);
  CHECK_RC(infinicclFinalize(), infinicclSuccess);

  int finalized = 1, initialized = 0;
  MPI_Finalized(&finalized);
  MPI_Initialized(&initialized);
  CHECK(finalized == 0, "infinicclFinalize finalised an MPI it did not start");
  CHECK(initialized == 1);
  if (finalized) return 1;  // no MPI left to report through

  // The library is finalised, MPI is not: the program can still use MPI.
  CHECK_RC(infinicclGetRank(&v), infinicclInvalidUsage);
  long total = 0;
  int rc = MPI_Allreduce(&g_failures, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  CHECK(rc == MPI_SUCCESS, "MPI_Allreduce after infinicclFinalize: %d", rc);
  std::printf("[rank %d/%d] test_mpi_owned (%s): %ld failures\n", g_rank, n,
              single ? "MPI_Init" : "MPI_THREAD_MULTIPLE", g_failures);
  MPI_Finalize();
  return g_failures == 0 && total == 0 ? 0 : 1;
}
