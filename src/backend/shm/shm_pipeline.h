// The chunk pipeline of the shared-memory collectives: where a call's
// buffers live (Place), the copies of one phase (Copies), one call's state
// (Call), and the skeleton most collectives run (RunChunks): each chunk
// waits for its stage to be free, copies in, arrives (the first chunk meets:
// descriptors compared), waits for the ranks it reads, reduces or copies
// out, and posts every counter past the chunk. Each collective is a small
// policy over it (coll/); AllReduce, pipelined one chunk deep and with the
// landing, runs its own loop on the same pieces. The protocol:
// docs/architecture/shared-memory.md.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "backend/shm/shm_channel.h"
#include "core/coll_args.h"
#include "core/status.h"
#include "device/device_runtime.h"

namespace infiniccl {
namespace shm {

// Where a buffer of a call lives, and so how it meets the segment.
enum class Place {
  kHost,          // host memory: memcpy, and the reduction reads or writes it in place
  kDeviceStaged,  // device memory, copied by the device runtime into and out of the
                  // stages on the call's stream, finished before the call returns
  kDeviceLanded,  // device memory already copied into the rank's landing area on the
                  // caller's stream (Landing::In); the result is left there for
                  // Landing::Out. An AllReduce of one stage at most, both buffers.
};
inline bool OnDevice(Place p) { return p != Place::kHost; }

// The device copies one call made (for the staging statistics).
struct CopyCounts {
  size_t d2h = 0, d2h_bytes = 0, h2d = 0, h2d_bytes = 0;
};

// The copies of a call: memcpy between host buffers, else the device
// runtime's: the copies from the device on the call's stream, those to the
// device on the copy-out stream (CopyOutStream), so that a chunk's copy in
// and the copy out of the chunk before it run at once. Finish() waits for
// both. The first copy out of a call comes after the call's stream has
// passed everything queued on it before the call. A call that ends early
// (an error, a peer that left) still waits for the copies it queued: none
// writes the receive buffer or reads a stage after the call has returned.
class Copies {
 public:
  Copies(DeviceRuntime *device, void *stream, CopyCounts *counts)
      : device_(device), stream_(stream), counts_(counts) {}
  ~Copies() {
    if (pending_in_ || pending_out_) (void)Finish();
  }
  Copies(const Copies &) = delete;
  Copies &operator=(const Copies &) = delete;
  Status Copy(void *dst, const void *src, size_t bytes, bool dst_dev, bool src_dev);
  Status Finish();

