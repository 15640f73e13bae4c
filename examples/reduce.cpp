// Reduce: the element-wise maximum over ranks lands on the root (rank 0);
// the other ranks' receive buffers are not written.
#include <algorithm>

#include "example_util.h"

static bool Run(example::Context &ctx, size_t count) {
  const int root = 0;
  std::vector<float> send(count), recv(count, -1.0f), expected(count, 0.0f);
  for (size_t i = 0; i < count; ++i) {
    send[i] = example::Value(ctx.rank, i);
    for (int r = 0; r < ctx.nranks; ++r)
      expected[i] = std::max(expected[i], example::Value(r, i));
  }
  auto call = [&] {
    EXAMPLE_CHECK(ctx, infinicclReduce(send.data(), recv.data(), count, infinicclFloat32,
                                       infinicclMax, root, ctx.comm, nullptr));
  };
  call();
  const bool mine_ok =
      ctx.rank != root || example::CountWrong(recv.data(), expected) == 0;
  const bool ok = example::AllRanks(ctx, mine_ok);
  const double seconds = example::TimePerCall(ctx, call);
  example::Report(ctx, "Reduce(max, root=0)", count, ok, recv.data(), expected, seconds,
                  static_cast<double>(count * sizeof(float)), 1.0);
  return ok;
}

int main(int argc, char **argv) {
  return example::Main(&argc, &argv, Run);
}
