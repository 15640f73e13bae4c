// core/cpu_budget: the cores a process may use, from the affinity mask and
// the cgroup's CPU quota (v2 cpu.max along the cgroup's path, v1 cfs quota),
// read from files this test writes.
#include "core/cpu_budget.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace infiniccl {
namespace {

TEST(CpuBudget, CpuMaxLine) {
  EXPECT_EQ(CoresOfCpuMax("max 100000"), 0u);
  EXPECT_EQ(CoresOfCpuMax("100000 100000"), 1u);
  EXPECT_EQ(CoresOfCpuMax("150000 100000"), 2u);  // 1.5 CPUs: 2 cores run
  EXPECT_EQ(CoresOfCpuMax("400000 100000"), 4u);
  EXPECT_EQ(CoresOfCpuMax("50000 100000"), 1u);
  EXPECT_EQ(CoresOfCpuMax(""), 0u);
  EXPECT_EQ(CoresOfCpuMax("abc 100000"), 0u);
  EXPECT_EQ(CoresOfCpuMax("100000 0"), 0u);
}

class CgroupTree : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/iccl-cgroup-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
  }
  void TearDown() override { std::system(("rm -rf '" + root_ + "'").c_str()); }
  void Write(const std::string &dir, const std::string &file, const std::string &text) {
    std::system(("mkdir -p '" + root_ + dir + "'").c_str());
    std::ofstream(root_ + dir + "/" + file) << text << "\n";
  }
  std::string root_;
};

TEST_F(CgroupTree, NoLimitAnywhere) {
  Write("/job/step", "cpu.max", "max 100000");
  EXPECT_EQ(CgroupCores(root_, "/job/step"), 0u);
  EXPECT_EQ(CgroupCores(root_, "/"), 0u);
}

TEST_F(CgroupTree, OwnQuota) {
  Write("/job/step", "cpu.max", "300000 100000");
  EXPECT_EQ(CgroupCores(root_, "/job/step"), 3u);
}

TEST_F(CgroupTree, TightestParentWins) {
  Write("/job", "cpu.max", "200000 100000");
  Write("/job/step", "cpu.max", "max 100000");
  Write("/job/step/task", "cpu.max", "600000 100000");
  EXPECT_EQ(CgroupCores(root_, "/job/step/task"), 2u);
  EXPECT_EQ(CgroupCores(root_, "/job/step/task/"), 2u);
}

TEST_F(CgroupTree, Version1Quota) {
  Write("/cpu", "cpu.cfs_quota_us", "250000");
  Write("/cpu", "cpu.cfs_period_us", "100000");
  EXPECT_EQ(CgroupCores(root_, ""), 3u);
  Write("/cpu", "cpu.cfs_quota_us", "-1");
  EXPECT_EQ(CgroupCores(root_, ""), 0u);
}

// The affinity mask: this process pinned to one CPU may use one core, and
// UsableCores says that the mask set it.
TEST(CpuBudget, AffinityMask) {
  cpu_set_t saved;
  ASSERT_EQ(sched_getaffinity(0, sizeof saved, &saved), 0);
  int first = -1;
  for (int c = 0; c < CPU_SETSIZE && first < 0; ++c) {
    if (CPU_ISSET(c, &saved)) first = c;
  }
  ASSERT_GE(first, 0);
  std::string why;
  const unsigned all = UsableCores(&why);
  EXPECT_GE(all, 1u);
  EXPECT_LE(all, static_cast<unsigned>(CPU_COUNT(&saved)));
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
  const unsigned pinned = UsableCores(&why);
  ASSERT_EQ(sched_setaffinity(0, sizeof saved, &saved), 0);
  EXPECT_EQ(pinned, 1u);
  if (sysconf(_SC_NPROCESSORS_ONLN) > 1) {
    EXPECT_EQ(why, "affinity mask");
  }
}

}  // namespace
}  // namespace infiniccl
