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

}  // namespace infiniccl
