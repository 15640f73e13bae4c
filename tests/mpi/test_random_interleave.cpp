// Seeded randomized interleaving of the progress engine's calls on the
// EMULATED device (sim), checked exactly.
//
// Usage: test_random_interleave FIRST_SEED COUNT
//
// Every rank runs the same seeds; for each, a std::mt19937 seeded with it
// draws the same sequence on every rank (whatever depends on the rank, the
// length of an emulated kernel say, is derived from the draw and the rank).
// A seed makes 1-3 communicators (infinicclCommInitAll), 1-3 streams and one
// spare communicator, then runs about 40 steps drawn from:
//   - device AllReduce / Broadcast / AllGather / ReduceScatter (Int32 Sum)
//     of 1 to ~300k elements (one chunk or pipelined), sometimes in place,
//     on any communicator (the spare too) and any stream;
//   - the same collectives on host buffers (stream nullptr);
//   - emulated kernels (g_sim->Kernel) of 0-5 ms, a different length on
//     each rank, so the streams of the ranks run skewed;
//   - a ring of grouped Send/Recv on device buffers;
//   - infinicclMemTrim;
//   - the spare given up (CommDestroy with its work still queued, or
//     CommAbort once the streams are drained) and a new one made by
//     CommInitAll, CommSplit (all ranks in one color, split by parity, or one
//     rank left out with INFINICCL_SPLIT_NOCOLOR) or CommInitRanks (a drawn
//     subset of the ranks, in drawn order; the others skip its calls).
// Buffers stay alive until the end of the seed, where every result is
// downloaded on its own stream and compared with expected values computed
// independently of the library (test_util.h: integer sums). The staging
// cache is capped small (INFINICCL_STAGING_CACHE_BYTES=1M unless set) so the
// pool evicts while calls are queued; the emulated device keeps its strict
// modes (their defaults). A seed with a failure ends the run, naming it;
// rank 0 prints one line per seed.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "device_mirror.h"

using namespace itest;

namespace {

using Bytes = std::vector<unsigned char>;


// Rank `rank`'s input of tag `tag`: ReduceValue (|v| <= 5) of the elements
// [first, first + count), as Int32 bytes.
Bytes Input(uint64_t tag, int rank, size_t first, size_t count) {
  Bytes h(count * 4);
  for (size_t i = 0; i < count; ++i)
    Encode(infinicclInt32, h.data(), i, ReduceValue(infinicclInt32, infinicclSum, tag, rank,
                                                    first + i));
  return h;
}

// The sum over ranks 0..n-1 of Input(tag, r, first, count).
Bytes Summed(uint64_t tag, int n, size_t first, size_t count) {
  Bytes h(count * 4);
  for (size_t i = 0; i < count; ++i)
    Encode(infinicclInt32, h.data(), i,
           ExpectedReduce(infinicclInt32, infinicclSum, tag, n, first + i));
  return h;
}

void Append(Bytes &to, const Bytes &from) { to.insert(to.end(), from.begin(), from.end()); }

// A result to check at the end of the seed: `expect` at byte `offset` of a
// device buffer (downloaded on `stream`) or of a host buffer.
struct Pending {
  std::string what;
  void *stream = nullptr;
  DeviceBuffer *dev = nullptr;
  Bytes *host = nullptr;
  size_t offset = 0;
  Bytes expect;
};

struct Seed {
  explicit Seed(uint64_t seed, int world_rank) : rng(uint32_t(seed)), seed(seed),
                                                 world_rank(world_rank) {}
  std::mt19937 rng;
  uint64_t seed;
  int world_rank;
  int step = 0;
  std::vector<infinicclComm_t> mains;
  infinicclComm_t spare = nullptr;  // nullptr on a rank that is not in it
  std::string spare_how;
  std::vector<void *> streams;
  // Everything queued calls may still read or write, kept until checked.
  std::vector<std::unique_ptr<DeviceBuffer>> dev_bufs;
  std::vector<std::unique_ptr<Bytes>> host_bufs;
  std::vector<Pending> pending;

  // The same on every rank.
  uint32_t Draw(uint32_t n) { return uint32_t(rng() % n); }
  uint64_t Tag() const { return seed * 1000 + uint64_t(step); }

