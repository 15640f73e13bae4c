// Device binding without a launcher: local-rank precedence over synthetic
// environments, the device choice, and the registry's refusal of memory of
// a runtime that is not enabled.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "comm/binding.h"
#include "core/config.h"
#include "core/log.h"
#include "device/registry.h"

namespace {

using infiniccl::ChooseDevice;
using infiniccl::DeviceChoice;
using infiniccl::LocalRank;
using infiniccl::LocalRankFromEnvironment;

LocalRank From(const std::map<std::string, std::string> &env, const std::string &over = "") {
  return LocalRankFromEnvironment(
      [&](const char *name) -> const char * {
        auto it = env.find(name);
        return it == env.end() ? nullptr : it->second.c_str();
      },
      over);
}

TEST(LocalRank, NothingSetMeansAskMpi) { EXPECT_EQ(From({}).rank, -1); }

TEST(LocalRank, EachLauncherVariableAlone) {
  int n = 0;
  const char *const *vars = infiniccl::LauncherLocalRankVariables(&n);
  ASSERT_EQ(n, 10);
  for (int i = 0; i < n; ++i) {
    const LocalRank r = From({{vars[i], std::to_string(i + 1)}});
    EXPECT_EQ(r.rank, i + 1) << vars[i];
    EXPECT_EQ(r.source, vars[i]);
  }
}

TEST(LocalRank, PrecedenceFollowsTheDocumentedOrder) {
  int n = 0;
  const char *const *vars = infiniccl::LauncherLocalRankVariables(&n);
  // With every variable set, the first wins; drop it and the next wins.
  std::map<std::string, std::string> env;
  for (int i = 0; i < n; ++i) env[vars[i]] = std::to_string(100 + i);
  for (int i = 0; i < n; ++i) {
    const LocalRank r = From(env);
    EXPECT_EQ(r.source, vars[i]);
    EXPECT_EQ(r.rank, 100 + i);
    env.erase(vars[i]);
  }
  EXPECT_EQ(std::string(vars[0]), "OMPI_COMM_WORLD_LOCAL_RANK");
  EXPECT_EQ(std::string(vars[1]), "MPI_LOCALRANKID");
  EXPECT_EQ(std::string(vars[n - 1]), "SLURM_LOCALID");  // an mpirun inside sbatch inherits it
}

TEST(LocalRank, OverrideWinsAndGarbageIsSkipped) {
  const LocalRank o = From({{"OMPI_COMM_WORLD_LOCAL_RANK", "3"}}, "5");
  EXPECT_EQ(o.rank, 5);
  EXPECT_EQ(o.source, "INFINICCL_LOCAL_RANK");
  const LocalRank g = From({{"OMPI_COMM_WORLD_LOCAL_RANK", "x1"}, {"MPI_LOCALRANKID", "2"}});
  EXPECT_EQ(g.rank, 2);
  EXPECT_EQ(g.source, "MPI_LOCALRANKID");
  EXPECT_EQ(From({{"LOCAL_RANK", "-1"}}).rank, -1);
  EXPECT_EQ(From({{"LOCAL_RANK", ""}}).rank, -1);
}

TEST(ChooseDevice, LocalRankOrDevlist) {
  DeviceChoice c;
  ASSERT_TRUE(ChooseDevice(2, 4, 0, nullptr, false, &c).ok());
  EXPECT_EQ(c.device, 2);
  EXPECT_FALSE(c.wrapped);
  EXPECT_FALSE(c.from_devlist);
  const int devlist[] = {3, 1};
  ASSERT_TRUE(ChooseDevice(1, 4, 2, devlist, false, &c).ok());
  EXPECT_EQ(c.device, 1);
  EXPECT_TRUE(c.from_devlist);
  ASSERT_TRUE(ChooseDevice(0, 4, 2, devlist, false, &c).ok());
  EXPECT_EQ(c.device, 3);
}

// Upstream's examples call infinicclCommInitAll(&comm, size, NULL): ndev is
// the world size and there is no list, which means "the local rank's own".
TEST(ChooseDevice, NullDevlistWithNdevIsTheLocalRanksOwn) {
  DeviceChoice c;
  ASSERT_TRUE(ChooseDevice(1, 4, 4, nullptr, false, &c).ok());
  EXPECT_EQ(c.device, 1);
  EXPECT_FALSE(c.from_devlist);
  // More ranks than devices: the usual modulo binding, not an error.
  ASSERT_TRUE(ChooseDevice(3, 1, 4, nullptr, false, &c).ok());
  EXPECT_EQ(c.device, 0);
  EXPECT_TRUE(c.wrapped);
}

TEST(ChooseDevice, DevlistShorterThanTheLocalRankFallsBackToItsOwn) {
  DeviceChoice c;
  const int short_list[] = {3};
  ASSERT_TRUE(ChooseDevice(2, 4, 1, short_list, false, &c).ok());
  EXPECT_EQ(c.device, 2);
  EXPECT_FALSE(c.from_devlist);
}

// CommInitAll(&c, 1, {999}) on a host without devices succeeds, with a
// WARN naming the devices (never silently).
TEST(Devlist, WithoutDevicesWarns) {
  const int devlist[] = {999, 3};
  infiniccl::Config warn;  // the default level (ctest runs with INFINICCL_DEBUG=NONE)
  infiniccl::ConfigureLogging(warn);
  testing::internal::CaptureStderr();
  infiniccl::WarnDevlistWithoutDevices(2, devlist);
  infiniccl::WarnDevlistWithoutDevices(0, nullptr);  // no devlist: nothing to say
  infiniccl::WarnDevlistWithoutDevices(4, nullptr);  // upstream's (size, NULL): nothing
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("WARN devlist names 2 device(s) (999,3) but no device runtime has a "
                     "device"),
            std::string::npos)
      << err;
  EXPECT_EQ(err.find("devlist names 0"), std::string::npos) << err;
  EXPECT_EQ(err.find("devlist names 4"), std::string::npos) << err;
  infiniccl::ConfigureLogging(infiniccl::Config::FromEnvironment());
}

