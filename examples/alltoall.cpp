// AllToAll: rank s sends its block p (of `count` floats) to rank p, which
// stores it as its block s.
#include "example_util.h"

static bool Run(example::Context &ctx, size_t count) {
  const size_t total = count * static_cast<size_t>(ctx.nranks);
  const size_t mine = static_cast<size_t>(ctx.rank) * count;
  std::vector<float> send(total), recv(total, -1.0f), expected(total);
  for (size_t i = 0; i < total; ++i) send[i] = example::Value(ctx.rank, i);
  for (int s = 0; s < ctx.nranks; ++s)
    for (size_t i = 0; i < count; ++i)
      expected[s * count + i] = example::Value(s, mine + i);
  auto call = [&] {
    EXAMPLE_CHECK(ctx, infinicclAllToAll(send.data(), recv.data(), count,
                                         infinicclFloat32, ctx.comm, nullptr));
  };
  call();
  const bool ok = example::AllRanks(ctx, example::CountWrong(recv.data(), expected) == 0);
  const double seconds = example::TimePerCall(ctx, call);
  example::Report(ctx, "AllToAll", count, ok, recv.data(), expected, seconds,
                  static_cast<double>(total * sizeof(float)),
                  example::PartsFactor(ctx.nranks));
  return ok;
}

int main(int argc, char **argv) {
  return example::Main(&argc, &argv, Run);
}
