// Gather: each rank's `count` floats land on the root (rank 0), rank r's at
// offset r*count. Only the root's receive buffer is written.
#include "example_util.h"

static bool Run(example::Context &ctx, size_t count) {
  const int root = 0;
  const size_t total = count * static_cast<size_t>(ctx.nranks);
  std::vector<float> send = example::Values(ctx.rank, count), recv(total, -1.0f);
  auto call = [&] {
    EXAMPLE_CHECK(ctx, infinicclGather(send.data(), recv.data(), count, infinicclFloat32,
                                       root, ctx.comm, nullptr));
  };
  const bool at_root = ctx.rank == root;  // the only buffer written
  return example::Check(ctx, "Gather(root=0)", count, call, recv,
                        example::Blocks(ctx.nranks, count), total * sizeof(float),
                        example::PartsFactor(ctx.nranks), at_root);
}

int main(int argc, char **argv) {
  return example::Main(&argc, &argv, Run);
}
