// A job that hangs (rank 0 alone in MPI_Barrier, the others waiting for it
// in another): the launcher's time limit ends it and prints every rank's
// stacks (cmake/InfinicclTesting.cmake, tests/tools/gstack), which name the
// function each rank waits in. The test passes on those stacks.
#include <mpi.h>

namespace {

volatile int g_sink = 0;  // a store after each call: no tail call hides the frame

__attribute__((noinline)) void WaitsForTheOthersBarrier(MPI_Comm comm) {
  g_sink = MPI_Barrier(comm);
}

__attribute__((noinline)) void WaitsForRankZeroRecv(MPI_Comm comm) {
  int value = 0;
  g_sink = MPI_Recv(&value, 1, MPI_INT, 0, 7, comm, MPI_STATUS_IGNORE);
}

}  // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) {
    WaitsForTheOthersBarrier(MPI_COMM_WORLD);
  } else {
    WaitsForRankZeroRecv(MPI_COMM_WORLD);
  }
  MPI_Finalize();
  return 0;
}
