// infinicclCommRevoke ending a call another thread of the rank is blocked
// in, and infinicclCommGetFailedRanks naming a rank of the node whose process
// is gone; any MPI (no fault-tolerance extension needed). Run under mpirun
// by tests/fault/CMakeLists.txt.
//
//   test_revoke recv | group_recv | allreduce      (2 ranks)
//       On rank 0 one thread waits in a host infinicclRecv from rank 1 (in a
//       group for `group_recv`) or a 1 KiB host infinicclAllReduce (shared
//       memory), and another thread calls infinicclCommRevoke after 1 s.
//       Rank 1 joins nothing until rank 0 says (over MPI_COMM_WORLD) that
//       its call returned, or 20 s have passed. The call must return
//       infinicclRemoteError with "revoked" in its message, and its buffer
//       must be untouched. Rank 1 then sends the message the Recv asked for
//       (it must not land in rank 0's buffer: the receive was withdrawn), or
//       runs the AllReduce, which must return infinicclRemoteError naming
//       the revoke (rank 0 left the shared memory). A call that returned only
//       because rank 1 joined would have succeeded: the test then fails.
//   test_revoke device_recv                         (2 ranks, INFINICCL_DEVICE=sim)
//       The same Recv into an EMULATED device buffer: the call returns once
//       queued, the progress engine waits in MPI for rank 1; after the
//       revoke the stream completes, infinicclCommGetAsyncError says
//       RemoteError, the message "revoked" (the buffer of a failed queued
//       call is undefined: its copy out is queued behind the gate at once).
//   test_revoke failed_ranks                        (3 ranks)
//       Rank 2 SIGKILLs itself after an exact AllReduce; the others' next
//       AllReduce (shared memory) returns infinicclRemoteError naming rank 2,
//       and infinicclCommGetFailedRanks returns exactly {2} (no survivor
//       leaves before all have asked). Needs a launcher that lets the
//       survivors live (Open MPI's --enable-recovery).
//
// Every rank that passes prints "SHRINK PASS rank=R" (the line run_shrink.sh
// counts).
#include <infiniccl/infiniccl.h>
#include <infiniccl/infiniccl_sim.h>
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

int g_rank = -1;

[[noreturn]] void Fail(const char *what, infinicclResult_t rc, infinicclComm_t comm) {
  std::fprintf(stderr, "test_revoke rank %d: %s: %s (%s)\n", g_rank, what,
               infinicclGetErrorString(rc), comm ? infinicclGetLastError(comm) : "");
  std::fflush(stderr);
  std::_Exit(3);
}

void Check(infinicclResult_t rc, infinicclComm_t comm, const char *what) {
  if (rc != infinicclSuccess) Fail(what, rc, comm);
}

// `rc` is RemoteError and the communicator's message holds `words`.
void ExpectRemote(infinicclResult_t rc, const std::string &message, const char *words,
                  const char *what) {
  if (rc != infinicclRemoteError || message.find(words) == std::string::npos) {
    std::fprintf(stderr,
                 "test_revoke rank %d: %s returned %s (%s), expected infinicclRemoteError "
                 "with \"%s\"\n",
                 g_rank, what, infinicclGetErrorString(rc), message.c_str(), words);
    std::_Exit(3);
  }
}

