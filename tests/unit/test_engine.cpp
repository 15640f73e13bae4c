// The progress engine alone (progress/engine.h) on the EMULATED device, no
// MPI: operations run in call order on the engine's thread, after the work
// queued before them on the caller's stream, and the caller's stream waits
// for them; failures, Cancel and destruction release every stream. Also the
// program of CI's ThreadSanitizer stage (the engine is the library's first
// long-lived thread that runs operations).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <future>
#include <string>
#include <thread>
#include <vector>

#ifdef __linux__
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "core/config.h"
#include "core/log.h"
#include "device/sim/sim_runtime.h"
#include "device/spin_wait.h"
#include "progress/engine.h"

namespace infiniccl {
namespace {

class EngineTest : public ::testing::Test {
 protected:
  SimRuntime sim{2, 0, true};
  void *stream = nullptr;
  void SetUp() override { ASSERT_TRUE(sim.StreamCreate(&stream).ok()); }
  void TearDown() override { EXPECT_TRUE(sim.StreamDestroy(stream).ok()); }

  QueuedOp Op(std::function<Status(const CollArgs &)> run) {
    QueuedOp op;
    op.args.kind = CollKind::kAllReduce;
    op.args.stream = stream;
    op.path = Path::kStagedMpi;
    op.device = &sim;
    op.run = std::move(run);
    return op;
  }
};

TEST_F(EngineTest, RunsInOrderAfterTheStreamAndHoldsIt) {
  std::vector<int> host(1, 0);
  void *dev = nullptr;
  ASSERT_TRUE(sim.Malloc(&dev, sizeof(int) * 64).ok());
  // A producer on the caller's stream, slow: 4 KiB at 0.001 GB/s, ~4 ms.
  std::vector<int> input(64, 7);
  sim.SetCopyGbps(0.001);
  ASSERT_TRUE(sim.MemcpyAsync(dev, input.data(), 256, CopyKind::kHostToDevice, stream).ok());
  sim.SetCopyGbps(0);
  ProgressEngine engine("test");
  std::vector<int> order;
  std::mutex m;
  for (int k = 0; k < 8; ++k) {
    ASSERT_TRUE(engine
                    .Enqueue(Op([&, k](const CollArgs &a) -> Status {
                      EXPECT_NE(a.stream, stream) << "runs on the engine's own stream";
                      // The producer has finished: the op reads its output.
                      EXPECT_EQ(static_cast<int *>(dev)[k], 7 + k);
                      static_cast<int *>(dev)[k + 1] += k + 1;
                      std::lock_guard<std::mutex> lock(m);
                      order.push_back(k);
                      return Status::Ok();
                    }))
                    .ok());
  }
  // Queued after the eight operations on the caller's stream: sees all.
  ASSERT_TRUE(sim.MemcpyAsync(input.data(), dev, 256, CopyKind::kDeviceToHost, stream).ok());
  ASSERT_TRUE(sim.StreamSynchronize(stream).ok());
  for (int k = 1; k <= 8; ++k) EXPECT_EQ(input[static_cast<size_t>(k)], 7 + k);
  EXPECT_TRUE(engine.Drain().ok());
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_FALSE(engine.Busy());
  ASSERT_TRUE(sim.Free(dev).ok());
}

TEST_F(EngineTest, AFailureReleasesTheStreamAndSkipsTheRest) {
  ProgressEngine engine("comm X");
  std::atomic<int> ran{0};
  ASSERT_TRUE(engine.Enqueue(Op([&](const CollArgs &) {
    ++ran;
    return Status(infinicclSystemError, "boom");
  })).ok());
  ASSERT_TRUE(engine.Enqueue(Op([&](const CollArgs &) {
    ++ran;
    return Status::Ok();
  })).ok());
  ASSERT_TRUE(sim.StreamSynchronize(stream).ok());  // released, not hung
  const Status drained = engine.Drain();
  EXPECT_EQ(ran.load(), 1) << "the operation after the failure ran";
  EXPECT_EQ(drained.code(), infinicclSystemError);
  EXPECT_NE(drained.message().find("queued AllReduce"), std::string::npos) << drained.message();
  EXPECT_NE(drained.message().find("boom"), std::string::npos) << drained.message();
  EXPECT_TRUE(engine.failed());
  // Nothing more is queued once failed.
  EXPECT_EQ(engine.Enqueue(Op([](const CollArgs &) { return Status::Ok(); })).code(),
            infinicclSystemError);
}

TEST_F(EngineTest, CancelReleasesQueuedWork) {
  ProgressEngine engine("test");
  // The caller's stream is held by someone else's gate: nothing can start.
  void *gate = nullptr;
  ASSERT_TRUE(sim.GateCreate(&gate).ok());
  ASSERT_TRUE(sim.GateWait(stream, gate, 1).ok());
  std::atomic<int> ran{0};
  for (int k = 0; k < 3; ++k) {
    ASSERT_TRUE(engine.Enqueue(Op([&](const CollArgs &) {
      ++ran;
      return Status::Ok();
    })).ok());
  }
  engine.Cancel();
  sim.GateOpen(gate, 1);
  ASSERT_TRUE(sim.StreamSynchronize(stream).ok());
  EXPECT_EQ(engine.Drain().code(), infinicclInvalidUsage);
  EXPECT_EQ(ran.load(), 0);
  ASSERT_TRUE(sim.GateDestroy(gate).ok());
}

// INFINICCL_DEBUG=TRACE: one line per queued call saying where its time
// went (docs/PERFORMANCE.md, "Device buffers on the emulated device" reads them; the GPU script averages them).
// Here the caller's stream is held 3 ms by a gate of the test's own and the
// operation takes 2 ms: the first is the stream's wait, the second the run.
TEST_F(EngineTest, TracesWhereAQueuedCallsTimeWent) {
  const auto logging = [](const char *level) {
    ConfigureLogging(Config::Parse([level](const char *name) -> const char * {
      return std::strcmp(name, "INFINICCL_DEBUG") == 0 ? level : nullptr;
    }));
  };
  void *gate = nullptr;
  ASSERT_TRUE(sim.GateCreate(&gate).ok());
  std::string off, on;
  for (const char *level : {"INFO", "TRACE"}) {
    logging(level);
    testing::internal::CaptureStderr();
    {
      ProgressEngine engine("comm T");
      const uint32_t target = std::strcmp(level, "INFO") == 0 ? 1 : 2;
      ASSERT_TRUE(sim.GateWait(stream, gate, target).ok());
      QueuedOp op = Op([](const CollArgs &) {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        return Status::Ok();
      });
      op.args.count = 1024;
      op.args.dtype = infinicclFloat32;
      op.seq = 7;
      ASSERT_TRUE(engine.Enqueue(std::move(op)).ok());
      std::this_thread::sleep_for(std::chrono::milliseconds(3));
      sim.GateOpen(gate, target);
      EXPECT_TRUE(engine.Drain().ok());
      ASSERT_TRUE(sim.StreamSynchronize(stream).ok());
    }
    (std::strcmp(level, "INFO") == 0 ? off : on) = testing::internal::GetCapturedStderr();
  }
  ConfigureLogging(GlobalConfig());
  ASSERT_TRUE(sim.GateDestroy(gate).ok());
  EXPECT_EQ(off.find("queued "), std::string::npos) << off;
  const size_t at =
      on.find("queued AllReduce 1024 x float32 #7 on comm T (path staged): ");
  ASSERT_NE(at, std::string::npos) << on;
  double picked = -1, wait = -1, run = -1, gate_us = -1;
  ASSERT_EQ(std::sscanf(on.c_str() + on.find("picked_us=", at),
                        "picked_us=%lf stream_wait_us=%lf run_us=%lf gate_us=%lf",
                        &picked, &wait, &run, &gate_us),
            4)
      << on;
  // Lower bounds only (sleeps end late, never early); each time in its field.
  EXPECT_GE(picked + wait, 3000 - 0.2) << on;  // the gate held the stream 3 ms
  EXPECT_GE(run, 2000 - 0.1) << on;            // the operation slept 2 ms
  EXPECT_GE(gate_us, picked + wait + run - 0.3) << on;
}

TEST_F(EngineTest, DestructionFinishesTheQueue) {
  std::atomic<int> ran{0};
  {
    ProgressEngine engine("test");
    for (int k = 0; k < 5; ++k) {
      ASSERT_TRUE(engine.Enqueue(Op([&](const CollArgs &) {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        ++ran;
        return Status::Ok();
      })).ok());
    }
  }
  EXPECT_EQ(ran.load(), 5);
  ASSERT_TRUE(sim.StreamSynchronize(stream).ok());
}

// A one-chunk staged call leaves its copies out behind its gate and gives
// its staging slot back in `retire`. With the next call already queued, that
// retire waited for the queue to empty, which back-to-back calls never let
// happen: each call leased a new slot (a fresh pinned buffer per call, 5-20x
// the blocking call's time with fast copies, docs/PERFORMANCE.md, "Device buffers on the emulated device"). Now a
// call's retire runs before the next operation on the same stream starts
// (whose work follows it there, so the wait costs nothing), and waits for
// the queue to empty only for other streams.
TEST_F(EngineTest, RetiresBeforeTheNextCallOnTheSameStream) {
  void *other = nullptr;
  ASSERT_TRUE(sim.StreamCreate(&other).ok());
  for (const bool same_stream : {true, false}) {
    SCOPED_TRACE(same_stream ? "next call on the same stream" : "next call on another stream");
    ProgressEngine engine("test");
    std::atomic<bool> retired{false}, second_queued{false};
    int retired_when_second_ran = -1;
    QueuedOp first = Op([&](const CollArgs &) {
      // Finishes only once the second call is queued behind it.
      while (!second_queued.load()) std::this_thread::yield();
      return Status::Ok();
    });
    first.retire = [&] { retired = true; };
    QueuedOp second = Op([&](const CollArgs &) {
      retired_when_second_ran = retired.load() ? 1 : 0;
      return Status::Ok();
    });
    if (!same_stream) second.args.stream = other;
    ASSERT_TRUE(engine.Enqueue(std::move(first)).ok());
    ASSERT_TRUE(engine.Enqueue(std::move(second)).ok());
    second_queued = true;
    ASSERT_TRUE(engine.Drain().ok());
    EXPECT_EQ(retired_when_second_ran, same_stream ? 1 : 0);
    EXPECT_TRUE(retired.load()) << "retired once the queue emptied";
  }
  ASSERT_TRUE(sim.StreamSynchronize(stream).ok());
  ASSERT_TRUE(sim.StreamSynchronize(other).ok());
  EXPECT_TRUE(sim.StreamDestroy(other).ok());
}

TEST_F(EngineTest, ManyThreadsManyEngines) {
  // Four callers, each with its own engine and stream, racing.
  std::vector<std::thread> threads;
  std::atomic<int> ran{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      void *s = nullptr;
      ASSERT_TRUE(sim.StreamCreate(&s).ok());
      {
        ProgressEngine engine("test");
        for (int k = 0; k < 50; ++k) {
          QueuedOp op = Op([&](const CollArgs &) {
            ++ran;
            return Status::Ok();
          });
          op.args.stream = s;
          ASSERT_TRUE(engine.Enqueue(std::move(op)).ok());
          if (k % 10 == 0) {
            ASSERT_TRUE(sim.StreamSynchronize(s).ok());
          }
        }
        EXPECT_TRUE(engine.Drain().ok());
      }
      ASSERT_TRUE(sim.StreamDestroy(s).ok());
    });
  }
  for (auto &t : threads) t.join();
  EXPECT_EQ(ran.load(), 200);
}

