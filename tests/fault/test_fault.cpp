// The program the fault harness (fault_harness.py) runs under mpirun.
//
//   test_fault loop [seconds [rank]]
//                                   AllReduce in a loop, validated, until rank 0
//                                   has looped `seconds` (default 60); the
//                                   harness SIGKILLs or SIGSTOPs a rank meanwhile.
//                                   `rank` prints "PAUSED" between two calls in
//                                   its fifth iteration and sleeps 5 s there, so
//                                   a SIGSTOP lands outside the library: its
//                                   peers wait for a call it has not reached.
//   test_fault skip <rank> <iter> [iters]
//                                   `iters` AllReduces (default 20); `rank` skips
//                                   number `iter`, so its peers end up waiting in
//                                   the last one for a rank that never comes
//                                   (it sleeps, alive, outside the library).
//   test_fault skip_device <rank> <iter> [iters]
//                                   as skip, on EMULATED device buffers and a
//                                   stream (INFINICCL_DEVICE=sim): the calls
//                                   return once queued, the peers wait in a
//                                   StreamSynchronize, and the watchdog must
//                                   name the queued call the engine runs.
//   test_fault group_skip <rank> <iter> [iters]
//                                   a ring in a group each iteration (Send to
//                                   the next rank, Recv from the previous one);
//                                   in iteration `iter`, `rank` posts its Recv
//                                   but not its Send and then sleeps 60 s, so
//                                   the next rank waits in infinicclGroupEnd
//                                   for a message that never comes.
//
// Every rank prints "READY rank=R pid=P" after its first collective, so the
// harness knows whom to signal. A failed call prints the library's message
// and exits 3 without finalising (the peers may be gone).
#include <infiniccl/infiniccl.h>
#include <infiniccl/infiniccl_sim.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

int g_rank = -1;

void Check(infinicclResult_t rc, infinicclComm_t comm, const char *what) {
  if (rc == infinicclSuccess) return;
  std::fprintf(stderr, "test_fault rank %d: %s failed: %s (%s)\n", g_rank, what,
               infinicclGetErrorString(rc), infinicclGetLastError(comm));
  std::fflush(stderr);
  std::exit(3);
}

void Ready(int rank) {
  std::printf("READY rank=%d pid=%d\n", rank, static_cast<int>(getpid()));
  std::fflush(stdout);
}

int Loop(infinicclComm_t comm, int rank, int size, double seconds, int pause_rank) {
  constexpr size_t kCount = 1024;
  std::vector<int> send(kCount), recv(kCount);
  const auto start = std::chrono::steady_clock::now();
  for (long iter = 0;; ++iter) {
    for (size_t i = 0; i < kCount; ++i)
      send[i] = static_cast<int>((rank + 1) * (i % 7 + iter % 5));
    Check(infinicclAllReduce(send.data(), recv.data(), kCount, infinicclInt32,
                             infinicclSum, comm, nullptr),
          comm, "infinicclAllReduce");
    const int ranks_sum = size * (size + 1) / 2;
    for (size_t i = 0; i < kCount; ++i) {
      if (recv[i] != ranks_sum * static_cast<int>(i % 7 + iter % 5)) {
        std::fprintf(stderr, "test_fault rank %d: wrong value at %zu in iteration %ld\n",
                     rank, i, iter);
        return 1;
      }
    }
    if (iter == 0) Ready(rank);
    if (iter == 5 && rank == pause_rank) {
      std::printf("PAUSED rank=%d\n", rank);
      std::fflush(stdout);
      sleep(5);
    }
    // Rank 0 alone keeps time; everyone learns when to stop from it.
    int go =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() <
        seconds;
    Check(infinicclBcast(&go, 1, infinicclInt32, 0, comm, nullptr), comm,
          "infinicclBcast");
    if (!go) return 0;
  }
}

int Skip(infinicclComm_t comm, int rank, int victim, int skip_at, int iters) {
  std::vector<float> send(256, 1.0f), recv(256);
  for (int iter = 0; iter < iters; ++iter) {
    if (rank == victim && iter == skip_at) continue;
    Check(infinicclAllReduce(send.data(), recv.data(), send.size(), infinicclFloat32,
                             infinicclSum, comm, nullptr),
          comm, "infinicclAllReduce");
    if (iter == 0) Ready(rank);
  }
  // The skipper stays, outside the library, as a rank that went on with
  // other work: its CommDestroy would end the peers' waits in shared memory
  // at once (a departure, tests/mpi/test_shm_contract.cpp), not through the
  // watchdog this test is about.
  if (rank == victim) sleep(60);
  return 0;
}

