// RankList: ranks for a message, "0-2,5,7,8": a run of three or more
// consecutive ranks as a range, so the message stays short at scale; at most
// `limit` entries (a number or a range), then " ... (N more)" for the ranks
// left out; "none" for no ranks. `ranks` ascending.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace infiniccl {

inline std::string RankList(const std::vector<int> &ranks, size_t limit = 32) {
  if (ranks.empty()) return "none";
  std::string out;
  size_t i = 0;
  for (size_t entries = 0; i < ranks.size() && entries < limit; ++entries) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(ranks[i]);
    if (j > i) {
      // Appended piecewise: `const char * + std::string&&` trips GCC 12's
      // -Wrestrict false positive at -O2.
      out += j == i + 1 ? ',' : '-';
      out += std::to_string(ranks[j]);
    }
    i = j + 1;
  }
  if (i < ranks.size()) {
    out += " ... (";
    out += std::to_string(ranks.size() - i);
    out += " more)";
  }
  return out;
}

// "rank 0,2 count=1024, rank 1 count=2048": the ranks grouped by their value
// (`values`, one per rank), in the order values first appear; at most
// `max_groups` groups, then ", ...". `names`, when given: the rank each
// index is in the message (ascending as the indices are).
inline std::string RanksByValue(const std::vector<std::string> &values,
                                size_t max_groups = 8, const std::vector<int> *names = nullptr) {
  std::vector<const std::string *> seen;
  std::vector<std::vector<int>> groups;
  for (size_t r = 0; r < values.size(); ++r) {
    size_t g = 0;
    while (g < seen.size() && *seen[g] != values[r]) ++g;
    if (g == seen.size()) {
      seen.push_back(&values[r]);
      groups.emplace_back();
    }
    groups[g].push_back(names != nullptr ? (*names)[r] : static_cast<int>(r));
  }
  std::string out;
  for (size_t g = 0; g < seen.size() && g < max_groups; ++g) {
    out += g == 0 ? "rank " : ", rank ";
    out += RankList(groups[g]);
    out += ' ';
    out += *seen[g];
  }
  if (seen.size() > max_groups) out += ", ...";
  return out;
}

}  // namespace infiniccl