// Waits (polling, so a rank never spins inside MPI) for a message from rank
// 0 on MPI_COMM_WORLD, at most `seconds`; whether it came.
bool AwaitWord(double seconds) {
  int word = 0;
  MPI_Request req = MPI_REQUEST_NULL;
  MPI_Irecv(&word, 1, MPI_INT, 0, 77, MPI_COMM_WORLD, &req);
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  for (;;) {
    int done = 0;
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (done) return true;
    if (std::chrono::steady_clock::now() >= until) {
      MPI_Cancel(&req);
      MPI_Wait(&req, MPI_STATUS_IGNORE);
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

constexpr size_t kCount = 256;  // 1 KiB of int32

int RevokeBlocked(infinicclComm_t comm, int rank, const char *mode) {
  const bool allreduce = std::strcmp(mode, "allreduce") == 0;
  const bool grouped = std::strcmp(mode, "group_recv") == 0;
  std::vector<int> send(kCount), recv(kCount, -7);
  for (size_t i = 0; i < kCount; ++i) send[i] = (rank + 1) * static_cast<int>(i % 9 + 1);
  if (rank == 0) {
    std::atomic<bool> returned{false};
    infinicclResult_t rc = infinicclSuccess;
    std::string message;
    std::thread caller([&] {
      if (allreduce) {
        rc = infinicclAllReduce(send.data(), recv.data(), kCount, infinicclInt32, infinicclSum,
                                comm, nullptr);
      } else if (grouped) {
        rc = infinicclGroupStart();
        if (rc == infinicclSuccess) {
          rc = infinicclRecv(recv.data(), kCount, infinicclInt32, 1, comm, nullptr);
          const infinicclResult_t end = infinicclGroupEnd();
          if (rc == infinicclSuccess) rc = end;
        }
      } else {
        rc = infinicclRecv(recv.data(), kCount, infinicclInt32, 1, comm, nullptr);
      }
      message = infinicclGetLastError(comm);
      returned.store(true);
    });
    std::this_thread::sleep_for(std::chrono::seconds(1));
    if (returned.load()) {
      std::fprintf(stderr, "test_revoke rank 0: the %s returned before the revoke: %s (%s)\n",
                   mode, infinicclGetErrorString(rc), message.c_str());
      std::_Exit(3);
    }
    Check(infinicclCommRevoke(comm, 0), comm, "infinicclCommRevoke");
    caller.join();
    ExpectRemote(rc, message, "revoked", mode);
    // Tell rank 1 the call returned; it now joins (sends, or calls AllReduce).
    int word = 1;
    MPI_Send(&word, 1, MPI_INT, 1, 77, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);  // rank 1's send, if any, has completed
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    for (size_t i = 0; i < kCount; ++i) {
      if (recv[i] != -7) {
        std::fprintf(stderr,
                     "test_revoke rank 0: recvbuff[%zu] = %d after the revoked %s (it must "
                     "stay -7)\n",
                     i, recv[i], mode);
        std::_Exit(3);
      }
    }
    std::printf("rank 0: the %s returned after the revoke: %s\n", mode, message.c_str());
  } else {
    const bool told = AwaitWord(20);
    if (allreduce) {
      const infinicclResult_t rc = infinicclAllReduce(send.data(), recv.data(), kCount,
                                                      infinicclInt32, infinicclSum, comm,
                                                      nullptr);
      ExpectRemote(rc, infinicclGetLastError(comm), "infinicclCommRevoke",
                   "AllReduce after rank 0 revoked");
    } else {
      // Eager at 1 KiB: completes whether or not rank 0 receives it; with a
      // fault-tolerant MPI the revoke reached this rank's MPI communicator.
      const infinicclResult_t rc =
          infinicclSend(send.data(), kCount, infinicclInt32, 0, comm, nullptr);
      if (rc != infinicclSuccess) {
        ExpectRemote(rc, infinicclGetLastError(comm), "", "infinicclSend to the revoked rank");
      }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (!told) {
      std::fprintf(stderr, "test_revoke rank 1: rank 0's call did not return within 20 s\n");
      std::_Exit(3);
    }
  }
  return 0;
}

// A word from each rank below `survivors` to rank 0 and back, on
// MPI_COMM_WORLD. Made once before the kill too, so that the processes are
// connected before one dies (an MPI may connect them at their first
// message, through its launcher).
void Handshake(int rank, int survivors) {
  int word = 0;
  if (rank == 0) {
    for (int r = 1; r < survivors; ++r) {
      MPI_Recv(&word, 1, MPI_INT, r, 78, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    for (int r = 1; r < survivors; ++r) MPI_Send(&word, 1, MPI_INT, r, 79, MPI_COMM_WORLD);
  } else if (rank < survivors) {
    MPI_Send(&word, 1, MPI_INT, 0, 78, MPI_COMM_WORLD);
    MPI_Recv(&word, 1, MPI_INT, 0, 79, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
}

int RevokeQueued(infinicclComm_t comm, int rank) {
  std::vector<int> host(kCount, -7);
  for (size_t i = 0; i < kCount; ++i) host[i] = rank == 0 ? -7 : static_cast<int>(i % 9 + 1);
  void *buf = nullptr, *stream = nullptr;
  Check(infinicclSimMalloc(&buf, kCount * sizeof(int)), nullptr, "infinicclSimMalloc");
  Check(infinicclSimStreamCreate(&stream), nullptr, "infinicclSimStreamCreate");
  Check(infinicclSimMemcpy(buf, host.data(), kCount * sizeof(int), nullptr), nullptr,
        "infinicclSimMemcpy");
  if (rank == 0) {
    Check(infinicclRecv(buf, kCount, infinicclInt32, 1, comm, stream), comm,
          "infinicclRecv (queued)");
    std::this_thread::sleep_for(std::chrono::seconds(1));
    Check(infinicclCommRevoke(comm, 0), comm, "infinicclCommRevoke");
    Check(infinicclSimStreamSynchronize(stream), nullptr, "infinicclSimStreamSynchronize");
    infinicclResult_t async = infinicclSuccess;
    Check(infinicclCommGetAsyncError(comm, &async), comm, "infinicclCommGetAsyncError");
    ExpectRemote(async, infinicclGetLastError(comm), "revoked", "the queued Recv");
    int word = 1;
    MPI_Send(&word, 1, MPI_INT, 1, 77, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    std::printf("rank 0: the queued Recv ended after the revoke\n");
  } else {
    const bool told = AwaitWord(20);
    const infinicclResult_t rc = infinicclSend(buf, kCount, infinicclInt32, 0, comm, stream);
    if (rc == infinicclSuccess) {
      Check(infinicclSimStreamSynchronize(stream), nullptr, "infinicclSimStreamSynchronize");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (!told) {
      std::fprintf(stderr, "test_revoke rank 1: rank 0's queued Recv did not end within 20 s\n");
      std::_Exit(3);
    }
  }
  infinicclSimStreamDestroy(stream);
  infinicclSimFree(buf);
  return 0;
}

int FailedRanks(infinicclComm_t comm, int rank, int size) {
  std::vector<int> send(kCount), recv(kCount);
  for (size_t i = 0; i < kCount; ++i) send[i] = (rank + 1) * static_cast<int>(i % 5 + 1);
  Check(infinicclAllReduce(send.data(), recv.data(), kCount, infinicclInt32, infinicclSum, comm,
                           nullptr),
        comm, "AllReduce before the kill");
  const int ranks_sum = size * (size + 1) / 2;
  for (size_t i = 0; i < kCount; ++i) {
    if (recv[i] != ranks_sum * static_cast<int>(i % 5 + 1)) {
      std::fprintf(stderr, "test_revoke rank %d: recvbuff[%zu] = %d, expected %d\n", rank, i,
                   recv[i], ranks_sum * static_cast<int>(i % 5 + 1));
      std::_Exit(3);
    }
  }
  const int victim = size - 1;
  Handshake(rank, victim);
  if (rank == victim) {
    std::fflush(stdout);
    raise(SIGKILL);
  }
  const infinicclResult_t rc = infinicclAllReduce(send.data(), recv.data(), kCount,
                                                  infinicclInt32, infinicclSum, comm, nullptr);
  const std::string name = "rank " + std::to_string(victim);
  ExpectRemote(rc, infinicclGetLastError(comm), name.c_str(), "AllReduce after the kill");
  int failed[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
  int count = 8;
  Check(infinicclCommGetFailedRanks(comm, failed, &count), comm, "infinicclCommGetFailedRanks");
  if (count != 1 || failed[0] != victim) {
    std::fprintf(stderr,
                 "test_revoke rank %d: infinicclCommGetFailedRanks gave %d rank(s) (first %d), "
                 "expected exactly {%d}\n",
                 rank, count, failed[0], victim);
    std::_Exit(3);
  }
  std::printf("rank %d: failed ranks {%d}\n", rank, failed[0]);
  // No survivor leaves before every survivor has asked (a process that
  // exited is gone too).
  Handshake(rank, victim);
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: test_revoke recv | group_recv | allreduce | failed_ranks\n");
    return 2;
  }
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  g_rank = rank;
  Check(infinicclInit(nullptr, nullptr), nullptr, "infinicclInit");
  infinicclComm_t comm = nullptr;
  Check(infinicclCommInitAll(&comm, 0, nullptr), nullptr, "infinicclCommInitAll");
  int rc = 2;
  if (std::strcmp(argv[1], "failed_ranks") == 0) {
    rc = FailedRanks(comm, rank, size);
    // The survivors' communicator lost a rank: released locally.
    Check(infinicclCommAbort(comm), comm, "infinicclCommAbort");
  } else if (size == 2) {
    rc = std::strcmp(argv[1], "device_recv") == 0 ? RevokeQueued(comm, rank)
                                                  : RevokeBlocked(comm, rank, argv[1]);
    if (rank == 0) {
      Check(infinicclCommDestroy(comm), comm, "infinicclCommDestroy (revoked)");
    } else {
      Check(infinicclCommAbort(comm), comm, "infinicclCommAbort");
    }
  } else {
    std::fprintf(stderr, "test_revoke %s: 2 ranks\n", argv[1]);
  }
  if (rc == 0) {
    std::printf("SHRINK PASS rank=%d (test_revoke)\n", rank);
    std::fflush(stdout);
  }
  if (std::strcmp(argv[1], "failed_ranks") == 0) {
    // MPI_Finalize with a dead rank may wait for it: leave now.
    std::_Exit(rc);
  }
  Check(infinicclFinalize(), nullptr, "infinicclFinalize");
  MPI_Finalize();
  return rc;
}
