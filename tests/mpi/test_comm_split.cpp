// infinicclCommSplit at 1-4 ranks: NCCL's semantics (ranks ordered by key,
// then parent rank; a negative color takes part and gets NULL), collectives
// with exact values on the new communicators, either destroy order, the
// device binding kept, and the error paths.
#include <mpi.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "comm/runtime.h"
#include "test_util.h"

using namespace itest;

namespace {

int g_n = 1;

int Rank(infinicclComm_t c) {
  int r = -1;
  CHECK_RC(infinicclCommUserRank(c, &r), infinicclSuccess);
  return r;
}
int Count(infinicclComm_t c) {
  int n = -1;
  CHECK_RC(infinicclCommCount(c, &n), infinicclSuccess);
  return n;
}

// AllGather of the world ranks: the member list of `c` in its rank order.
std::vector<int64_t> Members(infinicclComm_t c) {
  const int n = Count(c);
  std::vector<int64_t> all(n > 0 ? n : 1, -1);
  int64_t me = g_rank;
  CHECK_RC(infinicclAllGather(&me, all.data(), 1, infinicclInt64, c, nullptr),
           infinicclSuccess);
  return all;
}

void ExpectMembers(infinicclComm_t c, const std::vector<int64_t> &expected,
                   const char *what) {
  CHECK(Count(c) == int(expected.size()), "%s: size %d, expected %zu", what, Count(c),
        expected.size());
  const std::vector<int64_t> got = Members(c);
  CHECK(got == expected, "%s: member order differs (first: %lld, expected %lld)", what,
        (long long)got[0], (long long)expected[0]);
  int expected_rank = -1;
  for (size_t i = 0; i < expected.size(); ++i)
    if (expected[i] == g_rank) expected_rank = int(i);
  CHECK(Rank(c) == expected_rank, "%s: rank %d, expected %d", what, Rank(c),
        expected_rank);
}

// AllReduce and Broadcast on `c` against values computed from its members.
void ExpectCollectives(infinicclComm_t c, const std::vector<int64_t> &members,
                       const char *what) {
  int64_t sum = 0;
  for (int64_t m : members) sum += 10 * m + 1;
  int64_t v[3] = {10 * g_rank + 1, 10 * g_rank + 1, 10 * g_rank + 1};
  CHECK_RC(infinicclAllReduce(v, v, 3, infinicclInt64, infinicclSum, c, nullptr),
           infinicclSuccess);
  CHECK(v[0] == sum && v[2] == sum, "%s: AllReduce %lld, expected %lld", what,
        (long long)v[0], (long long)sum);
  const int root = int(members.size()) - 1;
  int32_t b = g_rank * 7;
  CHECK_RC(infinicclBcast(&b, 1, infinicclInt32, root, c, nullptr), infinicclSuccess);
  CHECK(b == members[root] * 7, "%s: Bcast from %d gave %d, expected %lld", what, root, b,
        (long long)(members[root] * 7));
}

std::vector<int64_t> WorldRanks(bool (*keep)(int), bool reverse) {
  std::vector<int64_t> out;
  for (int r = 0; r < g_n; ++r)
    if (keep(r)) out.push_back(r);
  if (reverse) std::reverse(out.begin(), out.end());
  return out;
}

void SplitByParity(infinicclComm_t world) {
  infinicclComm_t c = nullptr;
  CHECK_RC(infinicclCommSplit(world, g_rank % 2, g_rank, &c), infinicclSuccess);
  CHECK(c != nullptr);
  if (c == nullptr) return;
  auto members = g_rank % 2 ? WorldRanks([](int r) { return r % 2 == 1; }, false)
                            : WorldRanks([](int r) { return r % 2 == 0; }, false);
  ExpectMembers(c, members, "parity");
  ExpectCollectives(c, members, "parity");
  CHECK_RC(infinicclCommDestroy(c), infinicclSuccess);
}

void SplitReversedByKey(infinicclComm_t world) {
  infinicclComm_t c = nullptr;
  CHECK_RC(infinicclCommSplit(world, 7, g_n - g_rank, &c), infinicclSuccess);
  if (c == nullptr) {
    CHECK(c != nullptr);
    return;
  }
  auto members = WorldRanks([](int) { return true; }, true);
  ExpectMembers(c, members, "key reversed");
  ExpectCollectives(c, members, "key reversed");
  CHECK_RC(infinicclCommDestroy(c), infinicclSuccess);
}

// Equal keys: the parent's order decides.
void SplitEqualKeys(infinicclComm_t world) {
  infinicclComm_t c = nullptr;
  CHECK_RC(infinicclCommSplit(world, 0, 5, &c), infinicclSuccess);
  if (c == nullptr) {
    CHECK(c != nullptr);
    return;
  }
  ExpectMembers(c, WorldRanks([](int) { return true; }, false), "equal keys");
  CHECK_RC(infinicclCommDestroy(c), infinicclSuccess);
}

// Odd ranks pass NOCOLOR (or another negative color): NULL, and the even
// ranks still get their communicator.
void SplitNoColor(infinicclComm_t world) {
  infinicclComm_t c = reinterpret_cast<infinicclComm_t>(0x1);  // must be overwritten
  const int color = g_rank % 2 == 0 ? 3 : (g_rank == 1 ? INFINICCL_SPLIT_NOCOLOR : -5);
  CHECK_RC(infinicclCommSplit(world, color, 0, &c), infinicclSuccess);
  if (g_rank % 2 == 1) {
    CHECK(c == nullptr, "negative color gave a communicator");
    return;
  }
  if (c == nullptr) {
    CHECK(c != nullptr);
    return;
  }
  auto members = WorldRanks([](int r) { return r % 2 == 0; }, false);
  ExpectMembers(c, members, "nocolor");
  ExpectCollectives(c, members, "nocolor");
  CHECK_RC(infinicclCommDestroy(c), infinicclSuccess);
}

// Parent destroyed first, child still works; a split of a split; the child
// keeps the parent's device binding.
void DestroyOrderAndNesting() {
  infinicclComm_t parent = nullptr, child = nullptr, grandchild = nullptr;
  CHECK_RC(infinicclCommInitAll(&parent, 0, nullptr), infinicclSuccess);
  CHECK_RC(infinicclCommSplit(parent, 0, -g_rank, &child), infinicclSuccess);
  {
    std::shared_ptr<infiniccl::Communicator> p, c;
    CHECK(infiniccl::Runtime::Lookup(parent, &p).ok() &&
          infiniccl::Runtime::Lookup(child, &c).ok());
    if (p && c) {
      CHECK(p->binding().kind == c->binding().kind &&
                p->binding().device == c->binding().device &&
                p->binding().local_rank.rank == c->binding().local_rank.rank,
            "child binding %d/%d, parent %d/%d", int(c->binding().kind),
            c->binding().device, int(p->binding().kind), p->binding().device);
    }
  }
  CHECK_RC(infinicclCommDestroy(parent), infinicclSuccess);
  auto reversed = WorldRanks([](int) { return true; }, true);
  ExpectCollectives(child, reversed, "child after parent destroyed");
  // Split the child by parity of its own ranks, ordered by world rank.
  CHECK_RC(infinicclCommSplit(child, Rank(child) % 2, g_rank, &grandchild),
           infinicclSuccess);
  if (grandchild == nullptr) {
    CHECK(grandchild != nullptr);
    return;
  }
  std::vector<int64_t> members;
  for (int r = 0; r < g_n; ++r)
    if ((g_n - 1 - r) % 2 == Rank(child) % 2) members.push_back(r);
  ExpectMembers(grandchild, members, "grandchild");
  CHECK_RC(infinicclCommDestroy(child), infinicclSuccess);
  ExpectCollectives(grandchild, members, "grandchild after child destroyed");
  CHECK_RC(infinicclCommDestroy(grandchild), infinicclSuccess);
}

void Errors(infinicclComm_t world) {
  infinicclComm_t c = nullptr;
  // Rank 0 passes newcomm NULL: it takes part without a color and fails; the
  // others get a communicator of the remaining ranks instead of a hang.
  infinicclResult_t rc = infinicclCommSplit(world, 0, 0, g_rank == 0 ? nullptr : &c);
  if (g_rank == 0) {
    CHECK(rc == infinicclInvalidArgument, "NULL newcomm gave %d", int(rc));
    CHECK(std::strstr(SafeLastError(), "newcomm is NULL") != nullptr, "%s",
          SafeLastError());
  } else {
    CHECK(rc == infinicclSuccess, "rc %d: %s", int(rc), SafeLastError());
    if (c != nullptr) {
      ExpectMembers(c, WorldRanks([](int r) { return r != 0; }, false), "without rank 0");
      CHECK_RC(infinicclCommDestroy(c), infinicclSuccess);
    }
  }
  // Local failures, no communication.
  c = reinterpret_cast<infinicclComm_t>(0x1);
  CHECK_RC(infinicclCommSplit(nullptr, 0, 0, &c), infinicclInvalidArgument);
  infinicclComm_t dead = nullptr;
  CHECK_RC(infinicclCommSplit(world, 0, 0, &dead), infinicclSuccess);
  CHECK_RC(infinicclCommDestroy(dead), infinicclSuccess);
  CHECK_RC(infinicclCommSplit(dead, 0, 0, &c), infinicclInvalidUsage);
  CHECK(std::strstr(SafeLastError(), "destroyed") != nullptr, "%s", SafeLastError());
  CHECK(std::strstr(SafeLastError(), "infinicclCommSplit") != nullptr, "%s",
        SafeLastError());
}

}  // namespace

int main(int argc, char **argv) {
  CHECK_RC(infinicclInit(&argc, &argv), infinicclSuccess);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_n);
  infinicclComm_t world = nullptr;
  CHECK_RC(infinicclCommInitAll(&world, 0, nullptr), infinicclSuccess);

  SplitByParity(world);
  SplitReversedByKey(world);
  SplitEqualKeys(world);
  SplitNoColor(world);
  DestroyOrderAndNesting();
  Errors(world);
  ExpectCollectives(world, WorldRanks([](int) { return true; }, false),
                    "world at the end");

  CHECK_RC(infinicclCommDestroy(world), infinicclSuccess);
  const long total = TotalFailures();
  std::printf("[rank %d/%d] test_comm_split: %ld failures\n", g_rank, g_n, g_failures);
  CHECK_RC(infinicclFinalize(), infinicclSuccess);
  return g_failures == 0 && total == 0 ? 0 : 1;
}
