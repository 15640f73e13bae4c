// AllGather: each rank contributes `count` floats; every rank receives all
// contributions, rank r's at offset r*count.
#include "example_util.h"

static bool Run(example::Context &ctx, size_t count) {
  const size_t total = count * static_cast<size_t>(ctx.nranks);
  std::vector<float> send = example::Values(ctx.rank, count), recv(total, -1.0f);
  auto call = [&] {
    EXAMPLE_CHECK(ctx, infinicclAllGather(send.data(), recv.data(), count,
                                          infinicclFloat32, ctx.comm, nullptr));
  };
  return example::Check(ctx, "AllGather", count, call, recv,
                        example::Blocks(ctx.nranks, count), total * sizeof(float),
                        example::PartsFactor(ctx.nranks));
}

int main(int argc, char **argv) {
  return example::Main(&argc, &argv, Run);
}
