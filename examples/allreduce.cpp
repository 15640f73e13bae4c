// AllReduce: every rank contributes `count` floats and every rank receives
// their element-wise sum.
#include "example_util.h"

static bool Run(example::Context &ctx, size_t count) {
  std::vector<float> send = example::Values(ctx.rank, count), recv(count, -1.0f);
  std::vector<float> expected(count, 0.0f);
  for (int r = 0; r < ctx.nranks; ++r)
    for (size_t i = 0; i < count; ++i) expected[i] += example::Value(r, i);
  auto call = [&] {
    EXAMPLE_CHECK(ctx,
                  infinicclAllReduce(send.data(), recv.data(), count, infinicclFloat32,
                                     infinicclSum, ctx.comm, nullptr));
  };
  return example::Check(ctx, "AllReduce(sum)", count, call, recv, expected,
                        count * sizeof(float), example::AllReduceFactor(ctx.nranks));
}

int main(int argc, char **argv) {
  return example::Main(&argc, &argv, Run);
}
