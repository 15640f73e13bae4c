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
  const int next = (ctx.rank + 1) % ctx.nranks;
  const int prev = (ctx.rank + ctx.nranks - 1) % ctx.nranks;
  std::vector<float> send(count), recv(count, -1.0f), expected(count);
  for (size_t i = 0; i < count; ++i) {
    send[i] = example::Value(ctx.rank, i);
    expected[i] = example::Value(prev, i);
  }
  auto call = [&] {
    auto send_next = [&] {
      EXAMPLE_CHECK(ctx, infinicclSend(send.data(), count, infinicclFloat32, next,
                                       ctx.comm, nullptr));
    };
    auto recv_prev = [&] {
      EXAMPLE_CHECK(ctx, infinicclRecv(recv.data(), count, infinicclFloat32, prev,
                                       ctx.comm, nullptr));
    };
    if (ctx.rank % 2 == 0) {
      send_next();
      recv_prev();
    } else {
      recv_prev();
      send_next();
    }
  };
  call();
  const bool ok = example::AllRanks(ctx, example::CountWrong(recv.data(), expected) == 0);
  const double seconds = example::TimePerCall(ctx, call);
  example::Report(ctx, "SendRecv(ring)", count, ok, recv.data(), expected, seconds,
                  static_cast<double>(count * sizeof(float)), 1.0);
  return ok;
}

int main(int argc, char **argv) {
  return example::Main(&argc, &argv, Run);
}
