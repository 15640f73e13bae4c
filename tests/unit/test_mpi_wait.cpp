// How the library waits for MPI (mpi/mpi_thread.h): polled when serialised
// or when a node runs more ranks than it has cores, else in MPI's own
// blocking calls. No MPI calls here: only the decision.
#include <gtest/gtest.h>

#include "mpi/mpi_thread.h"

namespace infiniccl::mpi {
namespace {

TEST(MpiWait, OversubscribedOnlyWithMoreRanksThanCores) {
  EXPECT_FALSE(Oversubscribed(2, 2));
  EXPECT_TRUE(Oversubscribed(3, 2));
  EXPECT_TRUE(Oversubscribed(4, 2));
  EXPECT_FALSE(Oversubscribed(4, 16));
  EXPECT_FALSE(Oversubscribed(1, 1));
  // Unknown (no launcher variable, no core count): not oversubscribed.
  EXPECT_FALSE(Oversubscribed(0, 2));
  EXPECT_FALSE(Oversubscribed(-1, 2));
  EXPECT_FALSE(Oversubscribed(8, 0));
}

TEST(MpiWait, PolledWhenSerialisedOrOversubscribed) {
  EXPECT_FALSE(Polled());
  SetOversubscribed(true);
  EXPECT_TRUE(Polled());
  EXPECT_FALSE(Serialized());  // no lock: polling alone
  SetOversubscribed(false);
  EXPECT_FALSE(Polled());
  SetSerialized(true);
  EXPECT_TRUE(Polled());
  SetSerialized(false);
  EXPECT_FALSE(Polled());
}

}  // namespace
}  // namespace infiniccl::mpi