TEST(SpinFor, SeesAConditionSetByAnotherThreadAndGivesUpAfterItsLimit) {
  std::atomic<bool> flag{false};
  std::thread setter([&] { flag.store(true); });
  // Generous: the setter may be slow to start on a loaded machine.
  EXPECT_TRUE(SpinFor([&] { return flag.load(); }, std::chrono::seconds(10)));
  setter.join();
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(SpinFor([] { return false; }, std::chrono::microseconds(200)));
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::microseconds(200));
  EXPECT_FALSE(SpinFor([] { return false; }, std::chrono::microseconds(0)));
  EXPECT_TRUE(SpinFor([] { return true; }, std::chrono::microseconds(0)));
}

TEST_F(EngineTest, WaitsLongerThanThePollingSleepAndAreWoken) {
  // Each wait outlasts kSpinBeforeSleep, so every waiter (the engine at the
  // event, the stream at the gate, the engine for its next operation, the
  // caller's synchronize) goes to sleep and must be woken: nothing is lost
  // between the polling and the sleep.
  const unsigned us = 5 * static_cast<unsigned>(kSpinBeforeSleep.count());
  ProgressEngine engine("test");
  std::vector<int> order;
  for (int k = 0; k < 5; ++k) {
    const auto queued = std::chrono::steady_clock::now();
    ASSERT_TRUE(sim.Kernel(stream, us).ok());  // the engine waits for it
    ASSERT_TRUE(engine.Enqueue(Op([&, k, queued](const CollArgs &) {
                  EXPECT_GE(std::chrono::steady_clock::now() - queued,
                            std::chrono::microseconds(us));
                  std::this_thread::sleep_for(std::chrono::microseconds(us));  // the gate waits
                  order.push_back(k);
                  return Status::Ok();
                })).ok());
    ASSERT_TRUE(sim.StreamSynchronize(stream).ok());
    ASSERT_EQ(order.size(), static_cast<size_t>(k + 1));
    std::this_thread::sleep_for(std::chrono::microseconds(us));  // the engine sleeps
  }
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
}


