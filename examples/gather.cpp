// Gather: each rank's `count` floats land on the root (rank 0), rank r's at
// offset r*count. Only the root's receive buffer is written.
#include "example_util.h"

static bool Run(example::Context &ctx, size_t count) {
  const int root = 0;
  const size_t total = count * static_cast<size_t>(ctx.nranks);
  std::vector<float> send(count), recv(total, -1.0f), expected(total);
  for (size_t i = 0; i < count; ++i) send[i] = example::Value(ctx.rank, i);
  for (int r = 0; r < ctx.nranks; ++r)
    for (size_t i = 0; i < count; ++i) expected[r * count + i] = example::Value(r, i);
  auto call = [&] {
    EXAMPLE_CHECK(ctx, infinicclGather(send.data(), recv.data(), count, infinicclFloat32,
                                       root, ctx.comm, nullptr));
  };
  call();
  const bool mine_ok =
      ctx.rank != root || example::CountWrong(recv.data(), expected) == 0;
  const bool ok = example::AllRanks(ctx, mine_ok);
  const double seconds = example::TimePerCall(ctx, call);
  example::Report(ctx, "Gather(root=0)", count, ok, recv.data(), expected, seconds,
                  static_cast<double>(total * sizeof(float)),
                  example::PartsFactor(ctx.nranks));
  return ok;
}

int main(int argc, char **argv) {
  return example::Main(&argc, &argv, Run);
}