TEST(ChooseDevice, BadDevlist) {
  DeviceChoice c;
  const int out_of_range[] = {0, 4};
  const infiniccl::Status s = ChooseDevice(1, 4, 2, out_of_range, false, &c);
  EXPECT_EQ(s.code(), infinicclInvalidArgument);
  EXPECT_NE(s.message().find("devlist[1] = 4"), std::string::npos) << s.message();
  // Another rank's entry may name a device of another node.
  ASSERT_TRUE(ChooseDevice(0, 4, 2, out_of_range, false, &c).ok());
  EXPECT_EQ(c.device, 0);
  EXPECT_EQ(ChooseDevice(0, 0, 0, nullptr, false, &c).code(), infinicclInvalidUsage);
}

TEST(Registry, EmulatedMemoryIsDeviceMemoryOnlyWhileEnabled) {
  using infiniccl::DeviceRegistry;
  using infiniccl::MemorySpace;
  infiniccl::DeviceRuntime &sim = DeviceRegistry::EnableSim();
  void *p = nullptr;
  ASSERT_TRUE(sim.Malloc(&p, 1000).ok());
  infiniccl::PointerInfo info;
  ASSERT_TRUE(DeviceRegistry::Classify(static_cast<char *>(p) + 999, &info).ok());
  EXPECT_EQ(info.space, MemorySpace::kDevice);
  EXPECT_EQ(info.kind, infiniccl::DeviceKind::kSim);
  int host = 0;
  ASSERT_TRUE(DeviceRegistry::Classify(&host, &info).ok());
  EXPECT_EQ(info.space, MemorySpace::kHost);
  // Not enabled: its memory must not pass for host memory.
  DeviceRegistry::DisableSim();
  const infiniccl::Status s = DeviceRegistry::Classify(p, &info);
  EXPECT_EQ(s.code(), infinicclInvalidArgument);
  EXPECT_NE(s.message().find("not enabled"), std::string::npos) << s.message();
  DeviceRegistry::EnableSim();
  EXPECT_TRUE(sim.Free(p).ok());
}

}  // namespace
