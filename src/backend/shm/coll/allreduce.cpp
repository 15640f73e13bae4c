// AllReduce. Each chunk: copy in (all but the own slice, which the rank
// reads from its own buffer, unless that is device memory), each rank
// reduces its slice over every rank's copy into its own stage, then every
// rank copies all the reduced slices out. Pipelined one chunk deep: the
// copy in of chunk k+1 is issued before chunk k is reduced, and chunk k's
// copies out finish while chunk k+1 is reduced, so device copies overlap
// the reduction.
//
// A call of one chunk takes its window of the stage (Window), and marks
// whether its input landed (Place::kDeviceLanded: in the landing area,
// shm_landing.h): each rank reads every other rank's input where it is, and
// writes its slice of the result into the landing area of each rank whose
// input landed, so that no rank reads another's landing area once the
// reduction is done.
#include <cstring>

#include "backend/shm/coll/collectives.h"
#include "core/reduce.h"

namespace infiniccl {
namespace shm {

size_t Window(size_t bytes, uint32_t chunk) {
  constexpr size_t kPage = 4096;
  if (bytes < kRotateFromBytes || bytes > kRotateToBytes) return 0;
  const size_t width = (bytes + kPage - 1) / kPage * kPage;
  return (chunk >> 1) % (Channel::kStageBytes / width) * width;
}

Status AllReduce(Call &c) {
  Channel &ch = c.ch;
  const CollArgs &a = c.a;
  const int me = ch.rank(), size = ch.size();
  const size_t elem = c.elem;
  const size_t cap = ch.ChunkBytes(a.count * elem, c.Staged()) / elem;
  const bool landed = c.send == Place::kDeviceLanded;
  const size_t chunks = (a.count + cap - 1) / cap;
  const uint32_t first = ch.Take(chunks);
  const size_t window = chunks == 1 ? Window(a.count * elem, first) : 0;
  if (chunks == 1) ch.MarkInput(first, landed);
  // Where rank j's input of chunk g is, and where its slice of the result
  // goes.
  const auto input_of = [&](int j, uint32_t g, bool in_landing) {
    return in_landing ? ch.Landing(j) : ch.Stage(j, g, window);
  };
  const auto copy_in = [&](size_t k) -> Status {
    if (landed) return Status::Ok();  // Landing::In's copy, on the caller's stream
    const size_t at = k * cap, n = std::min(cap, a.count - at), off = at * elem;
    char *stage = ch.Stage(me, first + static_cast<uint32_t>(k), window);
    if (c.send_dev) return c.copies.Copy(stage, c.in + off, n * elem, false, true);
    const Slices s(n, size, elem);
    const size_t lo = s.lo(me) * elem, hi = s.lo(me + 1) * elem;
    const auto copy = chunks > kStreamFromChunks ? StreamCopy : CacheCopy;
    copy(stage, c.in + off, lo);
    copy(stage + hi, c.in + off + hi, n * elem - hi);
    return Status::Ok();
  };
  std::vector<char> &in_landing = c.scratch.in_landing;
  int landed_ranks = 0;  // of the last chunk: how many ranks' inputs are in their landing areas
  INFINICCL_RETURN_IF_ERROR(ch.WaitAll(kDone, first - 1, a));
  INFINICCL_RETURN_IF_ERROR(copy_in(0));
  for (size_t k = 0; k < chunks; ++k) {
    const size_t at = k * cap, n = std::min(cap, a.count - at), off = at * elem;
    const uint32_t g = first + static_cast<uint32_t>(k);
    const Slices s(n, size, elem);
    // Chunk k is in; chunk k-1's copies out are done.
    INFINICCL_RETURN_IF_ERROR(c.copies.Finish());
    if (k > 0) ch.Post(kDone, g);
    // Just before the arrival, into its line: one transfer of the line to
    // this core for both (a peer may be polling it).
    if (k == 0) ch.Describe(a, first);
    ch.Post(kArrived, g + 1);
    if (k + 1 < chunks) {
      // The next chunk's stage is free once every rank is done with k-1.
      INFINICCL_RETURN_IF_ERROR(ch.WaitAll(kDone, g, a));
      INFINICCL_RETURN_IF_ERROR(copy_in(k + 1));
    }
    if (k == 0) {
      Status met = ch.Meet(a, first);
      if (!met.ok()) {
        (void)c.copies.Finish();  // the next chunk's copy in, into the own stage
        return met;
      }
    } else {
      INFINICCL_RETURN_IF_ERROR(ch.WaitAll(kArrived, g + 1, a));
    }
    const size_t slice = s.lo(me) * elem;
    landed_ranks = 0;
    for (int j = 0; j < size; ++j) {
      const bool there = j == me ? landed : chunks == 1 && ch.InputLanded(j, g);
      in_landing[static_cast<size_t>(j)] = there;
      landed_ranks += there ? 1 : 0;
      c.scratch.sources[static_cast<size_t>(j)] =
          j == me && !c.send_dev ? c.in + off + slice : input_of(j, g, there) + slice;
    }
    // Into the own stage or landing area for the others; a host recvbuff
    // gets it at once, else the first other rank that landed.
    char *mine = input_of(me, g, landed) + slice;
    int pushed = -1;
    char *also = c.recv_dev ? nullptr : c.out + off + slice;
    for (int j = 0; also == nullptr && j < size; ++j) {
      if (j != me && in_landing[static_cast<size_t>(j)]) {
        pushed = j;
        also = ch.Landing(j) + slice;
      }
    }
    ReduceInto(mine, c.scratch.sources.data(), size, s.len(me), a.dtype, a.op, c.divisor, also);
    for (int j = 0; landed_ranks > 0 && j < size; ++j) {
      if (j != me && j != pushed && in_landing[static_cast<size_t>(j)]) {
        std::memcpy(ch.Landing(j) + slice, mine, s.len(me) * elem);
      }
    }
    ch.Post(kReduced, g + 1);
    INFINICCL_RETURN_IF_ERROR(ch.WaitAll(kReduced, g + 1, a));
    if (landed) continue;  // every slice is in the landing area: Landing::Out copies it out
    for (int j = 0; j < size; ++j) {
      if (j == me && !c.recv_dev) continue;
      const size_t lo = s.lo(j) * elem;
      INFINICCL_RETURN_IF_ERROR(
          c.copies.Copy(c.out + off + lo, input_of(j, g, in_landing[static_cast<size_t>(j)]) + lo,
                        s.len(j) * elem, c.recv_dev, false));
    }
  }
  INFINICCL_RETURN_IF_ERROR(c.copies.Finish());
  ch.PostAll(first + static_cast<uint32_t>(chunks));
  // A rank that did not land read this landing area's slice of the result:
  // the next call's copy in (on the stream, not waiting for the ranks)
  // must come after that.
  if (landed && landed_ranks < size) INFINICCL_RETURN_IF_ERROR(ch.WaitAll(kDone, first + 1, a));
  return Status::Ok();
}

}  // namespace shm
}  // namespace infiniccl
