// AllToAll: rank s sends its block p (of `count` floats) to rank p, which
// stores it as its block s.
#include "example_util.h"

static bool Run(example::Context &ctx, size_t count) {
  const size_t total = count * static_cast<size_t>(ctx.nranks);
  const size_t mine = static_cast<size_t>(ctx.rank) * count;
  std::vector<float> send = example::Values(ctx.rank, total), recv(total, -1.0f);
  std::vector<float> expected;  // block s: rank s's block `rank`
  for (int s = 0; s < ctx.nranks; ++s) {
    const std::vector<float> block = example::Values(s, count, mine);
    expected.insert(expected.end(), block.begin(), block.end());
  }
  auto call = [&] {
    EXAMPLE_CHECK(ctx, infinicclAllToAll(send.data(), recv.data(), count,
                                         infinicclFloat32, ctx.comm, nullptr));
  };
  return example::Check(ctx, "AllToAll", count, call, recv, expected,
                        total * sizeof(float), example::PartsFactor(ctx.nranks));
}

int main(int argc, char **argv) {
  return example::Main(&argc, &argv, Run);
}
