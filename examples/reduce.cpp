// Reduce: the element-wise maximum over ranks lands on the root (rank 0);
// the other ranks' receive buffers are not written.
#include <algorithm>

#include "example_util.h"

static bool Run(example::Context &ctx, size_t count) {
  const int root = 0;
  std::vector<float> send = example::Values(ctx.rank, count), recv(count, -1.0f);
  std::vector<float> expected(count, 0.0f);
  for (int r = 0; r < ctx.nranks; ++r)
    for (size_t i = 0; i < count; ++i)
      expected[i] = std::max(expected[i], example::Value(r, i));
  auto call = [&] {
    EXAMPLE_CHECK(ctx, infinicclReduce(send.data(), recv.data(), count, infinicclFloat32,
                                       infinicclMax, root, ctx.comm, nullptr));
  };
  const bool at_root = ctx.rank == root;  // the only buffer written
  return example::Check(ctx, "Reduce(max, root=0)", count, call, recv, expected,
                        count * sizeof(float), 1.0, at_root);
}

int main(int argc, char **argv) {
  return example::Main(&argc, &argv, Run);
}
