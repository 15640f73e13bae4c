// AllReduce through shared memory, call after call, over the sizes where a
// one-chunk call works in a window of its stage that moves on with every
// call (backend/shm/coll/allreduce.cpp: Window) and where a call of more than four chunks copies
// in with streaming stores (backend/shm/coll/collectives.h: kStreamFromChunks): windowed sizes
// (32-256 KiB, odd counts among them) between sizes that are not (below 32
// KiB, one whole stage, four stages, more), in place and out of place, in
// float32, bfloat16 and int64, for more calls than a stage has windows, so
// windows wrap around and a stage is written while the other ranks may
// still read the other one. Every element of every result is compared
// exactly with a sum computed here.
//
//   test_shm_windows [rounds=3]     (run with INFINICCL_SHM=1)
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "test_util.h"

using namespace itest;

namespace {

// Rank r's element i in call k: a small integer, exact in every type here
// (the sum over 4 ranks stays below 256, exact in bfloat16).
int64_t Value(int r, size_t i, int k) { return static_cast<int64_t>((r + 1) * ((i + k) % 7 + 1)); }

struct Type {
  infinicclDataType_t dt;
  const char *name;
  size_t size;
};

}  // namespace

int main(int argc, char **argv) {
  if (infinicclInit(&argc, &argv) != infinicclSuccess) return 1;
  int rank = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  g_rank = rank;
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 3;
  infinicclComm_t comm = nullptr;
  CHECK_RC(infinicclCommInitAll(&comm, 1, nullptr), infinicclSuccess);
  const Type types[] = {{infinicclFloat32, "float32", 4},
                        {infinicclBFloat16, "bfloat16", 2},
                        {infinicclInt64, "int64", 8}};
  // Bytes a call: windowed (32 KiB to 256 KiB) and not, in an order that
  // alternates them; four chunks (normal stores) and more (streaming).
  const size_t sizes[] = {size_t{64} << 10,       size_t{32} << 10,  (size_t{100} << 10) + 24,
                          size_t{8} << 10,        size_t{256} << 10, (size_t{33} << 10) + 8,
                          (size_t{1} << 20) + 64, size_t{1} << 20,   (size_t{160} << 10) + 40,
                          (size_t{4} << 20) + 64, size_t{4} << 20,   (size_t{7} << 20) + 24};
  long calls = 0;
  for (int round = 0; round < rounds; ++round) {
    for (const Type &t : types) {
      for (int rep = 0; rep < 12; ++rep) {
        for (size_t bytes : sizes) {
          const size_t count = bytes / t.size;
          const int k = static_cast<int>(calls++ % 1000);
          const bool inplace = (rep + k) % 2 == 0;
          std::vector<unsigned char> send(count * t.size), recv(count * t.size, 0xAB);
          for (size_t i = 0; i < count; ++i) {
            Encode(t.dt, send.data(), i, static_cast<double>(Value(rank, i, k)));
          }
          void *out = inplace ? send.data() : recv.data();
          CHECK_RC(infinicclAllReduce(send.data(), out, count, t.dt, infinicclSum, comm, nullptr),
                   infinicclSuccess);
          long wrong = 0;
          size_t first = 0;
          for (size_t i = 0; i < count; ++i) {
            int64_t want = 0;
            for (int r = 0; r < n; ++r) want += Value(r, i, k);
            if (Decode(t.dt, out, i) != static_cast<double>(want)) {
              if (wrong++ == 0) first = i;
            }
          }
          CHECK(wrong == 0, "%s, %zu bytes, call %ld, %s: %ld of %zu elements wrong, the first at %zu",
                t.name, bytes, calls, inplace ? "in place" : "out of place", wrong, count, first);
        }
      }
    }
  }
  CHECK_RC(infinicclCommDestroy(comm), infinicclSuccess);
  const long failures = TotalFailures();
  if (rank == 0) {
    std::printf("[rank 0] %ld AllReduce calls a rank, %s\n", calls, failures == 0 ? "ok" : "FAILED");
  }
  infinicclFinalize();
  return failures == 0 ? 0 : 1;
}
