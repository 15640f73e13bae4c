// Config::Parse from a map (no environment), Describe() and Table().
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <set>
#include <string>

#include "core/config.h"

namespace {

using infiniccl::Config;
using infiniccl::LogLevel;

// A lookup over a fixed map; records every name asked for.
struct FakeEnv {
  std::map<std::string, std::string> vars;
  std::set<std::string> asked;

  Config Parse() {
    return Config::Parse([this](const char *name) -> const char * {
      asked.insert(name);
      auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    });
  }
};

Config ParseWith(const std::string &name, const std::string &value) {
  FakeEnv env;
  env.vars[name] = value;
  return env.Parse();
}

TEST(Config, Defaults) {
  FakeEnv env;
  const Config c = env.Parse();
  EXPECT_EQ(c.log_level, LogLevel::kWarn);
  EXPECT_EQ(c.log_file, "");
  EXPECT_FALSE(c.abort_on_error);
  EXPECT_TRUE(c.warnings.empty());
  EXPECT_FALSE(env.asked.empty());
}

TEST(Config, DebugLevelsAnyCase) {
  struct Case {
    const char *value;
    LogLevel want;
  };
  const Case cases[] = {
      {"NONE", LogLevel::kNone},   {"none", LogLevel::kNone},
      {"None", LogLevel::kNone},   {"WARN", LogLevel::kWarn},
      {"warn", LogLevel::kWarn},   {"wArN", LogLevel::kWarn},
      {"INFO", LogLevel::kInfo},   {"info", LogLevel::kInfo},
      {"Info", LogLevel::kInfo},   {"TRACE", LogLevel::kTrace},
      {"trace", LogLevel::kTrace}, {"TrAcE", LogLevel::kTrace},
      {"VERSION", LogLevel::kVersion}, {"version", LogLevel::kVersion},
  };
  for (const Case &c : cases) {
    const Config config = ParseWith("INFINICCL_DEBUG", c.value);
    EXPECT_EQ(config.log_level, c.want) << c.value;
    EXPECT_TRUE(config.warnings.empty()) << c.value;
  }
}

TEST(Config, InvalidDebugLevelWarnsAndKeepsDefault) {
  for (const char *value : {"VERBOSE", "INFO ", " info", "inf", "TRACEX", "WARNING"}) {
    const Config c = ParseWith("INFINICCL_DEBUG", value);
    EXPECT_EQ(c.log_level, LogLevel::kWarn) << value;
    ASSERT_EQ(c.warnings.size(), 1u) << value;
    EXPECT_NE(c.warnings[0].find("INFINICCL_DEBUG"), std::string::npos) << c.warnings[0];
    EXPECT_NE(c.warnings[0].find(value), std::string::npos) << c.warnings[0];
  }
}

TEST(Config, AbortOnErrorSpellings) {
  for (const char *value : {"1", "true", "TRUE", "True", "yes", "YES", "on", "On"}) {
    const Config c = ParseWith("INFINICCL_ABORT_ON_ERROR", value);
    EXPECT_TRUE(c.abort_on_error) << value;
    EXPECT_TRUE(c.warnings.empty()) << value;
  }
  for (const char *value : {"0", "false", "FALSE", "no", "No", "off", "OFF", ""}) {
    const Config c = ParseWith("INFINICCL_ABORT_ON_ERROR", value);
    EXPECT_FALSE(c.abort_on_error) << value;
    EXPECT_TRUE(c.warnings.empty()) << value;
  }
}

TEST(Config, CheckIsOffByDefaultAndABoolean) {
  EXPECT_FALSE(FakeEnv().Parse().check);
  EXPECT_TRUE(ParseWith("INFINICCL_CHECK", "1").check);
  EXPECT_TRUE(ParseWith("INFINICCL_CHECK", "on").check);
  EXPECT_FALSE(ParseWith("INFINICCL_CHECK", "0").check);
  const Config c = ParseWith("INFINICCL_CHECK", "2");
  EXPECT_FALSE(c.check);
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_NE(c.warnings[0].find("INFINICCL_CHECK"), std::string::npos) << c.warnings[0];
}

TEST(Config, InvalidAbortOnErrorWarnsAndKeepsDefault) {
  for (const char *value : {"2", "maybe", "-1", "truee", " 1", "y"}) {
    const Config c = ParseWith("INFINICCL_ABORT_ON_ERROR", value);
    EXPECT_FALSE(c.abort_on_error) << value;
    ASSERT_EQ(c.warnings.size(), 1u) << value;
    EXPECT_NE(c.warnings[0].find("INFINICCL_ABORT_ON_ERROR"), std::string::npos)
        << c.warnings[0];
    EXPECT_NE(c.warnings[0].find(value), std::string::npos) << c.warnings[0];
  }
}

TEST(Config, DebugFileIsTakenVerbatim) {
  EXPECT_EQ(ParseWith("INFINICCL_DEBUG_FILE", "/tmp/log.%h.%p").log_file,
            "/tmp/log.%h.%p");
  EXPECT_EQ(ParseWith("INFINICCL_DEBUG_FILE", "").log_file, "");
}

TEST(Config, SeveralVariablesAndSeveralWarnings) {
  FakeEnv env;
  env.vars = {{"INFINICCL_DEBUG", "bogus"},
              {"INFINICCL_ABORT_ON_ERROR", "bogus"},
              {"INFINICCL_DEBUG_FILE", "f"},
              {"UNRELATED", "1"}};
  const Config c = env.Parse();
  EXPECT_EQ(c.log_level, LogLevel::kWarn);
  EXPECT_FALSE(c.abort_on_error);
  EXPECT_EQ(c.log_file, "f");
  EXPECT_EQ(c.warnings.size(), 2u);

  env.vars = {{"INFINICCL_DEBUG", "trace"}, {"INFINICCL_ABORT_ON_ERROR", "1"}};
  const Config d = env.Parse();
  EXPECT_EQ(d.log_level, LogLevel::kTrace);
  EXPECT_TRUE(d.abort_on_error);
  EXPECT_TRUE(d.warnings.empty());
}

// The value Describe() gives for `name`, or "<missing>".
std::string Described(const Config &c, const std::string &name) {
  std::string found = "<missing>";
  int hits = 0;
  for (const std::string &line : c.Describe()) {
    if (line.rfind(name + "=", 0) == 0) {
      found = line.substr(name.size() + 1);
      ++hits;
    }
  }
  EXPECT_LE(hits, 1) << name << " described more than once";
  return found;
}

TEST(Config, Describe) {
  FakeEnv env;
  const Config defaults = env.Parse();
  // Unset: warnings only, and not the errors returned to the caller.
  EXPECT_EQ(Described(defaults, "INFINICCL_DEBUG"), "");
  EXPECT_EQ(defaults.log_level, LogLevel::kWarn);
  EXPECT_FALSE(defaults.log_level_set);
  EXPECT_EQ(Described(defaults, "INFINICCL_DEBUG_SUBSYS"), "ALL");
  EXPECT_EQ(Described(defaults, "INFINICCL_DEBUG_FILE"), "");
  EXPECT_EQ(Described(defaults, "INFINICCL_ABORT_ON_ERROR"), "0");

  env.vars = {{"INFINICCL_DEBUG", "info"},
              {"INFINICCL_DEBUG_FILE", "/x/y"},
              {"INFINICCL_ABORT_ON_ERROR", "yes"}};
  const Config set = env.Parse();
  EXPECT_EQ(Described(set, "INFINICCL_DEBUG"), "INFO");
  EXPECT_EQ(Described(set, "INFINICCL_DEBUG_FILE"), "/x/y");
  EXPECT_EQ(Described(set, "INFINICCL_ABORT_ON_ERROR"), "1");
}

// Every variable either takes free-form text or warns about a value it
// cannot use and keeps its default.
TEST(Config, GarbageInAnyVariableWarnsAndKeepsTheDefault) {
  const std::set<std::string> free_form = {"INFINICCL_DEBUG_FILE"};
  FakeEnv none;
  const std::vector<std::string> defaults = none.Parse().Describe();
  for (const Config::Entry &e : Config::Table()) {
    if (free_form.count(e.name)) continue;
    for (const char *garbage : {"garbage!", "-5x", "1 2"}) {
      const Config c = ParseWith(e.name, garbage);
      ASSERT_EQ(c.warnings.size(), 1u) << e.name << "=" << garbage;
      EXPECT_NE(c.warnings[0].find(e.name), std::string::npos) << c.warnings[0];
      EXPECT_NE(c.warnings[0].find(garbage), std::string::npos) << c.warnings[0];
      EXPECT_EQ(c.Describe(), defaults) << e.name << "=" << garbage;
    }
  }
}

TEST(Config, LogLevelNames) {
  EXPECT_STREQ(infiniccl::LogLevelName(LogLevel::kNone), "NONE");
  EXPECT_STREQ(infiniccl::LogLevelName(LogLevel::kVersion), "VERSION");
  EXPECT_STREQ(infiniccl::LogLevelName(LogLevel::kWarn), "WARN");
  EXPECT_STREQ(infiniccl::LogLevelName(LogLevel::kInfo), "INFO");
  EXPECT_STREQ(infiniccl::LogLevelName(LogLevel::kTrace), "TRACE");
}

// Table() lists exactly the variables Parse reads, each once, documented,
// and with the default that Parse resolves to when the variable is unset.
TEST(Config, TableCoversEveryVariableParseReads) {
  FakeEnv env;
  const Config defaults = env.Parse();
  std::set<std::string> names;
  for (const Config::Entry &e : Config::Table()) {
    ASSERT_NE(e.name, nullptr);
    ASSERT_NE(e.default_value, nullptr);
    ASSERT_NE(e.doc, nullptr);
    EXPECT_TRUE(names.insert(e.name).second) << "duplicate " << e.name;
    EXPECT_EQ(std::string(e.name).rfind("INFINICCL_", 0), 0u) << e.name;
    EXPECT_GT(std::string(e.doc).size(), 10u) << e.name;
  }
  EXPECT_EQ(names, env.asked);

  // Each documented default, when set explicitly, parses to the unset
  // default without warnings.
  const std::vector<std::string> unset = defaults.Describe();
  for (const Config::Entry &e : Config::Table()) {
    FakeEnv one;
    one.vars[e.name] = e.default_value;
    const Config c = one.Parse();
    EXPECT_TRUE(c.warnings.empty()) << e.name << "=" << e.default_value;
    EXPECT_EQ(c.Describe(), unset) << e.name << "=" << e.default_value;
  }
  // Describe() has one line per table entry, in table order.
  ASSERT_EQ(unset.size(), Config::Table().size());
  for (size_t i = 0; i < unset.size(); ++i) {
    EXPECT_EQ(unset[i].rfind(std::string(Config::Table()[i].name) + "=", 0), 0u)
        << unset[i];
  }
}

TEST(Config, FromEnvironmentReadsGetenv) {
  ASSERT_EQ(setenv("INFINICCL_DEBUG", "trace", 1), 0);
  ASSERT_EQ(setenv("INFINICCL_ABORT_ON_ERROR", "on", 1), 0);
  const Config c = Config::FromEnvironment();
  unsetenv("INFINICCL_DEBUG");
  unsetenv("INFINICCL_ABORT_ON_ERROR");
  EXPECT_EQ(c.log_level, LogLevel::kTrace);
  EXPECT_TRUE(c.abort_on_error);
}

}  // namespace

