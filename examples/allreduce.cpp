// AllReduce: every rank contributes `count` floats and every rank receives
// their element-wise sum.
#include "example_util.h"

static bool Run(example::Context &ctx, size_t count) {
  std::vector<float> send(count), recv(count, -1.0f), expected(count, 0.0f);
  for (size_t i = 0; i < count; ++i) {
    send[i] = example::Value(ctx.rank, i);
    for (int r = 0; r < ctx.nranks; ++r) expected[i] += example::Value(r, i);
  }
  auto call = [&] {
    EXAMPLE_CHECK(ctx,
                  infinicclAllReduce(send.data(), recv.data(), count, infinicclFloat32,
                                     infinicclSum, ctx.comm, nullptr));
  };
  call();
  const bool ok = example::AllRanks(ctx, example::CountWrong(recv.data(), expected) == 0);
  const double seconds = example::TimePerCall(ctx, call);
  example::Report(ctx, "AllReduce(sum)", count, ok, recv.data(), expected, seconds,
                  static_cast<double>(count * sizeof(float)),
                  example::AllReduceFactor(ctx.nranks));
  return ok;
}

int main(int argc, char **argv) {
  return example::Main(&argc, &argv, Run);
}
