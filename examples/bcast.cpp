// Bcast: the in-place broadcast of one buffer from the root (rank 0 here);
// the other ranks' contents are overwritten.
#include "example_util.h"

static bool Run(example::Context &ctx, size_t count) {
  const int root = 0;
  std::vector<float> buff(count), expected(count);
  auto refill = [&] {
    for (size_t i = 0; i < count; ++i)
      buff[i] = ctx.rank == root ? example::Value(root, i) : -1.0f;
  };
  for (size_t i = 0; i < count; ++i) expected[i] = example::Value(root, i);
  refill();
  auto call = [&] {
    EXAMPLE_CHECK(ctx, infinicclBcast(buff.data(), count, infinicclFloat32, root,
                                      ctx.comm, nullptr));
  };
  call();
  const bool ok = example::AllRanks(ctx, example::CountWrong(buff.data(), expected) == 0);
  const double seconds = example::TimePerCall(ctx, call);
  example::Report(ctx, "Bcast(root=0)", count, ok, buff.data(), expected, seconds,
                  static_cast<double>(count * sizeof(float)), 1.0);
  return ok;
}

int main(int argc, char **argv) {
  return example::Main(&argc, &argv, Run);
}
