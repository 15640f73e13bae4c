// From how many bytes each collective takes its two-level form
// (HierMinBytes): INFINICCL_HIERARCHY_MIN_BYTES=auto gives each form the
// threshold measured in docs/PERFORMANCE.md, "Two-level collectives (emulated)", and keeps AllReduce flat where
// MPI's own AllReduce already sends the least across groups; a number applies
// to every form. Pure function of the topology: no MPI.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "hier/hier_collectives.h"

namespace infiniccl {
namespace {

constexpr size_t kKiB = size_t{1} << 10;
constexpr size_t kMiB = kKiB << 10;
constexpr size_t kNever = SIZE_MAX;

// Groups as comm/comm_groups.cpp leaves them: ranks ascending in each group,
// the two flags worked out here independently.
void Shape(Topology *t, const std::vector<std::vector<int>> &groups) {
  t->groups.clear();
  for (size_t g = 0; g < groups.size(); ++g) {
    Topology::Group one;
    one.node = static_cast<int>(g);
    one.ranks = groups[g];
    t->groups.push_back(one);
  }
  t->equal_groups = true;
  t->consecutive_groups = true;
  for (const auto &g : groups) {
    t->equal_groups = t->equal_groups && g.size() == groups.front().size();
    t->consecutive_groups = t->consecutive_groups && g.back() - g.front() + 1 == static_cast<int>(g.size());
  }
}

size_t Auto(CollKind kind, const Topology &t) { return HierMinBytes(kind, t, kHierMinBytesAuto); }

TEST(HierThreshold, TwoByTwoKeepsAllReduceFlatAndTheOthersFrom64KiB) {
  Topology t;
  Shape(&t, {{0, 1}, {2, 3}});
  EXPECT_TRUE(FlatAllReduceIsTwoLevel(t));
  EXPECT_EQ(Auto(CollKind::kAllReduce, t), kNever);
  for (CollKind k : {CollKind::kBroadcast, CollKind::kReduce, CollKind::kAllGather,
                     CollKind::kReduceScatter})
    EXPECT_EQ(Auto(k, t), 64 * kKiB) << CollKindName(k);
  // No two-level form at all.
  for (CollKind k : {CollKind::kGather, CollKind::kScatter, CollKind::kAllToAll})
    EXPECT_EQ(Auto(k, t), kNever) << CollKindName(k);
}

// Groups without a CCL that reduce in shared memory: the two-level
// AllReduce saves MPI's in-node copies even where the flat one crosses the
// link no more, so it is taken from 16 MiB at 2 x 2 too.
TEST(HierThreshold, SharedMemoryInsideGroupsTakesAllReduceAt2x2From16MiB) {
  Topology t;
  Shape(&t, {{0, 1}, {2, 3}});
  t.inside_shm = true;
  EXPECT_TRUE(FlatAllReduceIsTwoLevel(t));
  EXPECT_EQ(Auto(CollKind::kAllReduce, t), 16 * kMiB);
  EXPECT_EQ(Auto(CollKind::kBroadcast, t), 64 * kKiB);
  t.inside_shm = false;
  EXPECT_EQ(Auto(CollKind::kAllReduce, t), kNever);
}

TEST(HierThreshold, AllReduceTwoLevelFrom16MiBWhereFlatCrossesMore) {
  Topology t;
  Shape(&t, {{0, 1, 2}, {3, 4, 5}});  // k = 3
  EXPECT_FALSE(FlatAllReduceIsTwoLevel(t));
  EXPECT_EQ(Auto(CollKind::kAllReduce, t), 16 * kMiB);
  Shape(&t, {{0, 1}, {2, 3}, {4, 5}});  // m = 3
  EXPECT_EQ(Auto(CollKind::kAllReduce, t), 16 * kMiB);
  Shape(&t, {{0}, {1, 2}, {3, 4, 5}});  // groups of 1, 2 and 3
  EXPECT_EQ(Auto(CollKind::kAllReduce, t), 16 * kMiB);
  EXPECT_EQ(Auto(CollKind::kAllGather, t), 64 * kKiB);
  // Ranks dealt round robin: the flat algorithm's first step crosses.
  Shape(&t, {{0, 2}, {1, 3}});
  EXPECT_FALSE(FlatAllReduceIsTwoLevel(t));
  EXPECT_EQ(Auto(CollKind::kAllReduce, t), 16 * kMiB);
  EXPECT_EQ(Auto(CollKind::kBroadcast, t), 64 * kKiB);
  EXPECT_EQ(Auto(CollKind::kAllGather, t), kNever);  // blocks not side by side
  EXPECT_EQ(Auto(CollKind::kReduceScatter, t), kNever);
  // 4 nodes x 2 and 2 x 4: powers of two again.
  Shape(&t, {{0, 1}, {2, 3}, {4, 5}, {6, 7}});
  EXPECT_EQ(Auto(CollKind::kAllReduce, t), kNever);
  Shape(&t, {{0, 1, 2, 3}, {4, 5, 6, 7}});
  EXPECT_EQ(Auto(CollKind::kAllReduce, t), kNever);
}

TEST(HierThreshold, ANumberAppliesToEveryFormThatHasOne) {
  Topology t;
  Shape(&t, {{0, 1}, {2, 3}});
  for (size_t configured : {size_t{0}, 4 * kMiB}) {
    for (CollKind k : {CollKind::kAllReduce, CollKind::kBroadcast, CollKind::kReduce,
                       CollKind::kAllGather, CollKind::kReduceScatter})
      EXPECT_EQ(HierMinBytes(k, t, configured), configured) << CollKindName(k);
    EXPECT_EQ(HierMinBytes(CollKind::kAllToAll, t, configured), kNever);
  }
}

}  // namespace
}  // namespace infiniccl