 private:
  DeviceRuntime *device_;
  void *stream_;
  void *out_ = nullptr;  // the copy-out stream, once a copy to the device came
  CopyCounts *counts_;
  bool pending_in_ = false, pending_out_ = false;
  bool ordered_ = false;  // the call's stream was synchronized in this call
};

// Per-rank scratch a backend keeps: no allocation per call.
struct Scratch {
  std::vector<const void *> sources;  // the inputs of one reduction, rank by rank
  std::vector<char> in_landing;       // AllReduce: whether rank j's chunk is in its landing area
};

// One call on the channel.
struct Call {
  Call(Channel &channel, const CollArgs &args, Place send_place, Place recv_place,
       DeviceRuntime *device, CopyCounts *counts, Scratch &scratch);
  Channel &ch;
  const CollArgs &a;
  const Place send, recv;
  const bool send_dev, recv_dev;  // OnDevice(send), OnDevice(recv)
  // Whether a buffer is device memory staged through the stages.
  bool Staged() const { return send == Place::kDeviceStaged || recv == Place::kDeviceStaged; }
  const size_t elem;              // bytes of one element
  const char *const in;           // a.sendbuff
  char *const out;                // a.recvbuff
  const int divisor;              // of Avg: a.avg_divisor, or the ranks
  Copies copies;
  Scratch &scratch;
};

// memcpy with streaming (non-temporal) stores where the target has them
// (the lines go to memory without being read into this core's cache, so a
// line another core still holds is not taken from it line by line), and
// plain memcpy.
void StreamCopy(char *dst, const char *src, size_t bytes);
void CacheCopy(char *dst, const char *src, size_t bytes);

// Slices of a chunk of n elements among `size` ranks: whole cache lines,
// the last ones possibly short or empty.
struct Slices {
  size_t n, q;
  Slices(size_t elems, int size, size_t elem) : n(elems) {
    const size_t align = std::max<size_t>(1, 64 / elem);  // elements of a cache line
    q = (elems + static_cast<size_t>(size) - 1) / static_cast<size_t>(size);
    q = (q + align - 1) / align * align;
  }
  size_t lo(int j) const { return std::min(n, q * static_cast<size_t>(j)); }
  size_t len(int j) const { return lo(j + 1) - lo(j); }
};

// One chunk of a call: elements [at, at + n) of each block, chunk number g.
struct Chunk {
  size_t at, n;
  uint32_t g;
  bool first;  // the call's first chunk: where the ranks meet
};

// What most policies start from: a chunk of one stage of elements, and
// whether this rank is the call's root (the rooted kinds).
struct WholeStagePolicy {
  explicit WholeStagePolicy(const Call &c)
      : cap(c.ch.ChunkBytes(c.a.count * c.elem, c.Staged()) / c.elem),
        root(c.ch.rank() == c.a.root) {}
  size_t cap;
  bool root;
};

// Copies this rank's input of chunk k (the chunk's range of sendbuff) into
// its stage.
inline Status CopyInput(Call &c, const Chunk &k) {
  return c.copies.Copy(c.ch.Stage(c.ch.rank(), k.g), c.in + k.at * c.elem, k.n * c.elem, false,
                       c.send_dev);
}

// Whom a rank waits for at a chunk after the first, once it has arrived
// (at the first every rank waits for every other: Channel::Meet).
enum class Await { kAll, kRoot, kNone };

// A collective's policy for RunChunks, made from the call:
//   explicit Policy(const Call &);
//   size_t cap;                          elements of each block per chunk
//   Status In(Call &, const Chunk &);    the copies into the own stage
//   bool Posts() const;                  whether this rank posts its arrival
//                                        at later chunks
//   Await Waits() const;                 whom it waits for at later chunks
//   Status Out(Call &, const Chunk &);   reads the arrived stages
// Each chunk: its stage is free once every rank is done with the chunk two
// before (done >= g - 1); the copies finish before the arrival and before
// done is posted.
template <class Policy>
Status RunChunks(Call &c) {
  Policy p(c);
  Channel &ch = c.ch;
  for (size_t at = 0; at < c.a.count; at += p.cap) {
    const Chunk k{at, c.a.count - at < p.cap ? c.a.count - at : p.cap, ch.Take(1), at == 0};
    INFINICCL_RETURN_IF_ERROR(ch.WaitAll(kDone, k.g - 1, c.a));
    INFINICCL_RETURN_IF_ERROR(p.In(c, k));
    INFINICCL_RETURN_IF_ERROR(c.copies.Finish());
    if (k.first) {
      ch.Describe(c.a, k.g);
      ch.Post(kArrived, k.g + 1);
      INFINICCL_RETURN_IF_ERROR(ch.Meet(c.a, k.g));
    } else {
      if (p.Posts()) ch.Post(kArrived, k.g + 1);
      switch (p.Waits()) {
        case Await::kAll: INFINICCL_RETURN_IF_ERROR(ch.WaitAll(kArrived, k.g + 1, c.a)); break;
        case Await::kRoot:
          INFINICCL_RETURN_IF_ERROR(ch.WaitOne(c.a.root, kArrived, k.g + 1, c.a));
          break;
        case Await::kNone: break;
      }
    }
    INFINICCL_RETURN_IF_ERROR(p.Out(c, k));
    INFINICCL_RETURN_IF_ERROR(c.copies.Finish());
    ch.PostAll(k.g + 1);
  }
  return Status::Ok();
}

}  // namespace shm
}  // namespace infiniccl
