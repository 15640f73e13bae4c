// A ring in which every rank sends before it receives, made safe by a group:
// inside infinicclGroupStart/infinicclGroupEnd the Send and the Recv are
// started together and both complete at GroupEnd. Without the group, every
// rank would sit in its blocking Send waiting for a receive its neighbour
// has not posted yet: a deadlock as soon as the message is larger than MPI's
// eager limit (a few KiB to 64 KiB), which the 4 MiB case here is.
#include "example_util.h"

static bool Run(example::Context &ctx, size_t count) {
  // With 1 rank, next and prev are the rank itself: fine in a group.
  example::Ring ring = example::MakeRing(ctx, count);
  return example::CheckRing(ctx, "GroupRing(send first)", ring, [&] {
    EXAMPLE_CHECK(ctx, infinicclGroupStart());
    EXAMPLE_CHECK(ctx, infinicclSend(ring.send.data(), count, infinicclFloat32, ring.next,
                                     ctx.comm, nullptr));
    EXAMPLE_CHECK(ctx, infinicclRecv(ring.recv.data(), count, infinicclFloat32, ring.prev,
                                     ctx.comm, nullptr));
    EXAMPLE_CHECK(ctx, infinicclGroupEnd());  // returns once both have completed
  });
}

int main(int argc, char **argv) {
  return example::Main(&argc, &argv, Run);
}
