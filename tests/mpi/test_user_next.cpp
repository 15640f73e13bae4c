// What a program does right after queuing work, without synchronising: on
// the EMULATED device (sim), every rank queues device-buffer AllReduces
// (which go to the progress engine and return at once) on streams held by
// emulated kernels whose length grows with the rank (rank r: (r+1)*10 ms),
// and then at once, the streams not synchronised, does one of the calls
// below. Then it synchronises and checks every result exactly (integer sums
// of ReduceInput, one tag per call, expected values from test_util.h).
//
// Modes (argv[1]):
//   trim          - infinicclMemTrim while one-chunk and pipelined calls are
//                   queued on two streams; more calls queued after it, and a
//                   second trim before any stream is synchronised
//   split         - infinicclCommSplit of the communicator into even and odd
//                   ranks with calls queued on it; calls queued on the parent
//                   and on the child behind further kernels, then both
//                   checked (the child's sums over the child's ranks)
//   init_ranks    - infinicclCommInitRanks with calls queued on the parent:
//                   ranks 1..n-1 in reverse order (rank 0 does not take part
//                   and queues more work on the parent meanwhile), then every
//                   rank in reverse order; calls on each new communicator
//                   behind further kernels
//   destroy_other - two communicators A and B with calls queued on both (each
//                   on its own stream); infinicclCommDestroy(B) while A's
//                   work is still queued, then more calls on A (B's queued
//                   work finishes first and is exact)
//   two_comms     - two communicators called alternately, A, B, A, B ... in
//                   the same order on every rank, each on its own stream
//                   behind a kernel before every call, no synchronisation
//                   between calls. With stream memory operations (not under
//                   INFINICCL_SIM_STREAM_MEMOPS=0, where two threads driving
//                   a communicator each in no agreed order are not
//                   supported) the same from two threads, one communicator
//                   each
//   abort         - calls queued on a communicator behind a closed gate on
//                   every rank (a 2 s kernel where gates are host
//                   functions), and calls queued on another communicator
//                   behind the rank-skewed kernels; the calls and
//                   infinicclCommAbort of the first return while the gate
//                   is closed (it opens after them), its stream is released
//                   once the gate opens, the other communicator's calls are exact,
//                   and a communicator made afterwards gives exact AllReduces
// Every mode also runs under INFINICCL_SIM_STREAM_MEMOPS=0 (gates are host
// functions, run one at a time).
#include <mpi.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "device_mirror.h"

using namespace itest;

