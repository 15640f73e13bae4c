// A ring in which every rank sends before it receives, made safe by a group:
// inside infinicclGroupStart/infinicclGroupEnd the Send and the Recv are
// started together and both complete at GroupEnd. Without the group, every
// rank would sit in its blocking Send waiting for a receive its neighbour
// has not posted yet: a deadlock as soon as the message is larger than MPI's
// eager limit (a few KiB to 64 KiB), which the 4 MiB case here is.
#include "example_util.h"

static bool Run(example::Context &ctx, size_t count) {
  const int next = (ctx.rank + 1) % ctx.nranks;  // with 1 rank: itself, fine in a group
  const int prev = (ctx.rank + ctx.nranks - 1) % ctx.nranks;
  std::vector<float> send(count), recv(count, -1.0f), expected(count);
  for (size_t i = 0; i < count; ++i) {
    send[i] = example::Value(ctx.rank, i);
    expected[i] = example::Value(prev, i);
  }
  auto call = [&] {
    EXAMPLE_CHECK(ctx, infinicclGroupStart());
    EXAMPLE_CHECK(ctx, infinicclSend(send.data(), count, infinicclFloat32, next, ctx.comm,
                                     nullptr));
    EXAMPLE_CHECK(ctx, infinicclRecv(recv.data(), count, infinicclFloat32, prev, ctx.comm,
                                     nullptr));
    EXAMPLE_CHECK(ctx, infinicclGroupEnd());  // returns once both have completed
  };
  call();
  const bool ok = example::AllRanks(ctx, example::CountWrong(recv.data(), expected) == 0);
  const double seconds = example::TimePerCall(ctx, call);
  example::Report(ctx, "GroupRing(send first)", count, ok, recv.data(), expected, seconds,
                  static_cast<double>(count * sizeof(float)), 1.0);
  return ok;
}

int main(int argc, char **argv) {
  return example::Main(&argc, &argv, Run);
}
