// core/pieces.h: a range cut into pieces of one width, the last shorter, in
// order, tiling the range exactly; what every chunked loop of the library
// walks.
#include <gtest/gtest.h>

#include <vector>

#include "core/pieces.h"

namespace {

using infiniccl::Piece;
using infiniccl::Pieces;

std::vector<size_t> Sizes(const Pieces &pieces) {
  std::vector<size_t> out;
  size_t next = 0;
  for (const Piece p : pieces) {
    EXPECT_EQ(p.offset, next);
    next += p.size;
    out.push_back(p.size);
  }
  return out;
}

TEST(Pieces, WidthThenTheRest) {
  EXPECT_EQ(Sizes(Pieces(10, 4)), (std::vector<size_t>{4, 4, 2}));
  EXPECT_EQ(Sizes(Pieces(8, 4)), (std::vector<size_t>{4, 4}));
  EXPECT_EQ(Sizes(Pieces(3, 4)), (std::vector<size_t>{3}));
  const Pieces p(10, 4);
  EXPECT_EQ(p.size(), 3u);
  EXPECT_EQ(p.max_size(), 4u);
  EXPECT_EQ(p[2].offset, 8u);
  EXPECT_EQ(Pieces(3, 4).max_size(), 3u);
}

TEST(Pieces, NoneForNothingAndWidthAtLeastOne) {
  EXPECT_EQ(Pieces(0, 4).size(), 0u);
  EXPECT_TRUE(Sizes(Pieces(0, 4)).empty());
  EXPECT_EQ(Sizes(Pieces(3, 0)), (std::vector<size_t>{1, 1, 1}));
}

TEST(Pieces, NoOverflowNearTheTop) {
  const size_t big = ~size_t{0};
  EXPECT_EQ(Pieces(big, big / 2 + 1).size(), 2u);
  EXPECT_EQ(Pieces(big, big).size(), 1u);
}

TEST(Pieces, WidthForABudget) {
  EXPECT_EQ(Pieces::WidthFor(1 << 20, 4), size_t{1} << 18);
  EXPECT_EQ(Pieces::WidthFor(10, 4), 2u);
  EXPECT_EQ(Pieces::WidthFor(3, 4), 1u);  // one item even when it is larger
  EXPECT_EQ(Pieces::WidthFor(0, 4), 1u);
}

}  // namespace
