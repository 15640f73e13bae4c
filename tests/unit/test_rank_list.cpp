// core/rank_list.h: ranks in messages (the INFINICCL_CHECK report, the
// watchdog): runs as ranges, a limit, "none".
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/rank_list.h"

namespace {

using infiniccl::RankList;

TEST(RankList, RunsOfThreeOrMoreAsRanges) {
  EXPECT_EQ(RankList({0, 1, 2, 5}), "0-2,5");
  EXPECT_EQ(RankList({0, 1, 3, 4, 5, 9}), "0,1,3-5,9");
  EXPECT_EQ(RankList({7}), "7");
}

TEST(RankList, NoneAndLimit) {
  EXPECT_EQ(RankList({}), "none");
  EXPECT_EQ(RankList({0, 2, 4, 6, 8}, 3), "0,2,4 ... (2 more)");
  // A range is one entry; the count is of ranks left out.
  EXPECT_EQ(RankList({0, 1, 2, 4, 6, 7, 8}, 2), "0-2,4 ... (3 more)");
  std::vector<int> many;
  for (int r = 0; r < 100; r += 2) many.push_back(r);
  const std::string s = RankList(many);  // 32 entries by default
  EXPECT_EQ(s.substr(s.size() - 17), ",62 ... (18 more)");
}

}  // namespace
