// infinicclCommAbort.
//   local     (1-3 ranks): abort after an error, on every rank or on one
//             rank only, from another thread; later calls on the handle
//             return InvalidUsage saying it was aborted; other
//             communicators keep working with exact values.
//   inflight  (2 ranks, INFINICCL_SHM=0): rank 0 aborts while its other
//             thread is blocked in an AllReduce that rank 1 never joins. MPI
//             cannot cancel it, so the job must end (MPI_Abort) after the
//             library's log line. abort_inflight_check.sh checks the
//             job's exit status (MPI_Abort's 1), that line, and both ranks'
//             AllReduce before it; where MPI tolerates failures, a zero
//             status, the blocked call's error and the abort's success.
//   inflight-shm (2-3 ranks, one node): the same AllReduce waits in shared
//             memory. infinicclCommDescribeWait names it and the ranks that
//             have not reached it (all but rank 0), and says nothing once no
//             call is in flight; CommAbort makes the blocked call return
//             InvalidUsage saying the communicator was aborted, after the
//             abort began, and the job goes on: the other ranks
//             destroy their communicator alone, a new one gives exact sums.
//   first-queued (1 rank, INFINICCL_DEVICE=sim): a call in flight (its
//             guard taken, as a call past its handle check) queues the
//             communicator's first device work while another thread's
//             CommAbort waits for that call: the abort has read the
//             engine by then, so the work must be refused ("aborted") and
//             no engine may start (one would run on after the communicator
//             is freed, unseen by the abort). The abort then succeeds.
//   hier      (4 ranks, ranks 2 and 3 without the emulated device: two
//             groups, INFINICCL_HIERARCHY=1): CommAbort of the two-level
//             communicator ends the library's waits on its group and leader
//             MPI communicators as on the top-level one (each marked
//             revoked for this process, as aborted).
#include <mpi.h>

#include <atomic>
#include <cstdlib>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "comm/communicator.h"
#include "comm/runtime.h"
#include "device/registry.h"
#include "mpi/mpi_thread.h"
#include "test_util.h"

using namespace itest;

