// The stand-in CCLs' collectives over a Clique (standin.h): every rank's
// contribution is exchanged, and each rank computes its own result in rank
// order. Buffers are host memory (the stand-in runtimes' "device" memory);
// each call completes before it returns, as if its stream were synchronised.
#pragma once

#include "standin.h"

namespace standin {

// Each returns false when the exchange failed (timeout, I/O) or the ranks
// disagree on the sizes.
inline bool CclAllReduce(Clique &c, const void *s, void *r, size_t n, Elem e, Op op) {
  const size_t bytes = n * ElemSize(e);
  std::vector<std::vector<char>> all;
  if (!c.Exchange(s, bytes, &all)) return false;
  for (auto &v : all)
    if (v.size() != bytes) return false;
  std::vector<char> acc = all[0];
  for (int q = 1; q < c.size(); ++q) ReduceInto(e, op, acc.data(), all[q].data(), n);
  if (bytes) std::memcpy(r, acc.data(), bytes);
  return true;
}

inline bool CclReduce(Clique &c, const void *s, void *r, size_t n, Elem e, Op op, int root) {
  const size_t bytes = n * ElemSize(e);
  std::vector<std::vector<char>> all;
  if (!c.Exchange(s, bytes, &all)) return false;
  for (auto &v : all)
    if (v.size() != bytes) return false;
  if (c.rank() != root) return true;
  std::vector<char> acc = all[0];
  for (int q = 1; q < c.size(); ++q) ReduceInto(e, op, acc.data(), all[q].data(), n);
  if (bytes) std::memcpy(r, acc.data(), bytes);
  return true;
}

inline bool CclBroadcast(Clique &c, const void *s, void *r, size_t n, Elem e, int root) {
  const size_t bytes = n * ElemSize(e);
  const bool me = c.rank() == root;
  std::vector<std::vector<char>> all;
  if (!c.Exchange(me ? s : nullptr, me ? bytes : 0, &all)) return false;
  if (all[root].size() != bytes) return false;
  if (bytes) std::memcpy(r, all[root].data(), bytes);
  return true;
}

inline bool CclAllGather(Clique &c, const void *s, void *r, size_t n, Elem e) {
  const size_t bytes = n * ElemSize(e);
  std::vector<std::vector<char>> all;
  if (!c.Exchange(s, bytes, &all)) return false;
  for (int q = 0; q < c.size(); ++q) {
    if (all[q].size() != bytes) return false;
    if (bytes) std::memcpy(static_cast<char *>(r) + q * bytes, all[q].data(), bytes);
  }
  return true;
}

// `n`: elements received per rank.
inline bool CclReduceScatter(Clique &c, const void *s, void *r, size_t n, Elem e, Op op) {
  const size_t block = n * ElemSize(e);
  std::vector<std::vector<char>> all;
  if (!c.Exchange(s, block * c.size(), &all)) return false;
  for (auto &v : all)
    if (v.size() != block * c.size()) return false;
  std::vector<char> acc(all[0].begin() + c.rank() * block,
                        all[0].begin() + (c.rank() + 1) * block);
  for (int q = 1; q < c.size(); ++q)
    ReduceInto(e, op, acc.data(), all[q].data() + c.rank() * block, n);
  if (block) std::memcpy(r, acc.data(), block);
  return true;
}

}  // namespace standin