namespace {

int g_n = 0;
using Clock = std::chrono::steady_clock;

// One chunk (its copies on the caller's stream around the gate) and
// pipelined (chunks of 64 KiB on the engine's stream).
constexpr size_t kSmall = 3000;
constexpr size_t kLarge = 70000;

// The rank-skewed kernel length: rank r's stream is held (r+1)*10 ms.
unsigned SkewUs(int rank) { return unsigned(rank + 1) * 10000u; }


// One queued AllReduce of Int32 sums on `n` ranks, this rank being `rank`
// there, with input ReduceInput(tag), in place or out of place.
struct Call {
  std::unique_ptr<DeviceBuffer> send, recv;
  size_t count = 0;
  int tag = 0, n = 0;
  void *stream = nullptr;
  std::string what;
};

// Makes a call's buffers and uploads its input (synchronously, before any
// kernel is queued).
std::unique_ptr<Call> Prepare(size_t count, int tag, int rank, int n, bool in_place,
                              const std::string &what) {
  auto c = std::make_unique<Call>();
  c->count = count;
  c->tag = tag;
  c->n = n;
  c->what = what;
  c->send = std::make_unique<DeviceBuffer>(count * 4);
  c->send->Upload(ReduceInput(infinicclInt32, infinicclSum, tag, rank, count));
  if (!in_place) {
    c->recv = std::make_unique<DeviceBuffer>(count * 4);
    c->recv->Upload(std::vector<unsigned char>(count * 4, 0));
  }
  return c;
}

// Queues the call on `stream`; it must return at once with success.
void Queue(Call &c, infinicclComm_t comm, void *stream) {
  c.stream = stream;
  DeviceBuffer &out = c.recv ? *c.recv : *c.send;
  const infinicclResult_t r = infinicclAllReduce(c.send->ptr, out.ptr, c.count, infinicclInt32,
                                                 infinicclSum, comm, stream);
  CHECK(r == infinicclSuccess, "%s: AllReduce returned %s (%s)", c.what.c_str(),
        ResultName(r), SafeLastError());
}

// Checks the call's result, read on its stream after it.
void Verify(const Call &c) {
  const DeviceBuffer &out = c.recv ? *c.recv : *c.send;
  const long wrong =
      CountWrongReduce(c.n, infinicclInt32, infinicclSum, c.tag, DownloadOn(out, c.stream),
                       c.count);
  CHECK(wrong == 0, "%s (count %zu, tag %d, %d ranks): %ld of %zu elements wrong",
        c.what.c_str(), c.count, c.tag, c.n, wrong, c.count);
}

void VerifyAll(const std::vector<std::unique_ptr<Call>> &calls) {
  for (const auto &c : calls) Verify(*c);
}

void *NewStream() {
  void *s = nullptr;
  CHECK(g_dev->StreamCreate(&s).ok());
  return s;
}

void DestroyStream(void *s) {
  CHECK(g_dev->StreamSynchronize(s).ok());
  CHECK(g_dev->StreamDestroy(s).ok());
}

void Kernel(void *stream, unsigned us) { CHECK(g_sim->Kernel(stream, us).ok()); }

// trim: MemTrim with one-chunk and pipelined calls queued on two streams.
void ModeTrim(infinicclComm_t comm, int rank) {
  void *s0 = NewStream(), *s1 = NewStream();
  std::vector<std::unique_ptr<Call>> calls;
  int tag = 100;
  for (int i = 0; i < 4; ++i) {
    calls.push_back(Prepare(i % 2 ? kLarge : kSmall, tag++, rank, g_n, i < 2, "trim: first"));
  }
  for (int i = 0; i < 4; ++i) {
    calls.push_back(Prepare(i % 2 ? kSmall : kLarge, tag++, rank, g_n, i >= 2, "trim: second"));
  }
  Kernel(s0, SkewUs(rank));
  Kernel(s1, SkewUs(g_n - 1 - rank));
  for (int i = 0; i < 4; ++i) Queue(*calls[i], comm, i % 2 ? s1 : s0);
  CHECK(infinicclMemTrim() == infinicclSuccess, "MemTrim with work queued: %s",
        SafeLastError());
  Kernel(s0, SkewUs(rank));
  for (int i = 4; i < 8; ++i) Queue(*calls[i], comm, i % 2 ? s0 : s1);
  CHECK(infinicclMemTrim() == infinicclSuccess, "second MemTrim: %s", SafeLastError());
  VerifyAll(calls);
  // And once everything is done, the cache is empty after a trim.
  CHECK(infinicclMemTrim() == infinicclSuccess);
  DestroyStream(s0);
  DestroyStream(s1);
}

// split: CommSplit (even/odd) with calls queued on the parent.
void ModeSplit(infinicclComm_t comm, int rank) {
  void *s = NewStream(), *cs = NewStream();
  std::vector<std::unique_ptr<Call>> calls;
  calls.push_back(Prepare(kSmall, 200, rank, g_n, true, "split: parent before"));
  calls.push_back(Prepare(kLarge, 201, rank, g_n, false, "split: parent before"));
  calls.push_back(Prepare(kSmall, 202, rank, g_n, false, "split: parent before"));
  Kernel(s, SkewUs(rank));
  for (auto &c : calls) Queue(*c, comm, s);
  infinicclComm_t child = nullptr;
  const infinicclResult_t r = infinicclCommSplit(comm, rank % 2, rank, &child);
  CHECK(r == infinicclSuccess && child != nullptr, "CommSplit with work queued: %s (%s)",
        ResultName(r), SafeLastError());
  const int color = rank % 2;
  const int child_n = (g_n - color + 1) / 2, child_rank = rank / 2;
  if (child != nullptr) {
    int n = 0, me = -1;
    CHECK(infinicclCommCount(child, &n) == infinicclSuccess && n == child_n,
          "child has %d ranks, expected %d", n, child_n);
    CHECK(infinicclCommUserRank(child, &me) == infinicclSuccess && me == child_rank,
          "child rank %d, expected %d", me, child_rank);
    // Work on the parent and on the child, each behind a kernel again.
    std::vector<std::unique_ptr<Call>> more;
    more.push_back(Prepare(kLarge, 210 + color, child_rank, child_n, true, "split: child"));
    more.push_back(Prepare(kSmall, 212 + color, child_rank, child_n, false, "split: child"));
    more.push_back(Prepare(kLarge, 214, rank, g_n, false, "split: parent after"));
    Kernel(cs, SkewUs(rank));
    Queue(*more[0], child, cs);
    Kernel(s, SkewUs(g_n - 1 - rank));
    Queue(*more[2], comm, s);
    Queue(*more[1], child, cs);
    VerifyAll(calls);
    VerifyAll(more);
    CHECK(infinicclCommDestroy(child) == infinicclSuccess);
  } else {
    VerifyAll(calls);
  }
  DestroyStream(s);
  DestroyStream(cs);
}

// init_ranks: CommInitRanks with calls queued on the parent.
void ModeInitRanks(infinicclComm_t comm, int rank) {
  void *s = NewStream(), *cs = NewStream();
  std::vector<std::unique_ptr<Call>> calls;
  calls.push_back(Prepare(kLarge, 300, rank, g_n, true, "init_ranks: parent before"));
  calls.push_back(Prepare(kSmall, 301, rank, g_n, false, "init_ranks: parent before"));
  // Rank 0's extra parent call, queued while the others make the subset's
  // communicator (the others queue theirs after).
  calls.push_back(Prepare(kSmall, 302, rank, g_n, true, "init_ranks: parent during"));
  Kernel(s, SkewUs(rank));
  Queue(*calls[0], comm, s);
  Queue(*calls[1], comm, s);

  // Ranks n-1 .. 1 (rank i of the new communicator is parent rank n-1-i).
  std::vector<int> subset;
  for (int r = g_n - 1; r >= 1; --r) subset.push_back(r);
  std::vector<std::unique_ptr<Call>> sub_calls;
  if (rank == 0) {
    Kernel(s, SkewUs(rank));
    Queue(*calls[2], comm, s);
  } else {
    infinicclComm_t sub = nullptr;
    const infinicclResult_t r =
        infinicclCommInitRanks(comm, int(subset.size()), subset.data(), &sub);
    CHECK(r == infinicclSuccess && sub != nullptr, "CommInitRanks(n-1..1) with work queued: %s (%s)",
          ResultName(r), SafeLastError());
    Queue(*calls[2], comm, s);
    if (sub != nullptr) {
      const int sub_n = int(subset.size()), sub_rank = g_n - 1 - rank;
      int n = 0, me = -1;
      CHECK(infinicclCommCount(sub, &n) == infinicclSuccess && n == sub_n);
      CHECK(infinicclCommUserRank(sub, &me) == infinicclSuccess && me == sub_rank,
            "rank %d in the subset, expected %d", me, sub_rank);
      sub_calls.push_back(Prepare(kLarge, 310, sub_rank, sub_n, false, "init_ranks: subset"));
      sub_calls.push_back(Prepare(kSmall, 311, sub_rank, sub_n, true, "init_ranks: subset"));
      Kernel(cs, SkewUs(rank));
      for (auto &c : sub_calls) Queue(*c, sub, cs);
      VerifyAll(sub_calls);
      CHECK(infinicclCommDestroy(sub) == infinicclSuccess);
    }
  }
  // Every rank, in reverse order, with the parent's calls still queued.
  calls.push_back(Prepare(kSmall, 303, rank, g_n, false, "init_ranks: parent before all"));
  Kernel(s, SkewUs(g_n - 1 - rank));
  Queue(*calls[3], comm, s);
  std::vector<int> all;
  for (int r = g_n - 1; r >= 0; --r) all.push_back(r);
  infinicclComm_t rev = nullptr;
  const infinicclResult_t r = infinicclCommInitRanks(comm, g_n, all.data(), &rev);
  CHECK(r == infinicclSuccess && rev != nullptr, "CommInitRanks(all, reversed) with work queued: %s (%s)",
        ResultName(r), SafeLastError());
  if (rev != nullptr) {
    const int rev_rank = g_n - 1 - rank;
    std::vector<std::unique_ptr<Call>> rev_calls;
    rev_calls.push_back(Prepare(kSmall, 320, rev_rank, g_n, false, "init_ranks: reversed"));
    rev_calls.push_back(Prepare(kLarge, 321, rev_rank, g_n, true, "init_ranks: reversed"));
    calls.push_back(Prepare(kLarge, 304, rank, g_n, false, "init_ranks: parent after"));
    Kernel(cs, SkewUs(rank));
    Queue(*rev_calls[0], rev, cs);
    Queue(*calls[4], comm, s);
    Queue(*rev_calls[1], rev, cs);
    VerifyAll(rev_calls);
    CHECK(infinicclCommDestroy(rev) == infinicclSuccess);
  }
  VerifyAll(calls);
  DestroyStream(s);
  DestroyStream(cs);
}

// destroy_other: CommDestroy(B) while A's and B's work is queued.
void ModeDestroyOther(infinicclComm_t a, int rank) {
  infinicclComm_t b = nullptr;
  CHECK(infinicclCommInitAll(&b, 0, nullptr) == infinicclSuccess);
  void *sa = NewStream(), *sb = NewStream();
  std::vector<std::unique_ptr<Call>> calls;
  calls.push_back(Prepare(kLarge, 400, rank, g_n, false, "destroy_other: A before"));
  calls.push_back(Prepare(kSmall, 401, rank, g_n, true, "destroy_other: B"));
  calls.push_back(Prepare(kSmall, 402, rank, g_n, false, "destroy_other: A before"));
  calls.push_back(Prepare(kLarge, 403, rank, g_n, true, "destroy_other: B"));
  calls.push_back(Prepare(kSmall, 404, rank, g_n, false, "destroy_other: A after"));
  calls.push_back(Prepare(kLarge, 405, rank, g_n, true, "destroy_other: A after"));
  Kernel(sa, SkewUs(rank));
  Kernel(sb, SkewUs(g_n - 1 - rank));
  Queue(*calls[0], a, sa);
  Queue(*calls[1], b, sb);
  Queue(*calls[2], a, sa);
  Queue(*calls[3], b, sb);
  const infinicclResult_t r = infinicclCommDestroy(b);
  CHECK(r == infinicclSuccess, "CommDestroy of B with work queued on A and B: %s (%s)",
        ResultName(r), SafeLastError());
  Kernel(sa, SkewUs(rank));
  Queue(*calls[4], a, sa);
  Queue(*calls[5], a, sa);
  VerifyAll(calls);
  DestroyStream(sa);
  DestroyStream(sb);
}

// two_comms: A, B, A, B ... on two streams, a kernel before every call.
void ModeTwoComms(int rank) {
  infinicclComm_t comms[2] = {nullptr, nullptr};
  for (auto &c : comms) CHECK(infinicclCommInitAll(&c, 0, nullptr) == infinicclSuccess);
  void *streams[2] = {NewStream(), NewStream()};
  const int rounds = 4;
  {
    std::vector<std::unique_ptr<Call>> calls;
    for (int r = 0; r < rounds; ++r) {
      for (int which = 0; which < 2; ++which) {
        calls.push_back(Prepare((r + which) % 2 ? kLarge : kSmall, 500 + r * 2 + which, rank,
                                g_n, r % 2 == 0, which ? "two_comms: B" : "two_comms: A"));
      }
    }
    for (int r = 0; r < rounds; ++r) {
      for (int which = 0; which < 2; ++which) {
        // A's kernels grow with the rank, B's shrink.
        Kernel(streams[which], SkewUs(which ? g_n - 1 - rank : rank));
        Queue(*calls[size_t(r * 2 + which)], comms[which], streams[which]);
      }
    }
    VerifyAll(calls);
  }
  if (!g_sim->GateIsHostFunction()) {
    // Each communicator from a thread of its own: the two threads' calls
    // interleave differently on every rank.
    std::vector<std::unique_ptr<Call>> calls[2];
    for (int which = 0; which < 2; ++which) {
      for (int r = 0; r < rounds; ++r) {
        calls[which].push_back(Prepare(r % 2 ? kLarge : kSmall, 600 + which * 10 + r, rank, g_n,
                                       r % 2 == 1, which ? "two_comms: thread B" : "two_comms: thread A"));
      }
    }
    std::thread threads[2];
    for (int which = 0; which < 2; ++which) {
      threads[which] = std::thread([&, which] {
        for (int r = 0; r < rounds; ++r) {
          Kernel(streams[which], SkewUs(which ? g_n - 1 - rank : rank));
          Queue(*calls[which][size_t(r)], comms[which], streams[which]);
        }
      });
    }
    for (auto &t : threads) t.join();
    for (auto &c : calls) VerifyAll(c);
  }
  for (auto &s : streams) DestroyStream(s);
  for (auto &c : comms) CHECK(infinicclCommDestroy(c) == infinicclSuccess);
}

// abort: CommAbort with work queued behind a closed gate.
void ModeAbort(infinicclComm_t comm, int rank) {
  infinicclComm_t doomed = nullptr;
  CHECK(infinicclCommInitAll(&doomed, 0, nullptr) == infinicclSuccess);
  void *s = NewStream(), *ds = NewStream();
  std::vector<std::unique_ptr<Call>> live;
  live.push_back(Prepare(kSmall, 700, rank, g_n, false, "abort: other communicator"));
  live.push_back(Prepare(kLarge, 701, rank, g_n, true, "abort: other communicator"));
  std::vector<std::unique_ptr<Call>> dropped;
  dropped.push_back(Prepare(kSmall, 710, rank, g_n, false, "abort: aborted"));
  dropped.push_back(Prepare(kLarge, 711, rank, g_n, true, "abort: aborted"));
  dropped.push_back(Prepare(kSmall, 712, rank, g_n, true, "abort: aborted"));
  Kernel(s, SkewUs(rank));
  for (auto &c : live) Queue(*c, comm, s);
  // The aborted communicator's stream is held by a gate that opens only
  // after CommAbort has returned: queuing or aborting that waited for the
  // stream would never return (the test's timeout fails it). Where gates
  // are host functions, run one at a time, a closed one would hold every
  // stream's host functions: a 2 s kernel holds the stream there, and only
  // a hang fails the 30 s bound below.
  const bool by_gate = !g_dev->GateIsHostFunction();
  void *gate = nullptr;
  if (by_gate) {
    CHECK(g_dev->GateCreate(&gate).ok());
    CHECK(g_dev->GateWait(ds, gate, 1).ok());
  } else {
    Kernel(ds, 2000000);
  }
  for (auto &c : dropped) Queue(*c, doomed, ds);
  const Clock::time_point t0 = Clock::now();
  const infinicclResult_t r = infinicclCommAbort(doomed);
  const double ms =
      std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  CHECK(r == infinicclSuccess, "CommAbort with work queued behind a closed gate: %s (%s)",
        ResultName(r), SafeLastError());
  CHECK(ms < 30000.0, "CommAbort took %.0f ms", ms);
  if (rank == 0) std::printf("abort: CommAbort returned in %.1f ms\n", ms);
  if (by_gate) g_dev->GateOpen(gate, 1);
  infinicclResult_t async = infinicclSuccess;
  CHECK(infinicclCommGetAsyncError(doomed, &async) == infinicclInvalidUsage,
        "the aborted communicator is refused");
  // Released once the gate opens (results of the skipped calls undefined).
  CHECK(g_dev->StreamSynchronize(ds).ok(), "the aborted communicator's stream");
  if (by_gate) CHECK(g_dev->GateDestroy(gate).ok());
  VerifyAll(live);
  // The job goes on: a fresh communicator, behind the skewed kernels again.
  infinicclComm_t fresh = nullptr;
  CHECK(infinicclCommInitAll(&fresh, 0, nullptr) == infinicclSuccess);
  std::vector<std::unique_ptr<Call>> after;
  after.push_back(Prepare(kLarge, 720, rank, g_n, false, "abort: fresh communicator"));
  after.push_back(Prepare(kSmall, 721, rank, g_n, true, "abort: fresh communicator"));
  after.push_back(Prepare(kSmall, 722, rank, g_n, false, "abort: first communicator after"));
  Kernel(ds, SkewUs(rank));
  Queue(*after[0], fresh, ds);
  Queue(*after[1], fresh, ds);
  Kernel(s, SkewUs(g_n - 1 - rank));
  Queue(*after[2], comm, s);
  VerifyAll(after);
  CHECK(infinicclCommDestroy(fresh) == infinicclSuccess);
  DestroyStream(s);
  DestroyStream(ds);
}

}  // namespace

