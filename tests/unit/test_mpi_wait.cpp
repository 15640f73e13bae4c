// How the library waits for MPI (mpi/mpi_thread.h): polled when serialised
// or when a node runs more ranks than it has cores, else in MPI's own
// blocking calls. No MPI calls here: only the decision.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

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

TEST(MpiWait, PollsOnlyAnOversubscribedJobOnOneNodeWithMpich) {
#ifdef OPEN_MPI
  const bool mpich = false;  // Open MPI's own waits yield
#else
  const bool mpich = true;
#endif
  EXPECT_EQ(PollsWhenOversubscribed(4, 4, 2), mpich);
  EXPECT_EQ(PollsWhenOversubscribed(3, 3, 2), mpich);
  EXPECT_FALSE(PollsWhenOversubscribed(2, 2, 2));  // not oversubscribed
  // Several nodes: ranks elsewhere may decide otherwise, so nobody polls.
  EXPECT_FALSE(PollsWhenOversubscribed(6, 3, 2));
  EXPECT_FALSE(PollsWhenOversubscribed(4, 0, 2));  // the launcher said nothing
}

TEST(MpiWait, LaunchersRanksOnNode) {
  const char *saved_ompi = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  const char *saved_mpich = std::getenv("MPI_LOCALNRANKS");
  const std::string ompi = saved_ompi ? saved_ompi : "", mpich = saved_mpich ? saved_mpich : "";
  unsetenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  unsetenv("MPI_LOCALNRANKS");
  EXPECT_EQ(LaunchersRanksOnNode(), 0);
  setenv("MPI_LOCALNRANKS", "3", 1);
  EXPECT_EQ(LaunchersRanksOnNode(), 3);
  setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "5", 1);
  EXPECT_EQ(LaunchersRanksOnNode(), 5);
  setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "junk", 1);
  EXPECT_EQ(LaunchersRanksOnNode(), 3);
  unsetenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  unsetenv("MPI_LOCALNRANKS");
  if (saved_ompi) setenv("OMPI_COMM_WORLD_LOCAL_SIZE", ompi.c_str(), 1);
  if (saved_mpich) setenv("MPI_LOCALNRANKS", mpich.c_str(), 1);
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
