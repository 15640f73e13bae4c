// Scatter: the root (rank 0) holds nranks blocks of `count` floats; rank r
// receives block r.
#include "example_util.h"

static bool Run(example::Context &ctx, size_t count) {
  const int root = 0;
  const size_t total = count * static_cast<size_t>(ctx.nranks);
  std::vector<float> send(total, -1.0f), recv(count, -1.0f), expected(count);
  if (ctx.rank == root)
    for (int r = 0; r < ctx.nranks; ++r)
      for (size_t i = 0; i < count; ++i) send[r * count + i] = example::Value(r, i);
  for (size_t i = 0; i < count; ++i) expected[i] = example::Value(ctx.rank, i);
  auto call = [&] {
    EXAMPLE_CHECK(ctx, infinicclScatter(send.data(), recv.data(), count, infinicclFloat32,
                                        root, ctx.comm, nullptr));
  };
  call();
  const bool ok = example::AllRanks(ctx, example::CountWrong(recv.data(), expected) == 0);
  const double seconds = example::TimePerCall(ctx, call);
  example::Report(ctx, "Scatter(root=0)", count, ok, recv.data(), expected, seconds,
                  static_cast<double>(total * sizeof(float)),
                  example::PartsFactor(ctx.nranks));
  return ok;
}

int main(int argc, char **argv) {
  return example::Main(&argc, &argv, Run);
}
