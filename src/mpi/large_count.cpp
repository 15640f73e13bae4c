#include "mpi/large_count.h"

#include <climits>
#include <cstring>
#include <tuple>

#include <atomic>

#include "core/log.h"
#include "core/pieces.h"
#include "mpi/mpi_thread.h"

namespace infiniccl::mpi {

namespace {

// One MPI call: `blocking(args...)`, or, when the library polls its waits
// (serialised or oversubscribed, mpi_thread.h), its nonblocking form
// `nonblocking(args..., &request)` posted (under the lock when serialised)
// and polled to completion.
// Every call here takes its communicator last: a polled wait ends when it is
// revoked (mpi_thread.h, Revocable).
template <typename... Args>
MPI_Comm CommOf(Args... args) {
  return std::get<sizeof...(Args) - 1>(std::make_tuple(args...));
}
template <typename Blocking, typename Nonblocking, typename... Args>
int Call(Blocking blocking, Nonblocking nonblocking, Args... args) {
  if (Polled()) {
    return PostAndWait([&](MPI_Request *q) { return nonblocking(args..., q); },
                       MPI_STATUS_IGNORE, CommOf(args...));
  }
  return blocking(args...);
}

// MPICH before 4.1.3 (pmodels/mpich#6893, fixed by pmodels/mpich#6552 and
// its backport #6916): MPI_Reduce above 2 KiB gives wrong results on a
// communicator spanning several nodes when rank 0 is alone on its node and
// another node holds several ranks (found by tests/nodes at 1,2,3 ranks per
// node). MPI_Ireduce takes another algorithm and is right, so Reduce is
// always posted nonblocking there.
#if defined(MPICH_NUMVERSION) && MPICH_NUMVERSION < 40103300
constexpr bool kReduceNonblocking = true;
#else
constexpr bool kReduceNonblocking = false;
#endif

// Reduce: Call, or under kReduceNonblocking the nonblocking form waited for.
template <typename Blocking, typename Nonblocking, typename... Args>
int ReduceCall(Blocking blocking, Nonblocking nonblocking, Args... args) {
  if (!kReduceNonblocking || Polled()) return Call(blocking, nonblocking, args...);
  static std::atomic<bool> said{false};
  if (!said.exchange(true)) {
    INFINICCL_INFO("MPICH before 4.1.3: MPI_Reduce runs as MPI_Ireduce + MPI_Wait "
                   "(known wrong results across nodes, pmodels/mpich#6893)");
  }
  MPI_Request q = MPI_REQUEST_NULL;
  const int rc = nonblocking(args..., &q);
  return rc != MPI_SUCCESS ? rc : MPI_Wait(&q, MPI_STATUS_IGNORE);
}

// A nonblocking call, post(args..., &request), posted under the lock; its
// request joins `reqs` (the wait is polled, mpi_thread.h).
template <typename Post, typename... Args>
int Posted(std::vector<MPI_Request> *reqs, Post post, Args... args) {
  SerialLock lock;
  MPI_Request r = MPI_REQUEST_NULL;
  const int rc = post(args..., &r);
  if (rc == MPI_SUCCESS) reqs->push_back(r);
  return rc;
}

}  // namespace

#if MPI_VERSION >= 4

// MPI-4: every call takes MPI_Count directly.
int Allreduce(const void *s, void *r, size_t n, MPI_Datatype t, size_t, MPI_Op op,
              MPI_Comm c) {
  const MPI_Count k = static_cast<MPI_Count>(n);
  return Call(MPI_Allreduce_c, MPI_Iallreduce_c, s, r, k, t, op, c);
}
int Reduce(const void *s, void *r, size_t n, MPI_Datatype t, size_t, MPI_Op op, int root,
           MPI_Comm c) {
  const MPI_Count k = static_cast<MPI_Count>(n);
  return ReduceCall(MPI_Reduce_c, MPI_Ireduce_c, s, r, k, t, op, root, c);
}
int Bcast(void *b, size_t n, MPI_Datatype t, size_t, int root, MPI_Comm c) {
  const MPI_Count k = static_cast<MPI_Count>(n);
  return Call(MPI_Bcast_c, MPI_Ibcast_c, b, k, t, root, c);
}
int Allgather(const void *s, void *r, size_t n, MPI_Datatype t, size_t, MPI_Comm c) {
  const MPI_Count k = static_cast<MPI_Count>(n);
  return Call(MPI_Allgather_c, MPI_Iallgather_c, s, k, t, r, k, t, c);
}
int Gather(const void *s, void *r, size_t n, MPI_Datatype t, size_t, int root,
           MPI_Comm c) {
  const MPI_Count k = static_cast<MPI_Count>(n);
  return Call(MPI_Gather_c, MPI_Igather_c, s, k, t, r, k, t, root, c);
}
int Scatter(const void *s, void *r, size_t n, MPI_Datatype t, size_t, int root,
            MPI_Comm c) {
  const MPI_Count k = static_cast<MPI_Count>(n);
  return Call(MPI_Scatter_c, MPI_Iscatter_c, s, k, t, r, k, t, root, c);
}
int Alltoall(const void *s, void *r, size_t n, MPI_Datatype t, size_t, MPI_Comm c) {
  const MPI_Count k = static_cast<MPI_Count>(n);
  return Call(MPI_Alltoall_c, MPI_Ialltoall_c, s, k, t, r, k, t, c);
}
int ReduceScatterBlock(const void *s, void *r, size_t n, MPI_Datatype t, size_t,
                       MPI_Op op, MPI_Comm c) {
  const MPI_Count k = static_cast<MPI_Count>(n);
  return Call(MPI_Reduce_scatter_block_c, MPI_Ireduce_scatter_block_c, s, r, k, t, op, c);
}
// Send and Recv are posted and completed by WaitP2p: a revoke ends them.
int Send(const void *b, size_t n, MPI_Datatype t, size_t, int peer, int tag, MPI_Comm c) {
  const MPI_Count k = static_cast<MPI_Count>(n);
  return PostAndWaitP2p(
      [&](MPI_Request *q) { return MPI_Isend_c(b, k, t, peer, tag, c, q); },
      MPI_STATUS_IGNORE, c);
}
int Recv(void *b, size_t n, MPI_Datatype t, size_t, int peer, int tag, MPI_Comm c,
         int *source) {
  const MPI_Count k = static_cast<MPI_Count>(n);
  MPI_Status status;
  const int rc = PostAndWaitP2p(
      [&](MPI_Request *q) { return MPI_Irecv_c(b, k, t, peer, tag, c, q); }, &status, c);
  if (rc == MPI_SUCCESS && source != nullptr) *source = status.MPI_SOURCE;
  return rc;
}
bool OneMessage(size_t) { return true; }
int Isend(const void *b, size_t n, MPI_Datatype t, size_t, int peer, int tag, MPI_Comm c,
          std::vector<MPI_Request> *reqs) {
  return Posted(reqs, MPI_Isend_c, b, static_cast<MPI_Count>(n), t, peer, tag, c);
}
int Irecv(void *b, size_t n, MPI_Datatype t, size_t, int peer, int tag, MPI_Comm c,
          std::vector<MPI_Request> *reqs) {
  return Posted(reqs, MPI_Irecv_c, b, static_cast<MPI_Count>(n), t, peer, tag, c);
}

#else  // MPI-3

namespace {

// Chunks are a power of two so that every chunk but the last stays aligned.
constexpr size_t kChunk = size_t{1} << 30;

// The int-count MPI calls: blocking, or posted and polled when serialised
// (mpi_thread.h).
namespace i32 {
int Allreduce(const void *s, void *r, int k, MPI_Datatype t, MPI_Op op, MPI_Comm c) {
  return Call(MPI_Allreduce, MPI_Iallreduce, s, r, k, t, op, c);
}
int Reduce(const void *s, void *r, int k, MPI_Datatype t, MPI_Op op, int root,
           MPI_Comm c) {
  return ReduceCall(MPI_Reduce, MPI_Ireduce, s, r, k, t, op, root, c);
}
int Bcast(void *b, int k, MPI_Datatype t, int root, MPI_Comm c) {
  return Call(MPI_Bcast, MPI_Ibcast, b, k, t, root, c);
}
int Allgather(const void *s, int sk, MPI_Datatype st, void *r, int rk, MPI_Datatype rt,
              MPI_Comm c) {
  return Call(MPI_Allgather, MPI_Iallgather, s, sk, st, r, rk, rt, c);
}
int Gather(const void *s, int sk, MPI_Datatype st, void *r, int rk, MPI_Datatype rt,
           int root, MPI_Comm c) {
  return Call(MPI_Gather, MPI_Igather, s, sk, st, r, rk, rt, root, c);
}
int Scatter(const void *s, int sk, MPI_Datatype st, void *r, int rk, MPI_Datatype rt,
            int root, MPI_Comm c) {
  return Call(MPI_Scatter, MPI_Iscatter, s, sk, st, r, rk, rt, root, c);
}
int Alltoall(const void *s, int sk, MPI_Datatype st, void *r, int rk, MPI_Datatype rt,
             MPI_Comm c) {
  return Call(MPI_Alltoall, MPI_Ialltoall, s, sk, st, r, rk, rt, c);
}
int ReduceScatterBlock(const void *s, void *r, int k, MPI_Datatype t, MPI_Op op,
                       MPI_Comm c) {
  return Call(MPI_Reduce_scatter_block, MPI_Ireduce_scatter_block, s, r, k, t, op, c);
}
// Send and Recv are posted and completed by WaitP2p: a revoke ends them.
int Send(const void *b, int k, MPI_Datatype t, int peer, int tag, MPI_Comm c) {
  return PostAndWaitP2p(
      [&](MPI_Request *q) { return MPI_Isend(b, k, t, peer, tag, c, q); }, MPI_STATUS_IGNORE,
      c);
}
int Recv(void *b, int k, MPI_Datatype t, int peer, int tag, MPI_Comm c, MPI_Status *status) {
  return PostAndWaitP2p(
      [&](MPI_Request *q) { return MPI_Irecv(b, k, t, peer, tag, c, q); }, status, c);
}
}  // namespace i32

bool FitsInt(size_t n) {
  return n <= static_cast<size_t>(INT_MAX);
}

const void *Offset(const void *p, size_t bytes) {
  if (p == MPI_IN_PLACE) return p;
  return static_cast<const char *>(p) + bytes;
}
void *Offset(void *p, size_t bytes) {
  if (p == MPI_IN_PLACE) return p;
  return static_cast<char *>(p) + bytes;
}

// One committed datatype describing `n` consecutive elements of `t`; freed on
// scope exit. Only built for counts above INT_MAX.
class BigType {
 public:
  BigType(size_t n, MPI_Datatype t, size_t elem) {
    SerialLock lock;
    const size_t q = n / kChunk, r = n % kChunk;
    MPI_Datatype blocks = MPI_DATATYPE_NULL, rest = MPI_DATATYPE_NULL, whole;
    rc_ = MPI_Type_vector(static_cast<int>(q), static_cast<int>(kChunk),
                          static_cast<int>(kChunk), t, &blocks);
    if (rc_ != MPI_SUCCESS) return;
    rc_ = MPI_Type_contiguous(static_cast<int>(r), t, &rest);
    if (rc_ == MPI_SUCCESS) {
      int lens[2] = {1, 1};
      MPI_Aint disps[2] = {0, static_cast<MPI_Aint>(q * kChunk * elem)};
      MPI_Datatype types[2] = {blocks, rest};
      rc_ = MPI_Type_create_struct(2, lens, disps, types, &whole);
      if (rc_ == MPI_SUCCESS) {
        rc_ = MPI_Type_create_resized(whole, 0, static_cast<MPI_Aint>(n * elem), &type_);
        MPI_Type_free(&whole);
        if (rc_ == MPI_SUCCESS) rc_ = MPI_Type_commit(&type_);
      }
      MPI_Type_free(&rest);
    }
    MPI_Type_free(&blocks);
  }
  ~BigType() {
    SerialLock lock;
    if (type_ != MPI_DATATYPE_NULL) MPI_Type_free(&type_);
  }
  BigType(const BigType &) = delete;
  BigType &operator=(const BigType &) = delete;
  int rc() const { return rc_; }
  MPI_Datatype type() const { return type_; }