int SkipDevice(infinicclComm_t comm, int rank, int victim, int skip_at, int iters) {
  constexpr size_t kCount = 256;
  std::vector<float> ones(kCount, 1.0f);
  void *buf = nullptr, *stream = nullptr;
  Check(infinicclSimMalloc(&buf, kCount * sizeof(float)), nullptr, "infinicclSimMalloc");
  Check(infinicclSimStreamCreate(&stream), nullptr, "infinicclSimStreamCreate");
  Check(infinicclSimMemcpy(buf, ones.data(), kCount * sizeof(float), nullptr), nullptr,
        "infinicclSimMemcpy");
  for (int iter = 0; iter < iters; ++iter) {
    if (rank == victim && iter == skip_at) continue;
    Check(infinicclAllReduce(buf, buf, kCount, infinicclFloat32, infinicclSum, comm, stream),
          comm, "infinicclAllReduce");
    if (iter == 0) {
      Check(infinicclSimStreamSynchronize(stream), nullptr, "infinicclSimStreamSynchronize");
      Ready(rank);
    }
  }
  // The peers wait here: their last call is queued and never completes.
  Check(infinicclSimStreamSynchronize(stream), nullptr, "infinicclSimStreamSynchronize");
  if (rank == victim) sleep(60);  // stays, as in Skip
  return 0;
}

int GroupSkip(infinicclComm_t comm, int rank, int size, int victim, int skip_at,
              int iters) {
  constexpr size_t kCount = 256;
  std::vector<float> send(kCount), recv(kCount);
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  for (int iter = 0; iter < iters; ++iter) {
    for (size_t i = 0; i < kCount; ++i) send[i] = static_cast<float>(rank * 1000 + iter);
    const bool skip = rank == victim && iter == skip_at;
    Check(infinicclGroupStart(), comm, "infinicclGroupStart");
    if (!skip) {
      Check(infinicclSend(send.data(), kCount, infinicclFloat32, next, comm, nullptr), comm,
            "infinicclSend");
    }
    Check(infinicclRecv(recv.data(), kCount, infinicclFloat32, prev, comm, nullptr), comm,
          "infinicclRecv");
    Check(infinicclGroupEnd(), comm, "infinicclGroupEnd");
    for (size_t i = 0; i < kCount; ++i) {
      if (recv[i] != static_cast<float>(prev * 1000 + iter)) {
        std::fprintf(stderr, "test_fault rank %d: wrong value at %zu in iteration %d\n",
                     rank, i, iter);
        return 1;
      }
    }
    if (iter == 0) Ready(rank);
    if (skip) sleep(60);  // stuck outside the library, as a crashed-but-alive peer
  }
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(
        stderr,
        "usage: test_fault loop [seconds [rank]] | skip|group_skip <rank> <iter> [iters]\n");
    return 2;
  }
  infinicclComm_t comm = nullptr;
  Check(infinicclInit(&argc, &argv), nullptr, "infinicclInit");
  Check(infinicclCommInitAll(&comm, 0, nullptr), nullptr, "infinicclCommInitAll");
  int rank = 0, size = 1;
  Check(infinicclCommUserRank(comm, &rank), comm, "infinicclCommUserRank");
  Check(infinicclCommCount(comm, &size), comm, "infinicclCommCount");
  g_rank = rank;
  int rc = 2;
  if (std::strcmp(argv[1], "loop") == 0) {
    rc = Loop(comm, rank, size, argc > 2 ? std::atof(argv[2]) : 60.0,
              argc > 3 ? std::atoi(argv[3]) : -1);
  } else if (std::strcmp(argv[1], "skip") == 0 && argc >= 4) {
    rc = Skip(comm, rank, std::atoi(argv[2]), std::atoi(argv[3]),
              argc > 4 ? std::atoi(argv[4]) : 20);
  } else if (std::strcmp(argv[1], "skip_device") == 0 && argc >= 4) {
    rc = SkipDevice(comm, rank, std::atoi(argv[2]), std::atoi(argv[3]),
                    argc > 4 ? std::atoi(argv[4]) : 20);
  } else if (std::strcmp(argv[1], "group_skip") == 0 && argc >= 4) {
    rc = GroupSkip(comm, rank, size, std::atoi(argv[2]), std::atoi(argv[3]),
                   argc > 4 ? std::atoi(argv[4]) : 20);
  } else {
    std::fprintf(stderr, "test_fault: unknown mode '%s'\n", argv[1]);
  }
  infinicclCommDestroy(comm);
  infinicclFinalize();
  return rc;
}