// The emulated device, calling `on_open` before each gate opens (on the
// engine's thread, at the moment it opens a gate).
class WatchedSim : public SimRuntime {
 public:
  WatchedSim() : SimRuntime(1, 0, true) {}
  std::function<void()> on_open;
  void GateOpen(void *gate, uint32_t value) override {
    if (on_open) on_open();
    SimRuntime::GateOpen(gate, value);
  }
};

TEST(EngineGate, OpensWithoutHoldingWhatACallNeeds) {
  // Opening a gate wakes the caller's stream and through it the caller,
  // which may preempt the engine's thread at once and queue its next call:
  // that call must not wait for the engine's thread to run again.
  WatchedSim sim;
  void *stream = nullptr;
  ASSERT_TRUE(sim.StreamCreate(&stream).ok());
  {
    ProgressEngine engine("test");
    auto op = [&](int *ran) {
      QueuedOp q;
      q.args.kind = CollKind::kAllReduce;
      q.args.stream = stream;
      q.path = Path::kStagedMpi;
      q.device = &sim;
      q.run = [ran](const CollArgs &) {
        ++*ran;
        return Status::Ok();
      };
      return q;
    };
    int first = 0, second = 0;
    std::atomic<int> opens{0}, enqueued_in_time{0};
    std::promise<bool> enqueued;
    std::thread caller;
    sim.on_open = [&] {
      if (opens++ != 0) return;
      // Another thread queues a call while this gate opens; wait up to 2 s
      // for its Enqueue to return (it waited until the gate was open when
      // the engine's thread held the queue's lock here).
      caller = std::thread([&] { enqueued.set_value(engine.Enqueue(op(&second)).ok()); });
      auto done = enqueued.get_future();
      if (done.wait_for(std::chrono::seconds(2)) == std::future_status::ready) {
        enqueued_in_time = done.get() ? 1 : 0;
      }
    };
    ASSERT_TRUE(engine.Enqueue(op(&first)).ok());
    ASSERT_TRUE(sim.StreamSynchronize(stream).ok());
    while (opens.load() == 0) std::this_thread::yield();
    caller.join();
    EXPECT_TRUE(engine.Drain().ok());
    EXPECT_EQ(enqueued_in_time.load(), 1) << "Enqueue waited for the gate to open";
    EXPECT_EQ(first, 1);
    EXPECT_TRUE(engine.Drain().ok());
    EXPECT_EQ(second, 1);
    sim.on_open = nullptr;
  }
  ASSERT_TRUE(sim.StreamSynchronize(stream).ok());
  EXPECT_TRUE(sim.StreamDestroy(stream).ok());
}

