// docs/CONFIG.md stays true to the code: its table is Config::Table()'s as
// rendered by Config::MarkdownTable(), every variable has a row with its
// default, and the doc names no INFINICCL_ variable the code does not read.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "core/config.h"

namespace {

std::string ReadDoc() {
  std::ifstream in(INFINICCL_CONFIG_DOC);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(ConfigDoc, EveryVariableHasARowWithItsDefault) {
  const std::string doc = ReadDoc();
  ASSERT_FALSE(doc.empty()) << INFINICCL_CONFIG_DOC;
  for (const auto &e : infiniccl::Config::Table()) {
    const std::string row = std::string("| `") + e.name + "` |";
    const size_t at = doc.find(row);
    ASSERT_NE(at, std::string::npos) << e.name << " has no row in docs/CONFIG.md";
    const std::string line = doc.substr(at, doc.find('\n', at) - at);
    if (*e.default_value != '\0') {
      EXPECT_NE(line.find(std::string("`") + e.default_value + "`"), std::string::npos)
          << e.name << ": default '" << e.default_value << "' not in: " << line;
    }
  }
}

// The table is generated (infiniccl-info --markdown) and pasted unedited.
TEST(ConfigDoc, TableIsTheGeneratedOne) {
  const std::string table = infiniccl::Config::MarkdownTable();
  EXPECT_NE(ReadDoc().find(table), std::string::npos)
      << "docs/CONFIG.md's table is not Config::Table()'s; replace it with the output of "
         "infiniccl-info --markdown:\n"
      << table;
}

TEST(ConfigDoc, DocNamesOnlyVariablesTheCodeReads) {
  std::set<std::string> known;
  for (const auto &e : infiniccl::Config::Table()) known.insert(e.name);
  const std::string doc = ReadDoc();
  const std::regex row(R"(\| `(INFINICCL_[A-Z_]+)` \|)");
  int rows = 0;
  for (auto it = std::sregex_iterator(doc.begin(), doc.end(), row); it != std::sregex_iterator();
       ++it, ++rows) {
    EXPECT_TRUE(known.count((*it)[1].str())) << (*it)[1].str() << " is documented but not read";
  }
  EXPECT_EQ(rows, static_cast<int>(known.size()));
}

}  // namespace
