#include "validate.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace bench {
namespace {

// Reductions see values with period kPeriod in (rank + i).
constexpr size_t kSumPeriod = 7;
constexpr size_t kProdPeriod = 4;

bool IsFloating(const DType &t) {
  return t.kind == Kind::kFloat || t.kind == Kind::kHalf || t.kind == Kind::kBFloat;
}

// The reduction over ranks of InputValue(., i), by i % period, computed in
// double (exact for these values) and rounded to the type once.
std::vector<double> ReducedTable(const Expectation &e, size_t period) {
  std::vector<double> table(period);
  for (size_t k = 0; k < period; ++k) {
    double acc = InputValue(e, 0, k);
    for (int r = 1; r < e.nranks; ++r) {
      const double v = InputValue(e, r, k);
      switch (e.op) {
        case infinicclProd: acc *= v; break;
        case infinicclMax: acc = v > acc ? v : acc; break;
        case infinicclMin: acc = v < acc ? v : acc; break;
        // Inputs 1..7: exact as int64 bits.
        case infinicclBand: acc = static_cast<double>(int64_t(acc) & int64_t(v)); break;
        case infinicclBor: acc = static_cast<double>(int64_t(acc) | int64_t(v)); break;
        case infinicclBxor: acc = static_cast<double>(int64_t(acc) ^ int64_t(v)); break;
        default: acc += v; break;
      }
    }
    if (e.op == infinicclAvg) {
      acc /= e.nranks;
      if (!IsFloating(*e.dtype)) acc = std::trunc(acc);
    }
    table[k] = RoundTo(*e.dtype, acc);
  }
  return table;
}

}  // namespace

double InputValue(const Expectation &e, int rank, size_t i) {
  const size_t r = static_cast<size_t>(rank);
  if (!Info(e.coll).has_op) return static_cast<double>((29 * r + i) % 113 + 1);
  if (e.op == infinicclProd) return (r + i) % kProdPeriod == 0 ? 2.0 : 1.0;
  return static_cast<double>((r + i) % kSumPeriod + 1);
}

void FillInput(const Expectation &e, void *p, size_t count) {
  for (size_t i = 0; i < count; ++i) Store(*e.dtype, p, i, InputValue(e, e.rank, i));
}

void Poison(void *p, size_t bytes) {
  if (bytes) std::memset(p, 0xff, bytes);
}

size_t CountWrong(const Expectation &e, const void *result) {
  const Layout &l = *e.layout;
  if (!l.recv_used) return 0;
  const DType &t = *e.dtype;
  const size_t c = l.count, n = l.recv_count;
  const size_t me = static_cast<size_t>(e.rank);
  size_t wrong = 0;
  auto check = [&](size_t j, double expected) {
    if (Load(t, result, j) != expected) ++wrong;
  };
  if (Info(e.coll).has_op) {
    const size_t period = e.op == infinicclProd ? kProdPeriod : kSumPeriod;
    const std::vector<double> table = ReducedTable(e, period);
    // ReduceScatter: this rank's block starts at element rank*count.
    const size_t first = e.coll == Collective::kReduceScatter ? me * c : 0;
    for (size_t j = 0; j < n; ++j) check(j, table[(first + j) % period]);
    return wrong;
  }
  auto value = [&](int rank, size_t i) { return RoundTo(t, InputValue(e, rank, i)); };
  switch (e.coll) {
    case Collective::kBroadcast:
      for (size_t j = 0; j < n; ++j) check(j, value(e.root, j));
      break;
    case Collective::kAllGather:
    case Collective::kGather:
      for (size_t j = 0; j < n; ++j) check(j, value(static_cast<int>(j / c), j % c));
      break;
    case Collective::kScatter:
      for (size_t j = 0; j < n; ++j) check(j, value(e.root, me * c + j));
      break;
    case Collective::kAllToAll:
      for (size_t j = 0; j < n; ++j)
        check(j, value(static_cast<int>(j / c), me * c + j % c));
      break;
    case Collective::kSendRecv:
      for (size_t j = 0; j < n; ++j)
        check(j, value((e.rank + e.nranks - 1) % e.nranks, j));
      break;
    default:  // copies: the rank's own input
      for (size_t j = 0; j < n; ++j) check(j, value(e.rank, j));
      break;
  }
  return wrong;
}

}  // namespace bench
