// Scatter: the root (rank 0) holds nranks blocks of `count` floats; rank r
// receives block r.
#include "example_util.h"

static bool Run(example::Context &ctx, size_t count) {
  const int root = 0;
  const size_t total = count * static_cast<size_t>(ctx.nranks);
  // Only the root's send buffer is read.
  std::vector<float> send = ctx.rank == root ? example::Blocks(ctx.nranks, count)
                                             : std::vector<float>(total, -1.0f);
  std::vector<float> recv(count, -1.0f);
  auto call = [&] {
    EXAMPLE_CHECK(ctx, infinicclScatter(send.data(), recv.data(), count, infinicclFloat32,
                                        root, ctx.comm, nullptr));
  };
  return example::Check(ctx, "Scatter(root=0)", count, call, recv,
                        example::Values(ctx.rank, count), total * sizeof(float),
                        example::PartsFactor(ctx.nranks));
}

int main(int argc, char **argv) {
  return example::Main(&argc, &argv, Run);
}
