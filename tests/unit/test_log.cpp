// The log's policy: errors returned to the caller are quiet unless
// INFINICCL_DEBUG asks (the message stays in infinicclGetLastError), the
// subsystem filter of INFINICCL_DEBUG_SUBSYS, the VERSION line, and the
// warning for INFINICCL_* variables that no setting has.
#include <gtest/gtest.h>
#include <infiniccl/infiniccl.h>

#include <map>
#include <string>

#include "core/config.h"
#include "core/log.h"

namespace {

using infiniccl::Config;
using infiniccl::LogLevel;
using Vars = std::map<std::string, std::string>;

Config ParseMap(const std::map<std::string, std::string> &vars) {
  return Config::Parse([&](const char *name) -> const char * {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}

// Logging configured from `vars` for one test, restored afterwards.
struct ScopedLogging {
  explicit ScopedLogging(const std::map<std::string, std::string> &vars) {
    infiniccl::ConfigureLogging(ParseMap(vars));
  }
  ~ScopedLogging() { infiniccl::ConfigureLogging(infiniccl::GlobalConfig()); }
};

// stderr of one call that fails (InvalidUsage: no infinicclInit here).
std::string StderrOfFailingCall() {
  testing::internal::CaptureStderr();
  int count = 0;
  EXPECT_EQ(infinicclCommCount(nullptr, &count), infinicclInvalidUsage);
  return testing::internal::GetCapturedStderr();
}

TEST(Log, ReturnedErrorsAreQuietByDefault) {
  ScopedLogging logging(Vars{});
  EXPECT_EQ(StderrOfFailingCall(), "");
  // The caller still has the message.
  EXPECT_NE(std::string(infinicclGetLastError(nullptr)).find("infinicclCommCount"),
            std::string::npos);
}

TEST(Log, ReturnedErrorsPrintedWhenDebugAsks) {
  for (const char *level : {"WARN", "info", "TRACE"}) {
    ScopedLogging logging(Vars{{"INFINICCL_DEBUG", level}});
    const std::string err = StderrOfFailingCall();
    EXPECT_NE(err.find("INFINICCL WARN infinicclCommCount"), std::string::npos)
        << level << ": " << err;
  }
  for (const char *level : {"NONE", "VERSION"}) {
    ScopedLogging logging(Vars{{"INFINICCL_DEBUG", level}});
    EXPECT_EQ(StderrOfFailingCall(), "") << level;
  }
}

TEST(Log, SubsystemFilterAppliesToInfoNotWarn) {
  {
    ScopedLogging logging(
        Vars{{"INFINICCL_DEBUG", "INFO"}, {"INFINICCL_DEBUG_SUBSYS", "CCL,bind"}});
    EXPECT_TRUE(infiniccl::LogEnabled(LogLevel::kInfo, infiniccl::kSubsysCcl));
    EXPECT_TRUE(infiniccl::LogEnabled(LogLevel::kInfo, infiniccl::kSubsysBind));
    EXPECT_FALSE(infiniccl::LogEnabled(LogLevel::kInfo, infiniccl::kSubsysColl));
    EXPECT_TRUE(infiniccl::LogEnabled(LogLevel::kWarn, infiniccl::kSubsysColl));
    EXPECT_FALSE(infiniccl::LogEnabled(LogLevel::kTrace, infiniccl::kSubsysCcl));
  }
  {
    ScopedLogging logging(
        Vars{{"INFINICCL_DEBUG", "TRACE"}, {"INFINICCL_DEBUG_SUBSYS", "^STAGING"}});
    EXPECT_FALSE(infiniccl::LogEnabled(LogLevel::kInfo, infiniccl::kSubsysStaging));
    EXPECT_TRUE(infiniccl::LogEnabled(LogLevel::kTrace, infiniccl::kSubsysMpi));
  }
}

TEST(Log, SubsystemOfEachSourceFolder) {
  using infiniccl::LogSubsysOfFile;
  static_assert(LogSubsysOfFile("/x/src/staging/pipeline.cpp") ==
                infiniccl::kSubsysStaging);
  static_assert(LogSubsysOfFile("/x/src/backend/ccl/ccl_registry.cpp") ==
                infiniccl::kSubsysCcl);
  static_assert(LogSubsysOfFile("/x/src/mpi/mpi_types.cpp") == infiniccl::kSubsysMpi);
  static_assert(LogSubsysOfFile("/x/src/comm/comm_init.cpp") == infiniccl::kSubsysInit);
  static_assert(LogSubsysOfFile("/x/src/backend/mpi/mpi_backend.cpp") ==
                infiniccl::kSubsysMpi);
  static_assert(LogSubsysOfFile("src/device/registry.cpp") == infiniccl::kSubsysDevice);
  static_assert(LogSubsysOfFile("/x/src/comm/binding.cpp") == infiniccl::kSubsysBind);
  static_assert(LogSubsysOfFile("/x/src/comm/watchdog.cpp") ==
                infiniccl::kSubsysWatchdog);
  static_assert(LogSubsysOfFile("/x/src/route/route.cpp") == infiniccl::kSubsysColl);
  static_assert(LogSubsysOfFile("/x/src/api/collectives.cpp") == infiniccl::kSubsysColl);
  static_assert(LogSubsysOfFile("/x/src/progress/engine.cpp") == infiniccl::kSubsysColl);
  static_assert(LogSubsysOfFile("/x/src/api/lifecycle.cpp") == infiniccl::kSubsysInit);
  static_assert(LogSubsysOfFile("/x/src/comm/runtime.cpp") == infiniccl::kSubsysInit);
  // The last src/ component counts: a checkout inside another src/ tree.
  static_assert(LogSubsysOfFile("/home/src/device/repo/src/staging/a.cpp") ==
                infiniccl::kSubsysStaging);
  SUCCEED();
}

TEST(Log, VersionLineOnceOnRankZero) {
  ScopedLogging logging(Vars{{"INFINICCL_DEBUG", "VERSION"}});
  infiniccl::SetLogRank(0);
  testing::internal::CaptureStderr();
  infiniccl::LogVersion("test MPI");
  infiniccl::LogVersion("test MPI");
  const std::string err = testing::internal::GetCapturedStderr();
  infiniccl::SetLogRank(-1);
  EXPECT_NE(err.find("InfiniCCL version 0.1.0 (built with "), std::string::npos) << err;
  EXPECT_NE(err.find("MPI: test MPI)"), std::string::npos) << err;
  EXPECT_EQ(err.find("InfiniCCL version", err.find("InfiniCCL version") + 1),
            std::string::npos)
      << "printed twice: " << err;
}

TEST(Log, UnknownVariablesNamedWithTheNearestKnownOne) {
  const std::vector<std::string> w = Config::UnknownVariables(
      {"INFINICCL_DEBG", "INFINICCL_DEBUG", "PATH", "INFINICCL_MPI", "INFINICCL_MPIRUN",
       "INFINICCL_LIBRARY", "INFINICCL_TORCH_BACKEND", "INFINICCL_INCLUDE",
       "INFINICCL_TORCH_EXTENSION", "INFINICCL_TORCH_SANITIZE", "INFINICCL_TEST_MPI",
       "INFINICCL_TORCH", "INFINICCL_TORCH_VENV", "INFINICCL_OMPI5_VENV",
       "INFINICCL_ZZZZZZZZZZZZ", "INFINICCL_BACKEND"});
  ASSERT_EQ(w.size(), 2u);
  EXPECT_NE(w[0].find("INFINICCL_DEBG is set but InfiniCCL reads no such variable"),
            std::string::npos)
      << w[0];
  EXPECT_NE(w[0].find("did you mean INFINICCL_DEBUG?"), std::string::npos) << w[0];
  EXPECT_NE(w[1].find("INFINICCL_ZZZZZZZZZZZZ"), std::string::npos) << w[1];
  EXPECT_EQ(w[1].find("did you mean"), std::string::npos) << w[1];
}

TEST(Log, UnknownVariablesWarnAtConfigure) {
  Config c = ParseMap({});
  c.unknown_variables = Config::UnknownVariables({"INFINICCL_CHEK"});
  testing::internal::CaptureStderr();
  infiniccl::ConfigureLogging(c);
  const std::string err = testing::internal::GetCapturedStderr();
  infiniccl::ConfigureLogging(infiniccl::GlobalConfig());
  EXPECT_NE(err.find("INFINICCL WARN INFINICCL_CHEK is set"), std::string::npos) << err;
  EXPECT_NE(err.find("did you mean INFINICCL_CHECK?"), std::string::npos) << err;
}

TEST(Log, FromEnvironmentFindsUnknownVariables) {
  ASSERT_EQ(setenv("INFINICCL_TIMEOUT_SECS", "5", 1), 0);
  const Config c = Config::FromEnvironment();
  unsetenv("INFINICCL_TIMEOUT_SECS");
  bool found = false;
  for (const std::string &w : c.unknown_variables)
    found = found || w.find("INFINICCL_TIMEOUT_SECS") != std::string::npos;
  EXPECT_TRUE(found);
}

}  // namespace