TEST(Config, DebugSubsys) {
  using infiniccl::LogSubsysNames;
  EXPECT_EQ(ParseWith("INFINICCL_DEBUG_SUBSYS", "INIT,COLL").log_subsys,
            infiniccl::kSubsysInit | infiniccl::kSubsysColl);
  EXPECT_EQ(LogSubsysNames(ParseWith("INFINICCL_DEBUG_SUBSYS", "coll,init").log_subsys),
            "INIT,COLL");
  EXPECT_EQ(ParseWith("INFINICCL_DEBUG_SUBSYS", "^CCL").log_subsys,
            infiniccl::kSubsysAll & ~infiniccl::kSubsysCcl);
  EXPECT_EQ(ParseWith("INFINICCL_DEBUG_SUBSYS", "all").log_subsys, infiniccl::kSubsysAll);
  const Config bad = ParseWith("INFINICCL_DEBUG_SUBSYS", "INIT,NOPE");
  EXPECT_EQ(bad.log_subsys, infiniccl::kSubsysAll);
  ASSERT_EQ(bad.warnings.size(), 1u);
  EXPECT_NE(bad.warnings[0].find("NOPE"), std::string::npos);
}

TEST(Config, DebugGivenOrNot) {
  EXPECT_TRUE(ParseWith("INFINICCL_DEBUG", "WARN").log_level_set);
  EXPECT_EQ(ParseWith("INFINICCL_DEBUG", "WARN").Describe()[0], "INFINICCL_DEBUG=WARN");
  EXPECT_FALSE(ParseWith("INFINICCL_DEBUG", "").log_level_set);
  EXPECT_TRUE(ParseWith("INFINICCL_DEBUG", "").warnings.empty());
  EXPECT_FALSE(ParseWith("INFINICCL_DEBUG", "loud").log_level_set);
}

