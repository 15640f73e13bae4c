// Broadcast: the root's send buffer lands in every rank's receive buffer.
// The last rank is the root, so rank 0 (which prints) is a receiver.
#include "example_util.h"

static bool Run(example::Context &ctx, size_t count) {
  const int root = ctx.nranks - 1;
  std::vector<float> send = example::Values(ctx.rank, count), recv(count, -1.0f);
  auto call = [&] {
    EXAMPLE_CHECK(ctx, infinicclBroadcast(send.data(), recv.data(), count,
                                          infinicclFloat32, root, ctx.comm, nullptr));
  };
  return example::Check(ctx, "Broadcast(root=last)", count, call, recv,
                        example::Values(root, count), count * sizeof(float), 1.0);
}

int main(int argc, char **argv) {
  return example::Main(&argc, &argv, Run);
}
