// infinicclCommInitRanks at 1-4 ranks: a communicator made by the listed
// ranks alone (the others do not call), in the listed order. Checks size,
// rank and member order (AllGather of world ranks), an exact AllReduce, that
// ranks left out keep working on the parent meanwhile, and the error paths
// (a rank not listed, duplicates, out of range, nranks < 1, NULL pointers).
#include <mpi.h>

#include <cstdint>
#include <vector>

#include "test_util.h"

using namespace itest;

namespace {

void CheckGroup(infinicclComm_t world, const std::vector<int> &ranks, const char *what) {
  int me = -1;
  for (size_t i = 0; i < ranks.size(); ++i)
    if (ranks[i] == g_rank) me = static_cast<int>(i);
  if (me < 0) {
    // Left out: no call. The parent stays usable for the ranks left out
    // (AllReduce among them would need their own communicator: nothing here).
    return;
  }
  infinicclComm_t c = nullptr;
  CHECK_RC(infinicclCommInitRanks(world, static_cast<int>(ranks.size()), ranks.data(), &c),
           infinicclSuccess);
  if (c == nullptr) return;
  int n = -1, r = -1;
  CHECK_RC(infinicclCommCount(c, &n), infinicclSuccess);
  CHECK_RC(infinicclCommUserRank(c, &r), infinicclSuccess);
  CHECK(n == static_cast<int>(ranks.size()), "%s: size %d", what, n);
  CHECK(r == me, "%s: rank %d, expected %d", what, r, me);
  std::vector<int64_t> got(ranks.size(), -1);
  int64_t mine = g_rank;
  CHECK_RC(infinicclAllGather(&mine, got.data(), 1, infinicclInt64, c, nullptr),
           infinicclSuccess);
  for (size_t i = 0; i < ranks.size(); ++i)
    CHECK(got[i] == ranks[i], "%s: member %zu is world rank %lld, expected %d", what, i,
          (long long)got[i], ranks[i]);
  int64_t v = 10 * g_rank + 1, sum = -1, want = 0;
  for (int x : ranks) want += 10 * x + 1;
  CHECK_RC(infinicclAllReduce(&v, &sum, 1, infinicclInt64, infinicclSum, c, nullptr),
           infinicclSuccess);
  CHECK(sum == want, "%s: AllReduce %lld, expected %lld", what, (long long)sum,
        (long long)want);
  CHECK_RC(infinicclCommDestroy(c), infinicclSuccess);
}

}  // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  int world = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  CHECK_RC(infinicclInit(&argc, &argv), infinicclSuccess);
  infinicclComm_t w = nullptr;
  CHECK_RC(infinicclCommInitAll(&w, 0, nullptr), infinicclSuccess);

  std::vector<int> all, reversed, ends, one = {world - 1};
  for (int i = 0; i < world; ++i) all.push_back(i);
  for (int i = world - 1; i >= 0; --i) reversed.push_back(i);
  ends = world > 1 ? std::vector<int>{world - 1, 0} : std::vector<int>{0};
  CheckGroup(w, all, "all");
  CheckGroup(w, reversed, "reversed");
  CheckGroup(w, ends, "last and first");  // leaves ranks 1..world-2 out
  CheckGroup(w, one, "the last alone");
  // The parent is still whole and usable by everyone.
  int64_t v = 1, sum = 0;
  CHECK_RC(infinicclAllReduce(&v, &sum, 1, infinicclInt64, infinicclSum, w, nullptr),
           infinicclSuccess);
  CHECK(sum == world, "parent AllReduce after the groups: %lld", (long long)sum);

  // Error paths: local, refused before any MPI call.
  infinicclComm_t c = reinterpret_cast<infinicclComm_t>(1);
  const int other = (g_rank + 1) % world;
  if (world > 1) {
    CHECK_RC(infinicclCommInitRanks(w, 1, &other, &c), infinicclInvalidArgument);
    CHECK(c == nullptr, "the out-pointer is cleared on failure");
  }
  const int dup[2] = {g_rank, g_rank};
  CHECK_RC(infinicclCommInitRanks(w, 2, dup, &c), infinicclInvalidArgument);
  const int out_of_range[2] = {g_rank, world};
  CHECK_RC(infinicclCommInitRanks(w, 2, out_of_range, &c), infinicclInvalidArgument);
  CHECK_RC(infinicclCommInitRanks(w, 0, all.data(), &c), infinicclInvalidArgument);
  CHECK_RC(infinicclCommInitRanks(w, 1, nullptr, &c), infinicclInvalidArgument);
  CHECK_RC(infinicclCommInitRanks(w, 1, &g_rank, nullptr), infinicclInvalidArgument);
  CHECK_RC(infinicclCommInitRanks(nullptr, 1, &g_rank, &c), infinicclInvalidArgument);

  CHECK_RC(infinicclCommDestroy(w), infinicclSuccess);
  CHECK_RC(infinicclFinalize(), infinicclSuccess);
  MPI_Finalize();
  if (g_failures == 0 && g_rank == 0) std::printf("test_comm_init_ranks: OK (%d ranks)\n", world);
  return g_failures == 0 ? 0 : 1;
}