#ifdef __linux__
TEST_F(EngineTest, SleepsWithoutPreemptingTheCallerAndWorksAsItsEqual) {
  // Idle, the engine's thread sleeps as SCHED_BATCH (waking it never
  // preempts the thread that queued a call); running an operation, it is
  // SCHED_OTHER, as the application's threads.
  if (sched_getscheduler(0) != SCHED_OTHER) GTEST_SKIP() << "this thread is not SCHED_OTHER";
  ProgressEngine engine("test");
  std::atomic<long> tid{0};
  std::atomic<int> policy{-1};
  auto op = Op([&](const CollArgs &) {
    tid = syscall(SYS_gettid);
    policy = sched_getscheduler(0);
    return Status::Ok();
  });
  ASSERT_TRUE(engine.Enqueue(op).ok());
  ASSERT_TRUE(engine.Drain().ok());
  EXPECT_EQ(policy.load(), SCHED_OTHER);
  // Past its polling, asleep: SCHED_BATCH (within a second).
  int idle = -1;
  for (int i = 0; i < 1000 && idle != SCHED_BATCH; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    idle = sched_getscheduler(static_cast<pid_t>(tid.load()));
  }
  EXPECT_EQ(idle, SCHED_BATCH);
  policy = -1;
  ASSERT_TRUE(engine.Enqueue(Op([&](const CollArgs &) {
                policy = sched_getscheduler(0);
                return Status::Ok();
              })).ok());
  ASSERT_TRUE(engine.Drain().ok());
  EXPECT_EQ(policy.load(), SCHED_OTHER) << "woken, it works as SCHED_OTHER again";
  ASSERT_TRUE(sim.StreamSynchronize(stream).ok());
}

