// Config::Parse from a map (no environment), Describe() and Table().
#include <gtest/gtest.h>

#include <algorithm>
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
// cannot use and keeps its default. INFINICCL_SOCKET_IFNAME's names are
// checked against the host's interfaces when an id is made.
TEST(Config, GarbageInAnyVariableWarnsAndKeepsTheDefault) {
  const std::set<std::string> free_form = {"INFINICCL_DEBUG_FILE", "INFINICCL_SOCKET_IFNAME"};
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
  // BytesText is its inverse, in the shortest spelling.
  for (const auto &[bytes, text] : std::map<size_t, std::string>{
           {0, "0"}, {1000, "1000"}, {65536, "64K"}, {16u << 20, "16M"}, {size_t{3} << 30, "3G"},
           {(size_t{1} << 20) + 1024, "1025K"}}) {
    EXPECT_EQ(infiniccl::BytesText(bytes), text);
    EXPECT_TRUE(infiniccl::ParseBytes(text.c_str(), &b) && b == bytes) << text;
  }
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

// The declarations of Config::Table(), checked against values written out
// here, not derived from the table: a wrong default, range, spelling or
// field in a declaration fails one of these.
namespace {

using infiniccl::Tristate;

const Config::Entry &EntryNamed(const std::string &name) {
  for (const Config::Entry &e : Config::Table())
    if (name == e.name) return e;
  ADD_FAILURE() << name << " is not in Config::Table()";
  return Config::Table().front();
}

TEST(ConfigTable, DefaultConstructedIsTheUnsetEnvironment) {
  const Config made;
  EXPECT_EQ(made.Describe(), FakeEnv().Parse().Describe());
  EXPECT_TRUE(made.warnings.empty());
  EXPECT_EQ(made.log_level, LogLevel::kWarn);
  EXPECT_FALSE(made.log_level_set);
  EXPECT_EQ(made.log_subsys, infiniccl::kSubsysAll);
  EXPECT_FALSE(made.abort_on_error || made.check || made.strict_binding);
  EXPECT_EQ(made.device, "auto");
  EXPECT_EQ(made.local_rank, "");
  EXPECT_EQ(made.staging_pinned, Tristate::kAuto);
  EXPECT_EQ(made.staging_cache_bytes, size_t{256} << 20);
  EXPECT_EQ(made.pipeline_chunk_bytes, 0u);
  EXPECT_EQ(made.host_piece_bytes, size_t{16} << 20);
  EXPECT_EQ(made.host_piece_threshold, size_t{16} << 20);
  EXPECT_EQ(made.mpi_device_direct, Tristate::kAuto);
  EXPECT_EQ(made.backend, infiniccl::BackendChoice::kAuto);
  EXPECT_EQ(made.timeout_sec, 1800);
  EXPECT_EQ(made.sim_copy_gbps, 0.0);
  EXPECT_EQ(made.sim_copy_latency_us, 0.0);
  EXPECT_EQ(made.sim_device_count, 8);
  EXPECT_TRUE(made.sim_pinned);
}

// What each setting shows for its default, as infiniccl-info prints it.
TEST(ConfigTable, EachDefaultAsShown) {
  const std::map<std::string, std::pair<std::string, std::string>> want = {
      // name: {documented default, value shown}
      {"INFINICCL_DEBUG", {"", ""}},
      {"INFINICCL_DEBUG_FILE", {"", ""}},
      {"INFINICCL_DEBUG_SUBSYS", {"ALL", "ALL"}},
      {"INFINICCL_ABORT_ON_ERROR", {"0", "0"}},
      {"INFINICCL_CHECK", {"0", "0"}},
      {"INFINICCL_DEVICE", {"auto", "auto"}},
      {"INFINICCL_LOCAL_RANK", {"", ""}},
      {"INFINICCL_STRICT_BINDING", {"0", "0"}},
      {"INFINICCL_STAGING_PINNED", {"auto", "auto"}},
      {"INFINICCL_STAGING_CACHE_BYTES", {"256M", "268435456"}},
      {"INFINICCL_PIPELINE_CHUNK_BYTES", {"auto", "auto"}},
      {"INFINICCL_HOST_PIECE_BYTES", {"16M", "16777216"}},
      {"INFINICCL_HOST_PIECE_THRESHOLD", {"16M", "16777216"}},
      {"INFINICCL_MPI_DEVICE_DIRECT", {"auto", "auto"}},
      {"INFINICCL_BACKEND", {"auto", "auto"}},
      {"INFINICCL_TIMEOUT_SEC", {"1800", "1800"}},
      {"INFINICCL_SOCKET_IFNAME", {"", ""}},
      {"INFINICCL_ASYNC", {"auto", "auto"}},
      {"INFINICCL_DEVICE_WAIT", {"auto", "auto"}},
      {"INFINICCL_SIM_COPY_LATENCY_US", {"0", "0"}},
      {"INFINICCL_SIM_COPY_GBPS", {"0", "0"}},
      {"INFINICCL_SIM_DEVICE_COUNT", {"8", "8"}},
      {"INFINICCL_SIM_PINNED", {"1", "1"}},
      {"INFINICCL_SIM_HOSTFN_SERIAL", {"1", "1"}},
      {"INFINICCL_SIM_PAGEABLE_SYNC", {"1", "1"}},
      {"INFINICCL_SIM_IMPLICIT_SYNC", {"1", "1"}},
      {"INFINICCL_SIM_STREAM_MEMOPS", {"1", "1"}},
      {"INFINICCL_SHM", {"auto", "auto"}},
      {"INFINICCL_SHM_MAX_BYTES", {"auto", "auto"}},
      {"INFINICCL_SIMD", {"auto", "auto"}},
      {"INFINICCL_HIERARCHY", {"auto", "auto"}},
      {"INFINICCL_HIERARCHY_MIN_BYTES", {"auto", "auto"}},
      {"INFINICCL_SIM_CCL", {"0", "0"}},
      {"INFINICCL_SIM_LINK_GBPS", {"0", "0"}},
      {"INFINICCL_SIM_CCL_FAIL", {"0", "0"}},
  };
  ASSERT_EQ(Config::Table().size(), want.size());
  const Config defaults;
  for (const Config::Entry &e : Config::Table()) {
    ASSERT_TRUE(want.count(e.name)) << e.name;
    EXPECT_EQ(e.default_value, want.at(e.name).first) << e.name;
    EXPECT_EQ(e.Value(defaults), want.at(e.name).second) << e.name;
  }
}

// Every value shown reads back as itself (infiniccl-info's values can be
// pasted into the environment).
TEST(ConfigTable, ShownValuesReadBack) {
  FakeEnv env;
  env.vars = {{"INFINICCL_DEBUG", "info"},
              {"INFINICCL_DEBUG_SUBSYS", "^ccl"},
              {"INFINICCL_CHECK", "yes"},
              {"INFINICCL_DEVICE", "sim"},
              {"INFINICCL_LOCAL_RANK", "3"},
              {"INFINICCL_STAGING_PINNED", "off"},
              {"INFINICCL_STAGING_CACHE_BYTES", "1G"},
              {"INFINICCL_PIPELINE_CHUNK_BYTES", "3001"},
              {"INFINICCL_MPI_DEVICE_DIRECT", "ON"},
              {"INFINICCL_BACKEND", "Mpi"},
              {"INFINICCL_SIM_COPY_GBPS", "12.5"},
              {"INFINICCL_SIM_PINNED", "false"},
              {"INFINICCL_SIMD", "avx2"},
              {"INFINICCL_HIERARCHY", "1"},
              {"INFINICCL_HIERARCHY_MIN_BYTES", "0"},
              {"INFINICCL_SIM_CCL", "on"},
              {"INFINICCL_SIM_LINK_GBPS", "100"}};
  for (const Config &c : {FakeEnv().Parse(), env.Parse()}) {
    ASSERT_TRUE(c.warnings.empty()) << c.warnings[0];
    for (const Config::Entry &e : Config::Table()) {
      const Config again = ParseWith(e.name, e.Value(c));
      EXPECT_TRUE(again.warnings.empty()) << e.name << "=" << e.Value(c);
      EXPECT_EQ(e.Value(again), e.Value(c)) << e.name;
    }
  }
}

// A number out of its range is refused with the range in the message; the
// bounds themselves are accepted. Every setting with a range is listed.
TEST(ConfigTable, NumbersOutOfRangeNameTheRange) {
  struct Case {
    const char *name, *lowest, *highest, *outside, *range;
  };
  const Case cases[] = {
      {"INFINICCL_LOCAL_RANK", "0", "1048576", "1048577", "(0 to 1048576)"},
      {"INFINICCL_STAGING_CACHE_BYTES", "4096", "16G", "4095", "(at least 4096 bytes)"},
      {"INFINICCL_PIPELINE_CHUNK_BYTES", "1", "16G", "0", "(at least 1 bytes)"},
      {"INFINICCL_HOST_PIECE_BYTES", "0", "16G", "-1", ""},
      {"INFINICCL_HOST_PIECE_THRESHOLD", "0", "16G", "-1", ""},
      {"INFINICCL_TIMEOUT_SEC", "0", "1073741824", "2147483648",
       "(0 to 1073741824 seconds)"},
      {"INFINICCL_SIM_COPY_LATENCY_US", "0", "1e6", "1000001",
       "(0 to 1000000 microseconds)"},
      {"INFINICCL_SIM_COPY_GBPS", "0", "1e9", "-0.5", "(at least 0 GB/s)"},
      {"INFINICCL_SIM_DEVICE_COUNT", "1", "1024", "1025", "(1 to 1024 devices)"},
      {"INFINICCL_SHM_MAX_BYTES", "0", "16G", "-1", ""},
      {"INFINICCL_HIERARCHY_MIN_BYTES", "0", "16G", "-1", ""},
      {"INFINICCL_SIM_LINK_GBPS", "0", "1e9", "-1", "(at least 0 GB/s)"},
  };
  std::set<std::string> listed;
  for (const Case &k : cases) {
    listed.insert(k.name);
    for (const char *ok : {k.lowest, k.highest})
      EXPECT_TRUE(ParseWith(k.name, ok).warnings.empty()) << k.name << "=" << ok;
    const Config c = ParseWith(k.name, k.outside);
    ASSERT_EQ(c.warnings.size(), 1u) << k.name << "=" << k.outside;
    EXPECT_EQ(c.Describe(), FakeEnv().Parse().Describe()) << k.name;
    const std::string want =
        *k.range ? std::string("is out of range ") + k.range : "is not";
    EXPECT_NE(c.warnings[0].find(want), std::string::npos) << c.warnings[0];
  }
  for (const Config::Entry &e : Config::Table()) {
    if (e.range.hi > 0) {
      EXPECT_TRUE(listed.count(e.name)) << e.name << " has a range";
    }
  }
  EXPECT_EQ(
      ParseWith("INFINICCL_SIM_DEVICE_COUNT", "0").warnings.at(0),
      "INFINICCL_SIM_DEVICE_COUNT='0' is out of range (1 to 1024 devices); using 8");
}

// auto|1|0 variables: every spelling, any case, to the enum; the accepted
// spellings named when refused.
TEST(ConfigTable, TristateSpellings) {
  const std::map<std::string, Tristate> spellings = {
      {"auto", Tristate::kAuto}, {"AUTO", Tristate::kAuto}, {"1", Tristate::kOn},
      {"true", Tristate::kOn},   {"Yes", Tristate::kOn},    {"ON", Tristate::kOn},
      {"0", Tristate::kOff},     {"FALSE", Tristate::kOff}, {"no", Tristate::kOff},
      {"off", Tristate::kOff}};
  const std::map<Tristate, std::string> shown = {
      {Tristate::kAuto, "auto"}, {Tristate::kOn, "1"}, {Tristate::kOff, "0"}};
  for (auto field : {&Config::staging_pinned, &Config::mpi_device_direct}) {
    const char *name = field == &Config::staging_pinned ? "INFINICCL_STAGING_PINNED"
                                                        : "INFINICCL_MPI_DEVICE_DIRECT";
    for (const auto &[text, want] : spellings) {
      const Config c = ParseWith(name, text);
      EXPECT_EQ(c.*field, want) << name << "=" << text;
      EXPECT_TRUE(c.warnings.empty()) << name << "=" << text;
      EXPECT_EQ(EntryNamed(name).Value(c), shown.at(want)) << name << "=" << text;
    }
    for (const char *bad : {"", "2", "maybe", "auto ", "-1"}) {
      const Config c = ParseWith(name, bad);
      EXPECT_EQ(c.*field, Tristate::kAuto) << name << "=" << bad;
      ASSERT_EQ(c.warnings.size(), 1u) << name << "=" << bad;
      EXPECT_NE(c.warnings[0].find("is not auto, 1 or 0"), std::string::npos)
          << c.warnings[0];
    }
  }
}

TEST(ConfigTable, ChoiceSpellings) {
  // INFINICCL_DEVICE is matched exactly, as it always was.
  EXPECT_EQ(ParseWith("INFINICCL_DEVICE", "sim").device, "sim");
  EXPECT_EQ(ParseWith("INFINICCL_DEVICE", "cpu").device, "cpu");
  for (const char *bad : {"SIM", "Cpu", "gpu", ""}) {
    const Config c = ParseWith("INFINICCL_DEVICE", bad);
    EXPECT_EQ(c.device, "auto") << bad;
    ASSERT_EQ(c.warnings.size(), 1u) << bad;
    EXPECT_NE(c.warnings[0].find("is not auto, sim or cpu; using auto"),
              std::string::npos)
        << c.warnings[0];
  }
  // INFINICCL_SIMD: one of four words, exactly.
  for (const char *level : {"auto", "avx512", "avx2", "baseline"}) {
    EXPECT_EQ(ParseWith("INFINICCL_SIMD", level).simd, level);
    EXPECT_TRUE(ParseWith("INFINICCL_SIMD", level).warnings.empty()) << level;
  }
  for (const char *bad : {"AVX2", "sse2", "avx512bw", ""}) {
    const Config c = ParseWith("INFINICCL_SIMD", bad);
    EXPECT_EQ(c.simd, "auto") << bad;
    ASSERT_EQ(c.warnings.size(), 1u) << bad;
    EXPECT_NE(c.warnings[0].find("is not auto, avx512, avx2 or baseline; using auto"),
              std::string::npos)
        << c.warnings[0];
  }
  // Booleans: "" is 0 (INFINICCL_SIM_PINNED= turns pinned memory off).
  EXPECT_FALSE(ParseWith("INFINICCL_SIM_PINNED", "").sim_pinned);
  EXPECT_TRUE(ParseWith("INFINICCL_SIM_PINNED", "").warnings.empty());
  EXPECT_NE(ParseWith("INFINICCL_CHECK", "2").warnings.at(0).find("is not 0 or 1"),
            std::string::npos);
  // The chunk: auto is 0 (the device runtime's own), shown as auto.
  EXPECT_EQ(ParseWith("INFINICCL_PIPELINE_CHUNK_BYTES", "AUTO").pipeline_chunk_bytes, 0u);
  EXPECT_EQ(ParseWith("INFINICCL_PIPELINE_CHUNK_BYTES", "64K").pipeline_chunk_bytes,
            65536u);
  // Each of the others fills its own field.
  EXPECT_EQ(ParseWith("INFINICCL_LOCAL_RANK", "7").local_rank, "7");
  EXPECT_TRUE(ParseWith("INFINICCL_STRICT_BINDING", "on").strict_binding);
  EXPECT_EQ(ParseWith("INFINICCL_SIM_DEVICE_COUNT", "3").sim_device_count, 3);
  EXPECT_EQ(ParseWith("INFINICCL_STAGING_CACHE_BYTES", "1M").staging_cache_bytes,
            size_t{1} << 20);
  EXPECT_EQ(ParseWith("INFINICCL_HOST_PIECE_BYTES", "0").host_piece_bytes, 0u);
  EXPECT_EQ(ParseWith("INFINICCL_SIM_COPY_LATENCY_US", "2.5").sim_copy_latency_us, 2.5);
  EXPECT_EQ(ParseWith("INFINICCL_HOST_PIECE_THRESHOLD", "0").host_piece_threshold, 0u);
  EXPECT_EQ(ParseWith("INFINICCL_DEBUG_FILE", "x").log_file, "x");
}

TEST(ConfigTable, MarkdownTableHasOneRowPerSetting) {
  const std::string md = Config::MarkdownTable();
  EXPECT_EQ(md.rfind("| Variable | Default | Meaning |\n|---|---|---|\n", 0), 0u);
  EXPECT_NE(md.find("| `INFINICCL_STAGING_CACHE_BYTES` | `256M` | "), std::string::npos);
  EXPECT_NE(md.find("| `INFINICCL_DEBUG` | (unset) | "), std::string::npos);
  EXPECT_EQ(std::count(md.begin(), md.end(), '\n'),
            static_cast<std::ptrdiff_t>(Config::Table().size() + 2));
}

}  // namespace
