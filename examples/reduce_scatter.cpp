// ReduceScatter: each rank contributes nranks blocks of `count` floats; rank
// r receives the element-wise sum over ranks of block r.
#include "example_util.h"

static bool Run(example::Context &ctx, size_t count) {
  const size_t total = count * static_cast<size_t>(ctx.nranks);
  const size_t mine = static_cast<size_t>(ctx.rank) * count;
  std::vector<float> send = example::Values(ctx.rank, total), recv(count, -1.0f);
  std::vector<float> expected(count, 0.0f);
  for (int r = 0; r < ctx.nranks; ++r)
    for (size_t i = 0; i < count; ++i) expected[i] += example::Value(r, mine + i);
  auto call = [&] {
    EXAMPLE_CHECK(
        ctx, infinicclReduceScatter(send.data(), recv.data(), count, infinicclFloat32,
                                    infinicclSum, ctx.comm, nullptr));
  };
  return example::Check(ctx, "ReduceScatter(sum)", count, call, recv, expected,
                        total * sizeof(float), example::PartsFactor(ctx.nranks));
}

int main(int argc, char **argv) {
  return example::Main(&argc, &argv, Run);
}