namespace {

int g_n = 1;

bool SaysAborted(const char *msg) {
  return msg != nullptr && std::strstr(msg, "aborted") != nullptr;
}

void ExpectSum(infinicclComm_t c, const char *what) {
  int64_t v = g_rank + 1;
  CHECK_RC(infinicclAllReduce(&v, &v, 1, infinicclInt64, infinicclSum, c, nullptr),
           infinicclSuccess);
  CHECK(v == int64_t(g_n) * (g_n + 1) / 2, "%s: AllReduce gave %lld", what, (long long)v);
}

// Every entry point that takes the handle refuses it, saying why.
void ExpectAborted(infinicclComm_t c) {
  int64_t v = 1;
  int n = -1;
  infinicclComm_t child = nullptr;
  CHECK_RC(infinicclAllReduce(&v, &v, 1, infinicclInt64, infinicclSum, c, nullptr),
           infinicclInvalidUsage);
  CHECK(SaysAborted(SafeLastError()), "%s", SafeLastError());
  CHECK(std::strstr(SafeLastError(), "infinicclAllReduce") != nullptr, "%s",
        SafeLastError());
  CHECK_RC(infinicclBcast(&v, 1, infinicclInt64, 0, c, nullptr), infinicclInvalidUsage);
  CHECK_RC(infinicclCommCount(c, &n), infinicclInvalidUsage);
  CHECK_RC(infinicclCommUserRank(c, &n), infinicclInvalidUsage);
  CHECK_RC(infinicclCommSplit(c, 0, 0, &child), infinicclInvalidUsage);
  CHECK(child == nullptr);
  CHECK_RC(infinicclCommDestroy(c), infinicclInvalidUsage);
  CHECK(SaysAborted(SafeLastError()), "%s", SafeLastError());
  CHECK_RC(infinicclCommAbort(c), infinicclInvalidUsage);
  CHECK(SaysAborted(infinicclGetLastError(c)), "%s", infinicclGetLastError(c));
}

int Local() {
  infinicclComm_t world = nullptr;
  CHECK_RC(infinicclCommInitAll(&world, 0, nullptr), infinicclSuccess);

  // After an error, on every rank.
  infinicclComm_t a = nullptr;
  CHECK_RC(infinicclCommInitAll(&a, 0, nullptr), infinicclSuccess);
  ExpectSum(a, "before abort");
  int64_t v = 0;
  CHECK_RC(infinicclAllReduce(&v, &v, 1, static_cast<infinicclDataType_t>(99),
                              infinicclSum, a, nullptr),
           infinicclInvalidArgument);
  CHECK_RC(infinicclCommAbort(a), infinicclSuccess);
  ExpectAborted(a);
  ExpectSum(world, "world after abort on every rank");

  // On rank 0 only: the others destroy theirs (locally) and carry on.
  infinicclComm_t b = nullptr;
  CHECK_RC(infinicclCommInitAll(&b, 0, nullptr), infinicclSuccess);
  if (g_rank == 0) {
    CHECK_RC(infinicclCommAbort(b), infinicclSuccess);
    ExpectAborted(b);
  } else {
    CHECK_RC(infinicclCommDestroy(b), infinicclSuccess);
  }
  ExpectSum(world, "world after abort on rank 0");

  // From another thread, no call in flight: returns at once.
  infinicclComm_t c = nullptr;
  CHECK_RC(infinicclCommInitAll(&c, 0, nullptr), infinicclSuccess);
  infinicclResult_t rc = infinicclInternalError;
  std::thread t([&] { rc = infinicclCommAbort(c); });
  t.join();
  CHECK(rc == infinicclSuccess, "CommAbort from another thread: %d", int(rc));
  ExpectAborted(c);

  // A split child outlives its aborted parent; aborting a child leaves the
  // parent alone.
  infinicclComm_t parent = nullptr, child = nullptr;
  CHECK_RC(infinicclCommInitAll(&parent, 0, nullptr), infinicclSuccess);
  CHECK_RC(infinicclCommSplit(parent, 0, 0, &child), infinicclSuccess);
  CHECK_RC(infinicclCommAbort(parent), infinicclSuccess);
  ExpectSum(child, "child of an aborted parent");
  CHECK_RC(infinicclCommAbort(child), infinicclSuccess);
  ExpectAborted(child);

  CHECK_RC(infinicclCommAbort(nullptr), infinicclInvalidArgument);
  ExpectSum(world, "world at the end");
  CHECK_RC(infinicclCommDestroy(world), infinicclSuccess);
  const long total = TotalFailures();
  std::printf("[rank %d/%d] test_comm_abort local: %ld failures\n", g_rank, g_n,
              g_failures);
  CHECK_RC(infinicclFinalize(), infinicclSuccess);
  return g_failures == 0 && total == 0 ? 0 : 1;
}

int InFlight() {
  infinicclComm_t comm = nullptr;
  CHECK_RC(infinicclCommInitAll(&comm, 0, nullptr), infinicclSuccess);
  ExpectSum(comm, "before");
  {
    // The value itself, for the launcher's wrapper (abort_inflight_check.sh).
    int64_t v = g_rank + 1;
    CHECK_RC(infinicclAllReduce(&v, &v, 1, infinicclInt64, infinicclSum, comm, nullptr),
             infinicclSuccess);
    std::printf("[rank %d] before the abort: AllReduce gave %lld\n", g_rank, (long long)v);
    std::fflush(stdout);
  }
  if (g_rank == 0) {
    infinicclResult_t blocked_rc = infinicclSuccess;
    std::thread blocked([&] {
      int64_t v = 1;
      blocked_rc = infinicclAllReduce(&v, &v, 1, infinicclInt64, infinicclSum, comm, nullptr);
      std::printf("[rank 0] the blocked AllReduce returned code %d\n", int(blocked_rc));
      std::fflush(stdout);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    std::printf("[rank 0] calling infinicclCommAbort with a call in flight\n");
    std::fflush(stdout);
    infinicclResult_t rc = infinicclCommAbort(comm);
    // Reached only where MPI tolerates failures: revoking the MPI
    // communicator ended the blocked call, so the abort succeeds.
    blocked.join();
    if (rc != infinicclSuccess || blocked_rc == infinicclSuccess) {
      std::printf("[rank 0] FAIL: infinicclCommAbort returned %d, the blocked call %d\n",
                  int(rc), int(blocked_rc));
      std::fflush(stdout);
      std::_Exit(3);
    }
    std::printf("[rank 0] the blocked call returned after the revoke, the abort succeeded\n");
    std::fflush(stdout);
  }
  // Without a fault-tolerant MPI never completes: rank 0 ends the job.
  MPI_Barrier(MPI_COMM_WORLD);
  const long total = TotalFailures();
  std::printf("[rank %d/%d] test_comm_abort inflight: %ld failures\n", g_rank, g_n,
              g_failures);
  CHECK_RC(infinicclFinalize(), infinicclSuccess);
  return g_failures == 0 && total == 0 ? 0 : 1;
}

// The text infinicclCommDescribeWait gives for `c` ("" when idle).
std::string Describe(infinicclComm_t c, size_t len = 4096) {
  std::vector<char> text(len, 'x');
  CHECK_RC(infinicclCommDescribeWait(c, text.data(), len), infinicclSuccess);
  CHECK(std::memchr(text.data(), '\0', len) != nullptr, "not terminated within %zu", len);
  return std::string(text.data());
}

int InFlightShm() {
  infinicclComm_t comm = nullptr;
  CHECK_RC(infinicclCommInitAll(&comm, 0, nullptr), infinicclSuccess);
  ExpectSum(comm, "before");
  CHECK(Describe(comm).empty(), "idle: '%s'", Describe(comm).c_str());
  char small[4];
  CHECK_RC(infinicclCommDescribeWait(comm, nullptr, 16), infinicclInvalidArgument);
  CHECK_RC(infinicclCommDescribeWait(comm, small, 0), infinicclInvalidArgument);
  if (g_rank == 0) {
    infinicclResult_t blocked_rc = infinicclSuccess;
    std::string blocked_error;
    std::atomic<bool> aborting{false}, returned_after_abort{false};
    std::thread blocked([&] {
      int64_t v = 1;
      blocked_rc = infinicclAllReduce(&v, &v, 1, infinicclInt64, infinicclSum, comm, nullptr);
      returned_after_abort = aborting.load();
      blocked_error = SafeLastError();
    });
    // The other ranks never join: the call stays in flight until the abort.
    std::string text;
    for (int i = 0; i < 500 && text.empty(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      text = Describe(comm);
    }
    const std::string others = g_n == 2 ? "1" : g_n == 3 ? "1,2" : "1-" + std::to_string(g_n - 1);
    CHECK(text.find("AllReduce seq ") == 0, "'%s'", text.c_str());
    CHECK(text.find("count=1 dtype=int64 op=sum") != std::string::npos, "'%s'", text.c_str());
    CHECK(text.find("ranks that have not reached it: " + others + ";") != std::string::npos,
          "expected ranks %s: '%s'", others.c_str(), text.c_str());
    // Cut to fit, terminated.
    const std::string cut = Describe(comm, 8);
    CHECK(cut == text.substr(0, 7), "'%s'", cut.c_str());
    // The call ends because of the abort (not before it), and the abort
    // does not wait for a peer that never comes: only a hang takes 30 s.
    const auto t0 = std::chrono::steady_clock::now();
    aborting = true;
    CHECK_RC(infinicclCommAbort(comm), infinicclSuccess);
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    blocked.join();
    CHECK(returned_after_abort.load(), "the blocked AllReduce returned before the abort");
    CHECK(took < 30.0, "CommAbort took %.2f s", took);
    CHECK(blocked_rc == infinicclInvalidUsage, "the blocked AllReduce returned %d",
          int(blocked_rc));
    CHECK(SaysAborted(blocked_error.c_str()), "'%s'", blocked_error.c_str());
    ExpectAborted(comm);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (g_rank != 0) CHECK_RC(infinicclCommDestroy(comm), infinicclSuccess);
  infinicclComm_t next = nullptr;
  CHECK_RC(infinicclCommInitAll(&next, 0, nullptr), infinicclSuccess);
  ExpectSum(next, "a new communicator after the abort");
  CHECK_RC(infinicclCommDestroy(next), infinicclSuccess);
  const long total = TotalFailures();
  std::printf("[rank %d/%d] test_comm_abort inflight-shm: %ld failures\n", g_rank, g_n,
              g_failures);
  CHECK_RC(infinicclFinalize(), infinicclSuccess);
  return g_failures == 0 && total == 0 ? 0 : 1;
}

int FirstQueued() {
  infinicclComm_t comm = nullptr;
  CHECK_RC(infinicclCommInitAll(&comm, 0, nullptr), infinicclSuccess);
  std::shared_ptr<infiniccl::Communicator> c;
  CHECK(infiniccl::Runtime::Lookup(comm, &c).ok(), "Lookup");
  infiniccl::DeviceRuntime *sim = infiniccl::DeviceRegistry::Get(infiniccl::DeviceKind::kSim);
  CHECK(sim != nullptr, "INFINICCL_DEVICE=sim is not on");
  if (c == nullptr || sim == nullptr) return 1;
  CHECK(c->engine_if_started() == nullptr, "an engine before any device call");
  std::atomic<bool> ran{false};
  {
    // A call past its handle check: CommAbort waits for it (its grace).
    auto guard = std::make_unique<infiniccl::Communicator::CallGuard>();
    CHECK(c->Enter("first-queued", guard.get()).ok(), "Enter");
    infinicclResult_t abort_rc = infinicclInternalError;
    std::thread aborter([&] { abort_rc = infinicclCommAbort(comm); });
    while (!c->aborted()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    // The abort reads the engine right after marking the communicator.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    infiniccl::QueuedOp op;
    op.args.kind = infiniccl::CollKind::kAllReduce;
    op.device = sim;
    op.run = [&](const infiniccl::CollArgs &) {
      ran.store(true);
      return infiniccl::Status::Ok();
    };
    op.done = [](const infiniccl::Status &) {};
    const infiniccl::Status st = c->Enqueue(std::move(op));
    CHECK(st.code() == infinicclInvalidUsage && SaysAborted(st.message().c_str()),
          "the first queued work after the abort began returned %d (%s)", int(st.code()),
          st.message().c_str());
    CHECK(c->engine_if_started() == nullptr,
          "an engine started after the abort read it: it would run on after the "
          "communicator is freed");
    guard.reset();  // the call returns: the abort, waiting for it, goes on
    aborter.join();
    CHECK(abort_rc == infinicclSuccess, "CommAbort returned %d", int(abort_rc));
  }
  CHECK(!ran.load(), "the queued work ran on the aborted communicator");
  c.reset();
  std::printf("[rank %d/%d] test_comm_abort first-queued: %ld failures\n", g_rank, g_n,
              g_failures);
  CHECK_RC(infinicclFinalize(), infinicclSuccess);
  return g_failures == 0 ? 0 : 1;
}

int Hier() {
  infinicclComm_t comm = nullptr;
  CHECK_RC(infinicclCommInitAll(&comm, 0, nullptr), infinicclSuccess);
  std::shared_ptr<infiniccl::Communicator> c;
  CHECK(infiniccl::Runtime::Lookup(comm, &c).ok(), "Lookup");
  if (c == nullptr) return 1;
  CHECK(c->hierarchical(), "the communicator is not two-level");
  ExpectSum(comm, "two-level communicator before the abort");
  CHECK_RC(infinicclCommAbort(comm), infinicclSuccess);
  CHECK(infiniccl::mpi::RevokedLocally(c->mpi_comm()) &&
            infiniccl::mpi::AbortedLocally(c->mpi_comm()),
        "the top-level MPI communicator is not marked aborted");
  int marked = 0;
  if (const infiniccl::Topology *t = c->topology()) {
    for (MPI_Comm sub : {t->group_comm, t->leader_comm, t->shard_comm}) {
      if (sub == MPI_COMM_NULL) continue;
      CHECK(infiniccl::mpi::AbortedLocally(sub),
            "a group/leader MPI communicator is not marked aborted");
      ++marked;
    }
  }
  CHECK(marked > 0, "no group or leader MPI communicator on this rank");
  c.reset();
  std::printf("[rank %d/%d] test_comm_abort hier: %ld failures\n", g_rank, g_n, g_failures);
  CHECK_RC(infinicclFinalize(), infinicclSuccess);
  return g_failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char **argv) {
  const bool hier = argc > 1 && std::strcmp(argv[1], "hier") == 0;
  if (hier) {
    // Ranks 2 and 3 on the host: a group of their own beside the device ranks'.
    for (const char *name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK"}) {
      const char *r = std::getenv(name);
      if (r != nullptr && std::atoi(r) >= 2) unsetenv("INFINICCL_DEVICE");
    }
  }
  CHECK_RC(infinicclInit(&argc, &argv), infinicclSuccess);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_n);
  if (argc > 1 && std::strcmp(argv[1], "inflight") == 0) return InFlight();
  if (argc > 1 && std::strcmp(argv[1], "inflight-shm") == 0) return InFlightShm();
  if (argc > 1 && std::strcmp(argv[1], "first-queued") == 0) return FirstQueued();
  if (hier) return Hier();
  return Local();
}
