// MPI calls with size_t counts. With an MPI-4 library (MPICH 4) these are the
// large-count `_c` functions; with MPI-3 (Open MPI 4) a count that fits in an
// int goes straight through, and a larger one is split: element-wise calls
// run in chunks, data-movement calls use one derived datatype that covers the
// whole block. `elem` is the byte size of one element of `type`.
//
// sendbuf may be MPI_IN_PLACE wherever MPI allows it.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <vector>

namespace infiniccl::mpi {

int Allreduce(const void *sendbuf, void *recvbuf, size_t count, MPI_Datatype type,
              size_t elem, MPI_Op op, MPI_Comm comm);
int Reduce(const void *sendbuf, void *recvbuf, size_t count, MPI_Datatype type,
           size_t elem, MPI_Op op, int root, MPI_Comm comm);
int Bcast(void *buf, size_t count, MPI_Datatype type, size_t elem, int root,
          MPI_Comm comm);
int Allgather(const void *sendbuf, void *recvbuf, size_t count, MPI_Datatype type,
              size_t elem, MPI_Comm comm);
int Gather(const void *sendbuf, void *recvbuf, size_t count, MPI_Datatype type,
           size_t elem, int root, MPI_Comm comm);
int Scatter(const void *sendbuf, void *recvbuf, size_t count, MPI_Datatype type,
            size_t elem, int root, MPI_Comm comm);
int Alltoall(const void *sendbuf, void *recvbuf, size_t count, MPI_Datatype type,
             size_t elem, MPI_Comm comm);
// Block-wise reduce-scatter; in place (MPI_IN_PLACE) takes the whole input
// from recvbuf and leaves the result at its start, as MPI defines it.
int ReduceScatterBlock(const void *sendbuf, void *recvbuf, size_t count,
                       MPI_Datatype type, size_t elem, MPI_Op op, MPI_Comm comm);
int Send(const void *buf, size_t count, MPI_Datatype type, size_t elem, int peer,
         int tag, MPI_Comm comm);
// `peer` may be MPI_ANY_SOURCE; `*source` (when not nullptr) receives the
// sender's rank. A receive cut into chunks (MPI-3, above INT_MAX) takes the
// chunks after the first from that first chunk's sender.
int Recv(void *buf, size_t count, MPI_Datatype type, size_t elem, int peer, int tag,
         MPI_Comm comm, int *source = nullptr);
// Whether Isend/Irecv of `count` elements is one message (one request).
bool OneMessage(size_t count);

// One column of a Scatter: at the root, `piece` elements at the start of each
// rank's `count`-element block of sendbuf (sendbuf already points `offset`
// elements into block 0); every rank receives its `piece` elements into
// recvbuf (MPI_IN_PLACE at a root that keeps its block in sendbuf). A
// Scatter cut into such columns moves exactly what the whole call moves.
// `piece` must fit in an int.
int ScatterColumn(const void *sendbuf, void *recvbuf, size_t count, size_t piece,
                  MPI_Datatype type, size_t elem, int root, MPI_Comm comm);

// MPI_Sendrecv of `count` elements (an int count) to `dest` and from
// `source`; when the library serialises its MPI calls, an Irecv and an Isend
// posted under the lock and polled to completion.
int Sendrecv(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, int dest,
             int source, int tag, MPI_Comm comm);

// Nonblocking Send/Recv: the requests they start are appended to `reqs` (one,
// or one per chunk above INT_MAX with MPI-3, cut exactly as Send/Recv cut
// theirs, so a nonblocking side matches a blocking one). On failure the
// requests already started stay in `reqs` for the caller to complete.
int Isend(const void *buf, size_t count, MPI_Datatype type, size_t elem, int peer, int tag,
          MPI_Comm comm, std::vector<MPI_Request> *reqs);
int Irecv(void *buf, size_t count, MPI_Datatype type, size_t elem, int peer, int tag,
          MPI_Comm comm, std::vector<MPI_Request> *reqs);

}  // namespace infiniccl::mpi
