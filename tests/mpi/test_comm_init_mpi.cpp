// infinicclCommInitMpi at 1-4 ranks: a communicator over the caller's own MPI
// communicator (here MPI_COMM_WORLD split by rank parity, keys reversed),
// passed as its Fortran handle. Checks size, rank and member order against
// what MPI itself says, exact AllReduce/Broadcast results on it, that it is a
// duplicate (the caller may free its communicator first), and the error
// paths (NULL out-pointer, MPI_COMM_NULL, an inter-communicator, an
// out-of-range handle, before Init).
#include <mpi.h>

#include <cstdint>
#include <vector>

#include "test_util.h"

using namespace itest;

namespace {

void CheckOn(MPI_Comm mc, const char *what) {
  int mrank = -1, msize = 0;
  MPI_Comm_rank(mc, &mrank);
  MPI_Comm_size(mc, &msize);
  // Members in the MPI communicator's order, computed by MPI, not by us.
  std::vector<int64_t> expected(msize);
  int64_t me = g_rank;
  MPI_Allgather(&me, 1, MPI_INT64_T, expected.data(), 1, MPI_INT64_T, mc);

  infinicclComm_t c = nullptr;
  CHECK_RC(infinicclCommInitMpi(&c, static_cast<long>(MPI_Comm_c2f(mc))), infinicclSuccess);
  if (c == nullptr) return;
  // The library's communicator is a duplicate: freeing the caller's first
  // must leave it usable.
  MPI_Comm_free(&mc);

  int n = -1, r = -1;
  CHECK_RC(infinicclCommCount(c, &n), infinicclSuccess);
  CHECK_RC(infinicclCommUserRank(c, &r), infinicclSuccess);
  CHECK(n == msize, "%s: size %d, MPI says %d", what, n, msize);
  CHECK(r == mrank, "%s: rank %d, MPI says %d", what, r, mrank);

  std::vector<int64_t> got(msize > 0 ? msize : 1, -1);
  CHECK_RC(infinicclAllGather(&me, got.data(), 1, infinicclInt64, c, nullptr),
           infinicclSuccess);
  CHECK(got == expected, "%s: member order differs from the MPI communicator's", what);

  int64_t sum_expected = 0;
  for (int64_t m : expected) sum_expected += 10 * m + 1;
  int64_t v = 10 * me + 1, sum = -1;
  CHECK_RC(infinicclAllReduce(&v, &sum, 1, infinicclInt64, infinicclSum, c, nullptr),
           infinicclSuccess);
  CHECK(sum == sum_expected, "%s: AllReduce %lld, expected %lld", what, (long long)sum,
        (long long)sum_expected);

  const int root = msize - 1;
  int32_t b = r == root ? 1000 + int32_t(expected[root]) : -1;
  CHECK_RC(infinicclBcast(&b, 1, infinicclInt32, root, c, nullptr), infinicclSuccess);
  CHECK(b == 1000 + expected[root], "%s: Bcast %d", what, b);
  CHECK_RC(infinicclCommDestroy(c), infinicclSuccess);
}

}  // namespace

int main(int argc, char **argv) {
  // Before Init: refused without touching MPI.
  infinicclComm_t c = nullptr;
  CHECK_RC(infinicclCommInitMpi(&c, 0), infinicclInvalidUsage);

  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  int world = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  CHECK_RC(infinicclInit(&argc, &argv), infinicclSuccess);

  // Ranks of equal parity, in reverse world order.
  MPI_Comm split = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, g_rank % 2, world - g_rank, &split);
  CheckOn(split, "parity split");  // frees `split`

  MPI_Comm dup = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  CheckOn(dup, "world dup");

  // Error paths: all local, no rank waits on another.
  CHECK_RC(infinicclCommInitMpi(nullptr, static_cast<long>(MPI_Comm_c2f(MPI_COMM_WORLD))),
           infinicclInvalidArgument);
  c = reinterpret_cast<infinicclComm_t>(1);
  CHECK_RC(infinicclCommInitMpi(&c, static_cast<long>(MPI_Comm_c2f(MPI_COMM_NULL))),
           infinicclInvalidArgument);
  CHECK(c == nullptr, "the out-pointer is cleared on failure");
  CHECK(NamesCall(infinicclGetLastError(nullptr), "infinicclCommInitMpi"),
        "message: %s", SafeLastError());
  // An inter-communicator between the even and the odd ranks: refused
  // before anything collective happens on it.
  if (world >= 2) {
    MPI_Comm half = MPI_COMM_NULL, inter = MPI_COMM_NULL;
    MPI_Comm_split(MPI_COMM_WORLD, g_rank % 2, g_rank, &half);
    MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, g_rank % 2 == 0 ? 1 : 0, 7, &inter);
    CHECK_RC(infinicclCommInitMpi(&c, static_cast<long>(MPI_Comm_c2f(inter))),
             infinicclInvalidArgument);
    CHECK(c == nullptr, "the out-pointer is cleared on failure");
    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);
  }
  // Not representable as MPI_Fint (int on both MPIs).
  CHECK_RC(infinicclCommInitMpi(&c, 1L << 40), infinicclInvalidArgument);

  CHECK_RC(infinicclFinalize(), infinicclSuccess);
  MPI_Finalize();
  if (g_failures == 0 && g_rank == 0) std::printf("test_comm_init_mpi: OK (%d ranks)\n", world);
  return g_failures == 0 ? 0 : 1;
}