int main(int argc, char **argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  setenv("INFINICCL_PIPELINE_CHUNK_BYTES", "65536", 0);
  if (infinicclInit(&argc, &argv) != infinicclSuccess) return 2;
  EnableSim();
  infinicclComm_t comm = nullptr;
  if (infinicclCommInitAll(&comm, 0, nullptr) != infinicclSuccess) return 2;
  int rank = 0;
  infinicclCommUserRank(comm, &rank);
  infinicclCommCount(comm, &g_n);
  g_rank = rank;
  const Clock::time_point t0 = Clock::now();

  if (mode == "trim") {
    ModeTrim(comm, rank);
  } else if (mode == "split") {
    ModeSplit(comm, rank);
  } else if (mode == "init_ranks") {
    ModeInitRanks(comm, rank);
  } else if (mode == "destroy_other") {
    ModeDestroyOther(comm, rank);
  } else if (mode == "two_comms") {
    ModeTwoComms(rank);
  } else if (mode == "abort") {
    ModeAbort(comm, rank);
  } else {
    std::fprintf(stderr, "unknown mode '%s' (trim, split, init_ranks, destroy_other, "
                 "two_comms, abort)\n", mode.c_str());
    return 2;
  }
  CHECK(infinicclCommDestroy(comm) == infinicclSuccess);
  const long total = TotalFailures();
  if (rank == 0) {
    std::printf("test_user_next %s (%s): %ld failures, %.2f s\n", mode.c_str(),
                g_sim->GateIsHostFunction() ? "host-function gates" : "stream waits", total,
                std::chrono::duration<double>(Clock::now() - t0).count());
  }
  if (infinicclFinalize() != infinicclSuccess) return 1;
  return total == 0 ? 0 : 1;
}
