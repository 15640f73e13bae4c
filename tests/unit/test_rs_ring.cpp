// When MpiBackend takes its own ReduceScatter ring: Open MPI builds only, two
// or more ranks, 4 MiB or more in all; never on an overflowing product.
#include <gtest/gtest.h>

#include <cstdint>

#include "backend/mpi/rings.h"

namespace {

using infiniccl::UseReduceScatterRing;

constexpr size_t kMiB = size_t{1} << 20;

#ifdef OPEN_MPI
TEST(ReduceScatterRing, FromFourMiBInAll) {
  EXPECT_TRUE(UseReduceScatterRing(2, 2 * kMiB, 1));       // exactly 4 MiB
  EXPECT_FALSE(UseReduceScatterRing(2, 2 * kMiB - 1, 1));  // one byte short
  EXPECT_TRUE(UseReduceScatterRing(4, kMiB / 4, 4));
  EXPECT_FALSE(UseReduceScatterRing(4, kMiB / 4 - 1, 4));
  // 3 ranks x 8 bytes does not divide 4 MiB: the count rounds up.
  EXPECT_FALSE(UseReduceScatterRing(3, 174762, 8));  // 4194288 bytes
  EXPECT_TRUE(UseReduceScatterRing(3, 174763, 8));   // 4194312 bytes
}
#else
TEST(ReduceScatterRing, OtherMpisKeepTheirCall) {
  EXPECT_FALSE(UseReduceScatterRing(2, 64 * kMiB, 4));
  EXPECT_FALSE(UseReduceScatterRing(4, SIZE_MAX, 8));
}
#endif

TEST(ReduceScatterRing, NeverBelowTwoRanksOrForZero) {
  EXPECT_FALSE(UseReduceScatterRing(1, 64 * kMiB, 4));
  EXPECT_FALSE(UseReduceScatterRing(4, 0, 4));
  EXPECT_FALSE(UseReduceScatterRing(4, 64 * kMiB, 0));  // invalid type: size 0
}

TEST(ReduceScatterRing, HugeCountsDoNotOverflow) {
#ifdef OPEN_MPI
  EXPECT_TRUE(UseReduceScatterRing(4, SIZE_MAX / 2, 8));
#else
  EXPECT_FALSE(UseReduceScatterRing(4, SIZE_MAX / 2, 8));
#endif
}

}  // namespace
