// Broadcast: the root's send buffer lands in every rank's receive buffer.
// The last rank is the root, so rank 0 (which prints) is a receiver.
#include "example_util.h"

static bool Run(example::Context &ctx, size_t count) {
  const int root = ctx.nranks - 1;
  std::vector<float> send(count), recv(count, -1.0f), expected(count);
  for (size_t i = 0; i < count; ++i) {
    send[i] = example::Value(ctx.rank, i);
    expected[i] = example::Value(root, i);
  }
  auto call = [&] {
    EXAMPLE_CHECK(ctx, infinicclBroadcast(send.data(), recv.data(), count,
                                          infinicclFloat32, root, ctx.comm, nullptr));
  };
  call();
  const bool ok = example::AllRanks(ctx, example::CountWrong(recv.data(), expected) == 0);
  const double seconds = example::TimePerCall(ctx, call);
  example::Report(ctx, "Broadcast(root=last)", count, ok, recv.data(), expected, seconds,
                  static_cast<double>(count * sizeof(float)), 1.0);
  return ok;
}

int main(int argc, char **argv) {
  return example::Main(&argc, &argv, Run);
}