// The name the kernel keeps for one of this process's threads.
std::string ThreadName(long tid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/task/%ld/comm", tid);
  std::FILE *f = std::fopen(path, "r");
  if (f == nullptr) return "";
  char name[32] = {};
  if (std::fgets(name, sizeof name, f) == nullptr) name[0] = '\0';
  std::fclose(f);
  std::string s(name);
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

TEST_F(EngineTest, TheLibrarysThreadsAreNamedAsTopAndPerfShowThem) {
  // The engine's thread runs the operation; the emulated device's
  // host-function thread runs the host function queued on the caller's
  // stream. Neither is the caller, whose name the library leaves alone.
  const std::string caller = ThreadName(syscall(SYS_gettid));
  ProgressEngine engine("test");
  std::atomic<long> engine_tid{0};
  ASSERT_TRUE(engine
                  .Enqueue(Op([&](const CollArgs &) {
                    engine_tid = syscall(SYS_gettid);
                    return Status::Ok();
                  }))
                  .ok());
  ASSERT_TRUE(engine.Drain().ok());
  EXPECT_EQ(ThreadName(engine_tid.load()), "iccl-engine");
  std::atomic<long> stream_tid{0};
  ASSERT_TRUE(sim.HostFunc(stream, [&] { stream_tid = syscall(SYS_gettid); }).ok());
  ASSERT_TRUE(sim.StreamSynchronize(stream).ok());
  EXPECT_EQ(ThreadName(stream_tid.load()), "iccl-simhostfn");
  EXPECT_EQ(ThreadName(syscall(SYS_gettid)), caller);
}
#endif

}  // namespace
}  // namespace infiniccl