  DeviceBuffer *NewDevice(size_t bytes) {
    dev_bufs.push_back(std::make_unique<DeviceBuffer>(std::max<size_t>(bytes, 4)));
    return dev_bufs.back().get();
  }
  Bytes *NewHost(Bytes contents) {
    host_bufs.push_back(std::make_unique<Bytes>(std::move(contents)));
    return host_bufs.back().get();
  }
  // Queues the upload of `h` on `stream` (the stream's producer of the
  // input); `h` is kept until the end of the seed.
  DeviceBuffer *UploadedOn(Bytes h, void *stream) {
    DeviceBuffer *b = NewDevice(h.size());
    Bytes *keep = NewHost(std::move(h));
    if (!keep->empty()) b->UploadAsync(*keep, stream);
    return b;
  }
  void DrainStreams() {
    for (void *s : streams) CHECK(g_dev->StreamSynchronize(s).ok());
  }
};

// A count of elements: tiny, one chunk (up to 64 KiB, the chunk size) or
// pipelined, at most `max` elements.
size_t DrawCount(Seed &s, size_t max) {
  const uint32_t kind = s.Draw(10);
  const uint32_t r = s.Draw(1u << 30);
  size_t c;
  if (kind < 4) {
    c = 1 + r % 64;
  } else if (kind < 7) {
    c = 65 + r % (16384 - 64);
  } else {
    c = 16385 + r % (300000 - 16384);
  }
  return std::max<size_t>(1, std::min(c, max));
}

// One collective (AllReduce, Broadcast, AllGather or ReduceScatter, Int32
// Sum) on device buffers on a stream, or on host buffers (stream nullptr).
void StepCollective(Seed &s, bool on_device) {
  const uint32_t which = s.Draw(4);
  const uint32_t comm_pick = s.Draw(uint32_t(s.mains.size()) + 1);
  const uint32_t stream_pick = s.Draw(uint32_t(s.streams.size()));
  const bool in_place = s.Draw(4) == 0;
  const uint32_t root_draw = s.Draw(1u << 20);
  const size_t total = DrawCount(s, 300000);
  const uint64_t tag = s.Tag();
  infinicclComm_t comm = comm_pick < s.mains.size() ? s.mains[comm_pick] : s.spare;
  if (comm == nullptr) return;  // not a member of the spare
  int rank = 0, n = 0;
  CHECK_RC(infinicclCommUserRank(comm, &rank), infinicclSuccess);
  CHECK_RC(infinicclCommCount(comm, &n), infinicclSuccess);
  void *stream = on_device ? s.streams[stream_pick] : nullptr;
  static const char *const kNames[] = {"AllReduce", "Broadcast", "AllGather", "ReduceScatter"};
  char what[160];
  std::snprintf(what, sizeof what, "step %d %s %s%s comm %s count %zu stream %u", s.step,
                on_device ? "device" : "host", kNames[which], in_place ? " in place" : "",
                comm_pick < s.mains.size() ? std::to_string(comm_pick).c_str()
                                           : ("spare/" + s.spare_how).c_str(),
                total, on_device ? stream_pick : 0);

  // Input, output and what the output must hold, by collective.
  Bytes in, out_init, expect;
  size_t count = total;  // the count passed to the call
  // In place, one buffer: sendbuff at in_off, recvbuff at out_off (bytes),
  // as NCCL places them (AllGather's input at this rank's block of the
  // output, ReduceScatter's output at this rank's block of the input).
  size_t in_off = 0;
  size_t out_off = 0;  // also where the checked result starts
  int root = 0;
  switch (which) {
    case 0:  // AllReduce
      in = Input(tag, rank, 0, count);
      expect = Summed(tag, n, 0, count);
      break;
    case 1:  // Broadcast
      root = int(root_draw % uint32_t(n));
      in = rank == root ? Input(tag, root, 0, count) : Bytes(count * 4, 0xEE);
      expect = Input(tag, root, 0, count);
      break;
    case 2: {  // AllGather: `count` per rank
      count = std::max<size_t>(1, total / size_t(n));
      in = Input(tag, rank, 0, count);
      for (int r = 0; r < n; ++r) Append(expect, Input(tag, r, 0, count));
      in_off = size_t(rank) * count * 4;
      break;
    }
    default: {  // ReduceScatter: `count` per rank
      count = std::max<size_t>(1, total / size_t(n));
      in = Input(tag, rank, 0, count * size_t(n));
      expect = Summed(tag, n, size_t(rank) * count, count);
      out_off = in_place ? size_t(rank) * count * 4 : 0;
      break;
    }
  }
  const size_t out_bytes = which == 2 ? count * size_t(n) * 4 : count * 4;
  auto call = [&](const void *send, void *recv) {
    switch (which) {
      case 0:
        return infinicclAllReduce(send, recv, count, infinicclInt32, infinicclSum, comm, stream);
      case 1:
        return infinicclBroadcast(send, recv, count, infinicclInt32, root, comm, stream);
      case 2:
        return infinicclAllGather(send, recv, count, infinicclInt32, comm, stream);
      default:
        return infinicclReduceScatter(send, recv, count, infinicclInt32, infinicclSum, comm,
                                      stream);
    }
  };
  Pending p;
  p.what = what;
  p.stream = stream;
  p.offset = out_off;
  p.expect = std::move(expect);
  infinicclResult_t rc;
  if (on_device) {
    if (in_place) {
      // AllReduce/Broadcast/ReduceScatter: one buffer, the input; AllGather:
      // the input at this rank's block of the output.
      Bytes whole = in;
      if (which == 2) {
        whole.assign(out_bytes, 0xEE);
        std::copy(in.begin(), in.end(), whole.begin() + long(in_off));
      }
      DeviceBuffer *b = s.UploadedOn(std::move(whole), stream);
      char *base = static_cast<char *>(b->ptr);
      rc = call(base + in_off, base + out_off);
      p.dev = b;
    } else {
      DeviceBuffer *send = s.UploadedOn(std::move(in), stream);
      DeviceBuffer *recv = s.UploadedOn(Bytes(out_bytes, 0xEE), stream);
      rc = call(send->ptr, recv->ptr);
      p.dev = recv;
    }
  } else {
    if (in_place) {
      Bytes whole = in;
      if (which == 2) {
        whole.assign(out_bytes, 0xEE);
        std::copy(in.begin(), in.end(), whole.begin() + long(in_off));
      }
      Bytes *b = s.NewHost(std::move(whole));
      rc = call(b->data() + in_off, b->data() + out_off);
      p.host = b;
    } else {
      Bytes *send = s.NewHost(std::move(in));
      Bytes *recv = s.NewHost(Bytes(out_bytes, 0xEE));
      rc = call(send->data(), recv->data());
      p.host = recv;
    }
  }
  CHECK(rc == infinicclSuccess, "%s: returned %s (%s)", what, ResultName(rc), SafeLastError());
  s.pending.push_back(std::move(p));
}

// An emulated kernel of 0-5 ms on a stream, its length differing by rank.
void StepKernel(Seed &s) {
  const uint32_t stream_pick = s.Draw(uint32_t(s.streams.size()));
  const uint32_t d = s.Draw(5001);
  const unsigned us = unsigned((d + uint32_t(s.world_rank) * 1777u) % 5001u);
  CHECK(g_sim->Kernel(s.streams[stream_pick], us).ok(), "step %d: Kernel", s.step);
}

// A ring of grouped Send/Recv on device buffers (each rank sends to the
// next and receives from the previous).
void StepRing(Seed &s) {
  const uint32_t comm_pick = s.Draw(uint32_t(s.mains.size()) + 1);
  const uint32_t stream_pick = s.Draw(uint32_t(s.streams.size()));
  const size_t count = DrawCount(s, 300000);
  const uint64_t tag = s.Tag();
  infinicclComm_t comm = comm_pick < s.mains.size() ? s.mains[comm_pick] : s.spare;
  if (comm == nullptr) return;
  int rank = 0, n = 0;
  CHECK_RC(infinicclCommUserRank(comm, &rank), infinicclSuccess);
  CHECK_RC(infinicclCommCount(comm, &n), infinicclSuccess);
  const int next = (rank + 1) % n, prev = (rank + n - 1) % n;
  void *stream = s.streams[stream_pick];
  DeviceBuffer *send = s.UploadedOn(Input(tag, rank, 0, count), stream);
  DeviceBuffer *recv = s.UploadedOn(Bytes(count * 4, 0xEE), stream);
  CHECK_RC(infinicclGroupStart(), infinicclSuccess);
  CHECK_RC(infinicclSend(send->ptr, count, infinicclInt32, next, comm, stream),
           infinicclSuccess);
  CHECK_RC(infinicclRecv(recv->ptr, count, infinicclInt32, prev, comm, stream),
           infinicclSuccess);
  const infinicclResult_t rc = infinicclGroupEnd();
  char what[160];
  std::snprintf(what, sizeof what, "step %d ring comm %s count %zu stream %u", s.step,
                comm_pick < s.mains.size() ? std::to_string(comm_pick).c_str()
                                           : ("spare/" + s.spare_how).c_str(),
                count, stream_pick);
  CHECK(rc == infinicclSuccess, "%s: GroupEnd returned %s (%s)", what, ResultName(rc),
        SafeLastError());
  Pending p;
  p.what = what;
  p.stream = stream;
  p.dev = recv;
  p.expect = Input(tag, prev, 0, count);
  s.pending.push_back(std::move(p));
}

// A new spare communicator: CommInitAll, CommSplit of a main one, or
// CommInitRanks of a drawn subset of a main one's ranks.
void MakeSpare(Seed &s) {
  const uint32_t how = s.Draw(3);
  const uint32_t parent_pick = s.Draw(uint32_t(s.mains.size()));
  const uint32_t split_mode = s.Draw(3);
  const bool key_reversed = s.Draw(2) == 1;
  infinicclComm_t parent = s.mains[parent_pick];
  int prank = 0, pn = 0;
  CHECK_RC(infinicclCommUserRank(parent, &prank), infinicclSuccess);
  CHECK_RC(infinicclCommCount(parent, &pn), infinicclSuccess);
  std::vector<int> order(size_t(pn), 0);
  std::iota(order.begin(), order.end(), 0);
  for (int i = pn - 1; i > 0; --i) std::swap(order[size_t(i)], order[s.Draw(uint32_t(i) + 1)]);
  const int k = 1 + int(s.Draw(uint32_t(pn)));
  s.spare = nullptr;
  if (how == 0) {
    s.spare_how = "InitAll";
    CHECK_RC(infinicclCommInitAll(&s.spare, 0, nullptr), infinicclSuccess);
  } else if (how == 1) {
    int color = 0;
    if (split_mode == 1) color = prank % 2;
    if (split_mode == 2) color = prank == pn - 1 && pn > 1 ? INFINICCL_SPLIT_NOCOLOR : 0;
    s.spare_how = "Split" + std::to_string(split_mode);
    CHECK_RC(infinicclCommSplit(parent, color, key_reversed ? pn - prank : prank, &s.spare),
             infinicclSuccess);
    CHECK((s.spare == nullptr) == (color == INFINICCL_SPLIT_NOCOLOR), "step %d: CommSplit",
          s.step);
  } else {
    s.spare_how = "InitRanks" + std::to_string(k);
    order.resize(size_t(k));
    if (std::find(order.begin(), order.end(), prank) != order.end()) {
      CHECK_RC(infinicclCommInitRanks(parent, k, order.data(), &s.spare), infinicclSuccess);
      int r = -1, n = 0;
      CHECK_RC(infinicclCommUserRank(s.spare, &r), infinicclSuccess);
      CHECK_RC(infinicclCommCount(s.spare, &n), infinicclSuccess);
      CHECK(n == k && order[size_t(r)] == prank, "step %d: CommInitRanks rank %d of %d",
            s.step, r, n);
    }
  }
}

// Gives up the spare: CommDestroy with its work still queued (it finishes
// first), or CommAbort once every stream is drained (an abort cannot take
// back a call another rank is waiting for); then makes a new one.
void StepReplaceSpare(Seed &s) {
  const bool abort = s.Draw(2) == 1;
  if (abort) {
    s.DrainStreams();
    if (s.spare != nullptr) CHECK_RC(infinicclCommAbort(s.spare), infinicclSuccess);
  } else if (s.spare != nullptr) {
    CHECK_RC(infinicclCommDestroy(s.spare), infinicclSuccess);
  }
  s.spare = nullptr;
  MakeSpare(s);
}

void CheckAll(Seed &s) {
  for (Pending &p : s.pending) {
    Bytes got = p.dev != nullptr ? DownloadOn(*p.dev, p.stream) : *p.host;
    const size_t n = p.expect.size() / 4;
    long wrong = 0;
    size_t first_wrong = 0;
    for (size_t i = 0; i < n; ++i) {
      if (std::memcmp(got.data() + p.offset + i * 4, p.expect.data() + i * 4, 4) != 0) {
        if (wrong++ == 0) first_wrong = i;
      }
    }
    CHECK(wrong == 0, "seed %llu %s: %ld of %zu elements wrong (first at %zu: %d, expected %d)",
          static_cast<unsigned long long>(s.seed), p.what.c_str(), wrong, n, first_wrong,
          int(Decode(infinicclInt32, got.data() + p.offset, first_wrong)),
          int(Decode(infinicclInt32, p.expect.data(), first_wrong)));
  }
}

// Returns the number of results checked.
size_t RunSeed(uint64_t seed, int world_rank, int steps) {
  Seed s(seed, world_rank);
  s.mains.resize(1 + s.Draw(3), nullptr);
  for (auto &c : s.mains) CHECK_RC(infinicclCommInitAll(&c, 0, nullptr), infinicclSuccess);
  s.streams.resize(1 + s.Draw(3), nullptr);
  for (auto &st : s.streams) CHECK(g_dev->StreamCreate(&st).ok());
  MakeSpare(s);
  for (s.step = 0; s.step < steps; ++s.step) {
    const uint32_t kind = s.Draw(100);
    if (kind < 45) {
      StepCollective(s, /*on_device=*/true);
    } else if (kind < 55) {
      StepCollective(s, /*on_device=*/false);
    } else if (kind < 72) {
      StepKernel(s);
    } else if (kind < 82) {
      StepRing(s);
    } else if (kind < 87) {
      CHECK_RC(infinicclMemTrim(), infinicclSuccess);
    } else {
      StepReplaceSpare(s);
    }
  }
  CheckAll(s);
  const size_t checked = s.pending.size();
  if (s.spare != nullptr) CHECK_RC(infinicclCommDestroy(s.spare), infinicclSuccess);
  for (auto &c : s.mains) CHECK_RC(infinicclCommDestroy(c), infinicclSuccess);
  s.pending.clear();
  s.dev_bufs.clear();
  for (auto &st : s.streams) CHECK(g_dev->StreamDestroy(st).ok());
  return checked;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s FIRST_SEED COUNT [STEPS]\n", argv[0]);
    return 2;
  }
  const uint64_t first = std::strtoull(argv[1], nullptr, 10);
  const uint64_t count = std::strtoull(argv[2], nullptr, 10);
  const int steps = argc > 3 ? std::atoi(argv[3]) : 40;
  setenv("INFINICCL_PIPELINE_CHUNK_BYTES", "65536", 0);
  setenv("INFINICCL_STAGING_CACHE_BYTES", "1M", 0);
  if (infinicclInit(&argc, &argv) != infinicclSuccess) return 2;
  EnableSim();
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  g_rank = rank;
  long total = 0;
  for (uint64_t seed = first; seed < first + count; ++seed) {
    const auto t0 = std::chrono::steady_clock::now();
    const size_t checked = RunSeed(seed, rank, steps);
    total = TotalFailures();
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (rank == 0) {
      std::printf("seed %llu: %s (%zu results checked on rank 0, %.0f ms)\n",
                  static_cast<unsigned long long>(seed), total == 0 ? "ok" : "FAILED", checked,
                  ms);
      std::fflush(stdout);
    }
    if (total != 0) break;
  }
  if (rank == 0)
    std::printf("test_random_interleave %llu..%llu: %ld failures\n",
                static_cast<unsigned long long>(first),
                static_cast<unsigned long long>(first + count - 1), total);
  if (infinicclFinalize() != infinicclSuccess) return 1;
  return total == 0 ? 0 : 1;
}
