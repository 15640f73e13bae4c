// ReduceScatter: each rank contributes nranks blocks of `count` floats; rank
// r receives the element-wise sum over ranks of block r.
#include "example_util.h"

static bool Run(example::Context &ctx, size_t count) {
  const size_t total = count * static_cast<size_t>(ctx.nranks);
  const size_t mine = static_cast<size_t>(ctx.rank) * count;
  std::vector<float> send(total), recv(count, -1.0f), expected(count, 0.0f);
  for (size_t i = 0; i < total; ++i) send[i] = example::Value(ctx.rank, i);
  for (size_t i = 0; i < count; ++i)
    for (int r = 0; r < ctx.nranks; ++r) expected[i] += example::Value(r, mine + i);
  auto call = [&] {
    EXAMPLE_CHECK(
        ctx, infinicclReduceScatter(send.data(), recv.data(), count, infinicclFloat32,
                                    infinicclSum, ctx.comm, nullptr));
  };
  call();
  const bool ok = example::AllRanks(ctx, example::CountWrong(recv.data(), expected) == 0);
  const double seconds = example::TimePerCall(ctx, call);
  example::Report(ctx, "ReduceScatter(sum)", count, ok, recv.data(), expected, seconds,
                  static_cast<double>(total * sizeof(float)),
                  example::PartsFactor(ctx.nranks));
  return ok;
}

int main(int argc, char **argv) {
  return example::Main(&argc, &argv, Run);
}