 private:
  int rc_ = MPI_SUCCESS;
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
};

// Runs fn(offset_elems, chunk_elems) over [0, n) in chunks; stops at the
// first error.
template <typename Fn>
int Chunked(size_t n, Fn fn) {
  for (const Piece chunk : Pieces(n, kChunk)) {
    const int rc = fn(chunk.offset, chunk.size);
    if (rc != MPI_SUCCESS) return rc;
  }
  return MPI_SUCCESS;
}

// A data-movement call, call(s, count, type, r, count, type, rest...), on `n`
// elements of `t`: as it is when `n` fits in an int, else with one derived
// datatype covering all `n`.
template <typename Call, typename... Rest>
int Moved(Call call, const void *s, void *r, size_t n, MPI_Datatype t, size_t elem,
          Rest... rest) {
  if (FitsInt(n)) {
    const int k = static_cast<int>(n);
    return call(s, k, t, r, k, t, rest...);
  }
  BigType big(n, t, elem);
  if (big.rc() != MPI_SUCCESS) return big.rc();
  return call(s, 1, big.type(), r, 1, big.type(), rest...);
}

}  // namespace

int Allreduce(const void *s, void *r, size_t n, MPI_Datatype t, size_t elem, MPI_Op op,
              MPI_Comm c) {
  if (FitsInt(n)) return i32::Allreduce(s, r, static_cast<int>(n), t, op, c);
  return Chunked(n, [&](size_t off, size_t k) {
    return i32::Allreduce(Offset(s, off * elem), Offset(r, off * elem),
                          static_cast<int>(k), t, op, c);
  });
}

int Reduce(const void *s, void *r, size_t n, MPI_Datatype t, size_t elem, MPI_Op op,
           int root, MPI_Comm c) {
  if (FitsInt(n)) return i32::Reduce(s, r, static_cast<int>(n), t, op, root, c);
  return Chunked(n, [&](size_t off, size_t k) {
    void *rr = r == nullptr ? nullptr : Offset(r, off * elem);
    return i32::Reduce(Offset(s, off * elem), rr, static_cast<int>(k), t, op, root, c);
  });
}

int Bcast(void *b, size_t n, MPI_Datatype t, size_t elem, int root, MPI_Comm c) {
  if (FitsInt(n)) return i32::Bcast(b, static_cast<int>(n), t, root, c);
  return Chunked(n, [&](size_t off, size_t k) {
    return i32::Bcast(Offset(b, off * elem), static_cast<int>(k), t, root, c);
  });
}

int Allgather(const void *s, void *r, size_t n, MPI_Datatype t, size_t elem, MPI_Comm c) {
  return Moved(i32::Allgather, s, r, n, t, elem, c);
}

int Gather(const void *s, void *r, size_t n, MPI_Datatype t, size_t elem, int root,
           MPI_Comm c) {
  return Moved(i32::Gather, s, r, n, t, elem, root, c);
}

int Scatter(const void *s, void *r, size_t n, MPI_Datatype t, size_t elem, int root,
            MPI_Comm c) {
  return Moved(i32::Scatter, s, r, n, t, elem, root, c);
}

int Alltoall(const void *s, void *r, size_t n, MPI_Datatype t, size_t elem, MPI_Comm c) {
  return Moved(i32::Alltoall, s, r, n, t, elem, c);
}

int ReduceScatterBlock(const void *s, void *r, size_t n, MPI_Datatype t, size_t elem,
                       MPI_Op op, MPI_Comm c) {
  if (FitsInt(n)) {
    return i32::ReduceScatterBlock(s, r, static_cast<int>(n), t, op, c);
  }
  // Predefined ops cannot reduce derived datatypes, so reduce block by block
  // to its owner, in chunks. In place, the input is in recvbuf and the owner's
  // result goes to the start of recvbuf, as MPI_Reduce_scatter_block does.
  int rank = 0, size = 0;
  {
    SerialLock lock;
    MPI_Comm_rank(c, &rank);
    MPI_Comm_size(c, &size);
  }
  const bool in_place = s == MPI_IN_PLACE;
  const char *input = static_cast<const char *>(in_place ? r : s);
  for (int b = 0; b < size; ++b) {
    const char *block = input + static_cast<size_t>(b) * n * elem;
    const int rc = Chunked(n, [&](size_t off, size_t k) {
      const void *send = block + off * elem;
      void *recv = static_cast<char *>(r) + off * elem;
      if (b == rank && in_place) {
        // Own block is input and output: reduce in place, then move it to
        // the front below.
        send = MPI_IN_PLACE;
        recv = const_cast<char *>(block) + off * elem;
      }
      return i32::Reduce(send, b == rank ? recv : nullptr, static_cast<int>(k), t, op, b,
                         c);
    });
    if (rc != MPI_SUCCESS) return rc;
  }
  if (in_place && rank != 0) {
    std::memmove(r, input + static_cast<size_t>(rank) * n * elem, n * elem);
  }
  return MPI_SUCCESS;
}

int Send(const void *b, size_t n, MPI_Datatype t, size_t elem, int peer, int tag,
         MPI_Comm c) {
  if (FitsInt(n)) return i32::Send(b, static_cast<int>(n), t, peer, tag, c);
  return Chunked(n, [&](size_t off, size_t k) {
    return i32::Send(Offset(b, off * elem), static_cast<int>(k), t, peer, tag, c);
  });
}

int Recv(void *b, size_t n, MPI_Datatype t, size_t elem, int peer, int tag, MPI_Comm c,
         int *source) {
  MPI_Status status;
  if (FitsInt(n)) {
    const int rc = i32::Recv(b, static_cast<int>(n), t, peer, tag, c, &status);
    if (rc == MPI_SUCCESS && source != nullptr) *source = status.MPI_SOURCE;
    return rc;
  }
  // From any source: the first chunk's sender sends the rest.
  int from = peer;
  const int rc = Chunked(n, [&](size_t off, size_t k) {
    const int r = i32::Recv(Offset(b, off * elem), static_cast<int>(k), t, from, tag, c,
                            &status);
    if (r == MPI_SUCCESS) from = status.MPI_SOURCE;
    return r;
  });
  if (rc == MPI_SUCCESS && source != nullptr) *source = from;
  return rc;
}

bool OneMessage(size_t n) { return FitsInt(n); }

int Isend(const void *b, size_t n, MPI_Datatype t, size_t elem, int peer, int tag,
          MPI_Comm c, std::vector<MPI_Request> *reqs) {
  return Chunked(n, [&](size_t off, size_t k) {
    return Posted(reqs, MPI_Isend, Offset(b, off * elem), static_cast<int>(k), t, peer,
                  tag, c);
  });
}

int Irecv(void *b, size_t n, MPI_Datatype t, size_t elem, int peer, int tag, MPI_Comm c,
          std::vector<MPI_Request> *reqs) {
  return Chunked(n, [&](size_t off, size_t k) {
    return Posted(reqs, MPI_Irecv, Offset(b, off * elem), static_cast<int>(k), t, peer,
                  tag, c);
  });
}

#endif

int Sendrecv(const void *s, void *r, int k, MPI_Datatype t, int dest, int source, int tag,
             MPI_Comm c) {
  if (!Polled()) {
    return MPI_Sendrecv(s, k, t, dest, tag, r, k, t, source, tag, c, MPI_STATUS_IGNORE);
  }
  MPI_Request q[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  int rc;
  {
    SerialLock lock;
    rc = MPI_Irecv(r, k, t, source, tag, c, &q[0]);
    if (rc == MPI_SUCCESS) rc = MPI_Isend(s, k, t, dest, tag, c, &q[1]);
    if (rc != MPI_SUCCESS && q[0] != MPI_REQUEST_NULL) {
      // The send was never posted: take the receive back rather than wait.
      MPI_Cancel(&q[0]);
      MPI_Wait(&q[0], MPI_STATUS_IGNORE);
    }
  }
  for (MPI_Request &one : q) {
    if (rc != MPI_SUCCESS) break;
    rc = WaitPolled(&one, MPI_STATUS_IGNORE, c);
  }
  return rc;
}

int ScatterColumn(const void *s, void *r, size_t count, size_t piece, MPI_Datatype t,
                  size_t elem, int root, MPI_Comm c) {
  if (piece > static_cast<size_t>(INT_MAX)) return MPI_ERR_COUNT;
  const int k = static_cast<int>(piece);
  // `piece` elements, then a gap to the next block: one of these per rank.
  MPI_Datatype column = MPI_DATATYPE_NULL, contiguous = MPI_DATATYPE_NULL;
  int rc;
  {
    SerialLock lock;
    rc = MPI_Type_contiguous(k, t, &contiguous);
    if (rc == MPI_SUCCESS) {
      rc = MPI_Type_create_resized(contiguous, 0, static_cast<MPI_Aint>(count * elem),
                                   &column);
      MPI_Type_free(&contiguous);
    }
    if (rc == MPI_SUCCESS) rc = MPI_Type_commit(&column);
  }
  if (rc == MPI_SUCCESS) rc = Call(MPI_Scatter, MPI_Iscatter, s, 1, column, r, k, t, root, c);
  if (column != MPI_DATATYPE_NULL) {
    SerialLock lock;
    MPI_Type_free(&column);
  }
  return rc;
}

}  // namespace infiniccl::mpi
