// Bcast: the in-place broadcast of one buffer from the root (rank 0 here);
// the other ranks' contents are overwritten.
#include "example_util.h"

static bool Run(example::Context &ctx, size_t count) {
  const int root = 0;
  std::vector<float> buff =
      ctx.rank == root ? example::Values(root, count) : std::vector<float>(count, -1.0f);
  auto call = [&] {
    EXAMPLE_CHECK(ctx, infinicclBcast(buff.data(), count, infinicclFloat32, root,
                                      ctx.comm, nullptr));
  };
  return example::Check(ctx, "Bcast(root=0)", count, call, buff,
                        example::Values(root, count), count * sizeof(float), 1.0);
}

int main(int argc, char **argv) {
  return example::Main(&argc, &argv, Run);
}
