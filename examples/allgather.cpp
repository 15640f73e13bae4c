// AllGather: each rank contributes `count` floats; every rank receives all
// contributions, rank r's at offset r*count.
#include "example_util.h"

static bool Run(example::Context &ctx, size_t count) {
  const size_t total = count * static_cast<size_t>(ctx.nranks);
  std::vector<float> send(count), recv(total, -1.0f), expected(total);
  for (size_t i = 0; i < count; ++i) send[i] = example::Value(ctx.rank, i);
  for (int r = 0; r < ctx.nranks; ++r)
    for (size_t i = 0; i < count; ++i) expected[r * count + i] = example::Value(r, i);
  auto call = [&] {
    EXAMPLE_CHECK(ctx, infinicclAllGather(send.data(), recv.data(), count,
                                          infinicclFloat32, ctx.comm, nullptr));
  };
  call();
  const bool ok = example::AllRanks(ctx, example::CountWrong(recv.data(), expected) == 0);
  const double seconds = example::TimePerCall(ctx, call);
  example::Report(ctx, "AllGather", count, ok, recv.data(), expected, seconds,
                  static_cast<double>(total * sizeof(float)),
                  example::PartsFactor(ctx.nranks));
  return ok;
}

int main(int argc, char **argv) {
  return example::Main(&argc, &argv, Run);
}
