// The MPI tags of Send/Recv (mpi/mpi_tags.h): the API's tags 0..INFINICCL_TAG_MAX
// map one to one onto MPI tags above every tag the library uses itself, tag
// 0 is Send/Recv's, and the largest tag an MPI carries follows its MPI_TAG_UB.
#include <gtest/gtest.h>

#include <climits>

#include "mpi/mpi_tags.h"

namespace infiniccl {
namespace {

TEST(MpiTags, ApiTagsLieAboveTheLibrarysOwn) {
  EXPECT_EQ(MpiP2pTag(0), kMpiP2pTag);
  for (int internal : {kMpiCreateGroupTag, kMpiRingTag}) {
    EXPECT_LT(internal, MpiP2pTag(0));
  }
  EXPECT_NE(kMpiCreateGroupTag, kMpiRingTag);
  for (int tag : {0, 1, 2, 1000, INFINICCL_TAG_MAX - 1}) {
    EXPECT_EQ(MpiP2pTag(tag + 1), MpiP2pTag(tag) + 1) << tag;
  }
  EXPECT_GT(MpiP2pTag(INFINICCL_TAG_MAX), 0);  // no overflow
}

TEST(MpiTags, LargestTagFollowsTagUpperBound) {
  // The standard's least MPI_TAG_UB, MPICH's (2^28 - 1) and Open MPI's (INT_MAX).
  EXPECT_EQ(LargestApiTag(32767), 32767 - kMpiP2pTag);
  EXPECT_EQ(LargestApiTag((1 << 28) - 1), INFINICCL_TAG_MAX);
  EXPECT_EQ(LargestApiTag(INT_MAX), INFINICCL_TAG_MAX);
  EXPECT_EQ(MpiP2pTag(LargestApiTag(32767)), 32767);
}

}  // namespace
}  // namespace infiniccl