// One size parser for the library and infiniccl-bench.
TEST(Config, ParseBytes) {
  size_t b = 0;
  for (const auto &[text, want] : std::map<std::string, size_t>{
           {"0", 0}, {"8", 8}, {"8B", 8}, {"1K", 1024}, {"1k", 1024}, {"64KiB", 65536},
           {"4M", 4u << 20}, {"4MB", 4u << 20}, {"1G", size_t{1} << 30}}) {
    EXPECT_TRUE(infiniccl::ParseBytes(text.c_str(), &b)) << text;
    EXPECT_EQ(b, want) << text;
  }
  for (const char *bad : {"", "K", "-1", "1X", "1 K", "99999999999999999999", "17179869184G"})
    EXPECT_FALSE(infiniccl::ParseBytes(bad, &b)) << bad;
}

TEST(Config, WatchdogTimeout) {
  EXPECT_EQ(ParseWith("INFINICCL_TIMEOUT_SEC", "0").timeout_sec, 0);
  EXPECT_EQ(ParseWith("INFINICCL_TIMEOUT_SEC", "3").timeout_sec, 3);
  const Config bad = ParseWith("INFINICCL_TIMEOUT_SEC", "-1");
  EXPECT_EQ(bad.timeout_sec, 1800);
  ASSERT_EQ(bad.warnings.size(), 1u);
  FakeEnv none;
  EXPECT_EQ(none.Parse().timeout_sec, 1800);
  // An integer too large for the range is said to be out of range, with the
  // range; a word is still "not a number".
  for (const char *big : {"2147483648", "1073741825", "99999999999999999999999"}) {
    const Config huge = ParseWith("INFINICCL_TIMEOUT_SEC", big);
    EXPECT_EQ(huge.timeout_sec, 1800);
    ASSERT_EQ(huge.warnings.size(), 1u);
    EXPECT_NE(huge.warnings[0].find("out of range (0 to 1073741824 seconds"),
              std::string::npos)
        << huge.warnings[0];
  }
  const Config word = ParseWith("INFINICCL_TIMEOUT_SEC", "soon");
  ASSERT_EQ(word.warnings.size(), 1u);
  EXPECT_NE(word.warnings[0].find("not a non-negative number"), std::string::npos);
}
