// Send/Recv around a ring: rank r sends to r+1 and receives from r-1.
// Send and Recv block until matched (as MPI_Send/MPI_Recv), so even ranks
// send first and odd ranks receive first; that order cannot deadlock for any
// number of ranks >= 2.
#include "example_util.h"

static bool Run(example::Context &ctx, size_t count) {
  if (ctx.nranks < 2) {  // a peer must differ from the caller
    if (count == example::kLargeCount)
      std::printf("SendRecv(ring): needs 2 or more ranks, skipped\n");
    return true;
  }
  example::Ring ring = example::MakeRing(ctx, count);
  auto send_next = [&] {
    EXAMPLE_CHECK(ctx, infinicclSend(ring.send.data(), count, infinicclFloat32, ring.next,
                                     ctx.comm, nullptr));
  };
  auto recv_prev = [&] {
    EXAMPLE_CHECK(ctx, infinicclRecv(ring.recv.data(), count, infinicclFloat32, ring.prev,
                                     ctx.comm, nullptr));
  };
  return example::CheckRing(ctx, "SendRecv(ring)", ring, [&] {
    if (ctx.rank % 2 == 0) {
      send_next();
      recv_prev();
    } else {
      recv_prev();
      send_next();
    }
  });
}

int main(int argc, char **argv) {
  return example::Main(&argc, &argv, Run);
}
