// The EMULATED device's strict modes (SimStrict: what a GPU does not
// forgive) and the engine and staging pool surviving them, without MPI:
// serialised host functions, pageable copies, implicit synchronisation,
// gates by host functions; the pool never holding its lock across a free
// that waits for the device, an engine's thread never allocating pinned
// memory, a closure that throws, and an abort that leaves a started
// operation's gate closed until it ends.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <future>
#include <new>
#include <thread>
#include <vector>

#include "device/sim/sim_runtime.h"
#include "progress/engine.h"
#include "staging/staging_pool.h"

namespace infiniccl {
namespace {

using namespace std::chrono_literals;

// Runs `f` on a thread of its own; a deadlock fails the test (and ends the
// process, since the stuck threads cannot be joined) instead of hanging it.
template <typename F>
void WithinSeconds(int seconds, F f) {
  auto done = std::async(std::launch::async, f);
  if (done.wait_for(std::chrono::seconds(seconds)) != std::future_status::ready) {
    ADD_FAILURE() << "deadlock: not done within " << seconds << " s";
    std::fflush(stdout);
    std::_Exit(1);
  }
  done.get();
}

SimStrict Strict(bool memops = true) {
  SimStrict s;
  s.stream_memops = memops;
  return s;
}

TEST(SimStrict, HostFunctionsOfADeviceRunOneAtATime) {
  for (bool serial : {true, false}) {
    SimStrict strict;
    strict.hostfn_serial = serial;
    SimRuntime sim(1, 0, true, 0, strict);
    void *a = nullptr, *b = nullptr;
    ASSERT_TRUE(sim.StreamCreate(&a).ok());
    ASSERT_TRUE(sim.StreamCreate(&b).ok());
    std::promise<void> release;
    std::shared_future<void> released = release.get_future().share();
    std::atomic<bool> first_in{false}, second_ran{false};
    ASSERT_TRUE(sim.HostFunc(a, [&] {
                     first_in = true;
                     released.wait();
                   }).ok());
    while (!first_in) std::this_thread::yield();
    ASSERT_TRUE(sim.HostFunc(b, [&] { second_ran = true; }).ok());
    if (serial) {
      // Stream b's host function waits behind stream a's, as on CUDA.
      std::this_thread::sleep_for(50ms);
      EXPECT_FALSE(second_ran.load());
    } else {
      ASSERT_TRUE(sim.StreamSynchronize(b).ok());
      EXPECT_TRUE(second_ran.load());
    }
    release.set_value();
    ASSERT_TRUE(sim.StreamSynchronize(a).ok());
    ASSERT_TRUE(sim.StreamSynchronize(b).ok());
    EXPECT_TRUE(second_ran.load());
    ASSERT_TRUE(sim.StreamDestroy(a).ok());
    ASSERT_TRUE(sim.StreamDestroy(b).ok());
  }
}

TEST(SimStrict, PageableCopiesBehaveAsCudas) {
  SimRuntime sim(1, 0, true, 0, Strict());
  void *s = nullptr, *dev = nullptr;
  ASSERT_TRUE(sim.StreamCreate(&s).ok());
  ASSERT_TRUE(sim.Malloc(&dev, sizeof(int)).ok());
  // Host to device from pageable memory: the source as it was at the call,
  // though the stream reaches the copy only after the kernel.
  int src = 7;
  ASSERT_TRUE(sim.Kernel(s, 30000).ok());
  ASSERT_TRUE(sim.MemcpyAsync(dev, &src, sizeof src, CopyKind::kHostToDevice, s).ok());
  src = 8;
  // Device to host into pageable memory: done when the call returns.
  int dst = 0;
  ASSERT_TRUE(sim.Kernel(s, 30000).ok());
  ASSERT_TRUE(sim.MemcpyAsync(&dst, dev, sizeof dst, CopyKind::kDeviceToHost, s).ok());
  EXPECT_EQ(dst, 7);
  // Pinned memory is read when the stream reaches the copy.
  void *pinned = nullptr;
  ASSERT_TRUE(sim.MallocHost(&pinned, sizeof(int)).ok());
  *static_cast<int *>(pinned) = 1;
  ASSERT_TRUE(sim.Kernel(s, 30000).ok());
  ASSERT_TRUE(sim.MemcpyAsync(dev, pinned, sizeof(int), CopyKind::kHostToDevice, s).ok());
  *static_cast<int *>(pinned) = 2;
  ASSERT_TRUE(sim.MemcpyAsync(&dst, dev, sizeof dst, CopyKind::kDeviceToHost, s).ok());
  EXPECT_EQ(dst, 2);
  ASSERT_TRUE(sim.FreeHost(pinned).ok());
  ASSERT_TRUE(sim.Free(dev).ok());
  ASSERT_TRUE(sim.StreamDestroy(s).ok());
}

// HostRegister (cudaHostRegister) turns the caller's own memory into pinned
// memory for the copy rules until HostUnregister; overlapping ranges and
// unknown pointers are refused, and INFINICCL_SIM_PINNED=0 refuses it all.
TEST(SimStrict, RegisteredHostMemoryCopiesAsPinned) {
  SimRuntime sim(1, 0, true, 0, Strict());
  void *s = nullptr, *dev = nullptr;
  ASSERT_TRUE(sim.StreamCreate(&s).ok());
  ASSERT_TRUE(sim.Malloc(&dev, sizeof(int)).ok());
  std::vector<int> host(1024, 0);
  ASSERT_TRUE(sim.HostRegister(host.data(), host.size() * sizeof(int)).ok());
  EXPECT_FALSE(sim.HostRegister(host.data() + 8, sizeof(int)).ok());
  // Read when the stream reaches the copy, behind the kernel, as pinned.
  host[5] = 1;
  ASSERT_TRUE(sim.Kernel(s, 30000).ok());
  ASSERT_TRUE(sim.MemcpyAsync(dev, &host[5], sizeof(int), CopyKind::kHostToDevice, s).ok());
  host[5] = 2;
  // A copy into it returns before the stream reaches it.
  host[9] = -1;
  ASSERT_TRUE(sim.Kernel(s, 30000).ok());
  ASSERT_TRUE(sim.MemcpyAsync(&host[9], dev, sizeof(int), CopyKind::kDeviceToHost, s).ok());
  EXPECT_EQ(host[9], -1);
  ASSERT_TRUE(sim.StreamSynchronize(s).ok());
  EXPECT_EQ(host[9], 2);
  ASSERT_TRUE(sim.HostUnregister(host.data()).ok());
  EXPECT_FALSE(sim.HostUnregister(host.data()).ok());
  // Pageable again: a copy into it is done when the call returns.
  ASSERT_TRUE(sim.Kernel(s, 30000).ok());
  ASSERT_TRUE(sim.MemcpyAsync(&host[10], dev, sizeof(int), CopyKind::kDeviceToHost, s).ok());
  EXPECT_EQ(host[10], 2);
  sim.SetPinnedAvailable(false);
  EXPECT_EQ(sim.HostRegister(host.data(), sizeof(int)).code(), infinicclNotSupported);
  ASSERT_TRUE(sim.Free(dev).ok());
  ASSERT_TRUE(sim.StreamDestroy(s).ok());
}

TEST(SimStrict, AllocationsAndFreesWaitForTheDevice) {
  SimRuntime sim(1, 0, true, 0, Strict());
  void *s = nullptr;
  ASSERT_TRUE(sim.StreamCreate(&s).ok());
  for (int which = 0; which < 2; ++which) {
    std::atomic<bool> reached{false};
    ASSERT_TRUE(sim.Kernel(s, 20000).ok());
    ASSERT_TRUE(sim.HostFunc(s, [&] { reached = true; }).ok());
    void *p = nullptr;
    ASSERT_TRUE((which == 0 ? sim.Malloc(&p, 64) : sim.MallocHost(&p, 64)).ok());
    EXPECT_TRUE(reached.load()) << (which == 0 ? "Malloc" : "MallocHost");
    ASSERT_TRUE((which == 0 ? sim.Free(p) : sim.FreeHost(p)).ok());
  }
  ASSERT_TRUE(sim.StreamDestroy(s).ok());
}

TEST(SimStrict, WithoutStreamMemoryOperationsGatesAreHostFunctions) {
  SimRuntime sim(1, 0, true, 0, Strict(/*memops=*/false));
  EXPECT_TRUE(sim.GateIsHostFunction());
  EXPECT_STREQ(sim.GateMechanism(), "emulated host function");
  void *a = nullptr, *b = nullptr, *gate = nullptr;
  ASSERT_TRUE(sim.StreamCreate(&a).ok());
  ASSERT_TRUE(sim.StreamCreate(&b).ok());
  ASSERT_TRUE(sim.GateCreate(&gate).ok());
  ASSERT_TRUE(sim.GateWait(a, gate, 1).ok());
  std::this_thread::sleep_for(10ms);  // stream a's host function is inside the gate
  std::atomic<bool> ran{false};
  ASSERT_TRUE(sim.HostFunc(b, [&] { ran = true; }).ok());
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(ran.load()) << "another stream's host function ran past a closed gate";
  sim.GateOpen(gate, 1);
  ASSERT_TRUE(sim.StreamSynchronize(b).ok());
  EXPECT_TRUE(ran.load());
  ASSERT_TRUE(sim.StreamSynchronize(a).ok());
  ASSERT_TRUE(sim.GateDestroy(gate).ok());
  ASSERT_TRUE(sim.StreamDestroy(a).ok());
  ASSERT_TRUE(sim.StreamDestroy(b).ok());
  SimRuntime memops(1, 0, true, 0, Strict(/*memops=*/true));
  EXPECT_FALSE(memops.GateIsHostFunction());
}

// The pool's lock is not held across FreeHost, which waits for the device:
// a stream held by a gate that opens only after an engine's thread returned
// a lease (which takes that lock) would otherwise never be released.
TEST(StagingPoolStrict, TrimWhileAnEngineReturnsASlotBehindAClosedGate) {
  SimRuntime sim(1, 0, true, 0, Strict());
  StagingPool &pool = StagingPool::Global();
  WithinSeconds(20, [&] {
    void *s = nullptr, *gate = nullptr;
    ASSERT_TRUE(sim.StreamCreate(&s).ok());
    ASSERT_TRUE(sim.GateCreate(&gate).ok());
    StagingLease idle, held;
    ASSERT_TRUE(pool.Lease(4096, sim, nullptr, &idle).ok());
    ASSERT_TRUE(pool.Lease(8192, sim, nullptr, &held).ok());
    ASSERT_TRUE(idle.pinned());
    idle.Reset();  // idle, pinned: Trim frees it
    ASSERT_TRUE(sim.GateWait(s, gate, 1).ok());
    std::thread engine([&] {
      std::this_thread::sleep_for(50ms);  // Trim is inside FreeHost by now
      held.Reset();                       // the pool's lock
      sim.GateOpen(gate, 1);
    });
    pool.Trim();
    engine.join();
    ASSERT_TRUE(sim.StreamSynchronize(s).ok());
    pool.Trim();
    ASSERT_TRUE(sim.GateDestroy(gate).ok());
    ASSERT_TRUE(sim.StreamDestroy(s).ok());
  });
}

// An engine's thread never calls MallocHost (it may wait for the device):
// it stages in pageable memory and asks for the pinned buffer, which the
// pool's memory thread makes.
TEST(StagingPoolStrict, AnEnginesThreadAllocatesNoPinnedMemory) {
  SimRuntime sim(1, 0, true, 0, Strict());
  StagingPool &pool = StagingPool::Global();
  pool.Trim();
  const uint64_t pinned_before = sim.stats().host_allocs;
  bool first_pinned = true, second_pinned = false;
  std::thread engine_thread([&] {
    StagingPool::DeferFreesOnThisThread();
    StagingLease lease;
    ASSERT_TRUE(pool.Lease(3 * 4096 + 1, sim, nullptr, &lease).ok());
    first_pinned = lease.pinned();
  });
  engine_thread.join();
  EXPECT_FALSE(first_pinned);
  pool.Quiesce();  // the memory thread made it
  EXPECT_EQ(sim.stats().host_allocs, pinned_before + 1);
  std::thread again([&] {
    StagingPool::DeferFreesOnThisThread();
    StagingLease lease;
    ASSERT_TRUE(pool.Lease(3 * 4096 + 1, sim, nullptr, &lease).ok());
    second_pinned = lease.pinned();
  });
  again.join();
  EXPECT_TRUE(second_pinned);
  pool.FreeDeferred();
  pool.Trim();
}

// A caller's thread queuing a call (NoDeviceWait) returns at once while the
// device is busy: MallocHost and FreeHost wait for every stream (implicit
// synchronisation), so it neither allocates nor frees pinned memory; the
// memory thread makes the buffer once the device lets it.
TEST(StagingPoolStrict, ACallersQueuingThreadDoesNotWaitForABusyDevice) {
  SimRuntime sim(1, 0, true, 0, Strict());
  StagingPool &pool = StagingPool::Global();
  pool.Trim();
  void *s = nullptr, *gate = nullptr;
  ASSERT_TRUE(sim.StreamCreate(&s).ok());
  ASSERT_TRUE(sim.GateCreate(&gate).ok());
  StagingLease pinned;
  ASSERT_TRUE(pool.Lease(4096, sim, nullptr, &pinned).ok());
  ASSERT_TRUE(pinned.pinned());
  ASSERT_TRUE(sim.GateWait(s, gate, 1).ok());  // the device is busy until opened
  const uint64_t allocs_before = sim.stats().host_allocs;
  std::promise<bool> leased;
  std::future<bool> returned = leased.get_future();
  std::thread caller([&] {
    StagingPool::NoDeviceWait no_device_wait;
    pinned.Reset();  // an idle pinned buffer over nothing: not freed here
    StagingLease lease;
    const bool ok = pool.Lease(5 * 4096, sim, nullptr, &lease).ok();
    leased.set_value(ok && lease.data() != nullptr && !lease.pinned());
  });
  const bool in_time = returned.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  EXPECT_TRUE(in_time) << "the queuing thread waited for the device";
  if (in_time) {
    EXPECT_TRUE(returned.get());
  }
  EXPECT_EQ(sim.stats().host_allocs, allocs_before);
  sim.GateOpen(gate, 1);
  caller.join();
  pool.Quiesce();
  EXPECT_EQ(sim.stats().host_allocs, allocs_before + 1);
  ASSERT_TRUE(sim.StreamSynchronize(s).ok());
  pool.Trim();
  ASSERT_TRUE(sim.GateDestroy(gate).ok());
  ASSERT_TRUE(sim.StreamDestroy(s).ok());
}

// The memory thread makes the pinned buffer it was asked for even when the
// asking thread's pageable buffer comes back idle while it works: an idle
// pageable buffer is no substitute (the engines would stage in pageable
// memory for good). Many rounds: the two threads race.
TEST(StagingPoolStrict, TheMemoryThreadMakesPinnedMemoryWhateverIdlePageableBufferItMeets) {
  SimRuntime sim(1, 0, true, 0, Strict());
  StagingPool &pool = StagingPool::Global();
  WithinSeconds(60, [&] {
    for (int round = 0; round < 300; ++round) {
      pool.Trim();
      const uint64_t allocs_before = sim.stats().host_allocs;
      std::thread caller([&] {
        StagingPool::NoDeviceWait no_device_wait;
        StagingLease lease;
        ASSERT_TRUE(pool.Lease(5 * 4096, sim, nullptr, &lease).ok());
        ASSERT_FALSE(lease.pinned());
      });  // returned at once, idle
      caller.join();
      pool.Quiesce();
      ASSERT_EQ(sim.stats().host_allocs, allocs_before + 1) << "round " << round;
      StagingLease next;
      ASSERT_TRUE(pool.Lease(5 * 4096, sim, nullptr, &next).ok());
      ASSERT_TRUE(next.pinned()) << "round " << round;
    }
    pool.Trim();
  });
}

class EngineStrict : public ::testing::Test {
 protected:
  SimRuntime sim{1, 0, true, 0, Strict(/*memops=*/false)};
  void *stream = nullptr;
  void SetUp() override { ASSERT_TRUE(sim.StreamCreate(&stream).ok()); }
  void TearDown() override { EXPECT_TRUE(sim.StreamDestroy(stream).ok()); }
  QueuedOp Op(std::function<Status(const CollArgs &)> run, void *on = nullptr) {
    QueuedOp op;
    op.args.kind = CollKind::kAllReduce;
    op.args.stream = on != nullptr ? on : stream;
    op.path = Path::kStagedMpi;
    op.device = &sim;
    op.run = std::move(run);
    return op;
  }
};

TEST_F(EngineStrict, AClosureThatThrowsBecomesTheError) {
  WithinSeconds(20, [&] {
    ProgressEngine engine("test");
    ASSERT_TRUE(engine.Enqueue(Op([](const CollArgs &) -> Status { throw std::bad_alloc(); }))
                    .ok());
    const Status st = engine.Drain();
    EXPECT_EQ(st.code(), infinicclSystemError);
    EXPECT_NE(st.message().find("threw"), std::string::npos) << st.message();
    ASSERT_TRUE(sim.StreamSynchronize(stream).ok());  // released
  });
}

TEST_F(EngineStrict, CancelLeavesAStartedOperationsGateClosedUntilItEnds) {
  WithinSeconds(20, [&] {
    ProgressEngine engine("test");
    std::promise<void> release;
    std::shared_future<void> released = release.get_future().share();
    std::atomic<bool> running{false}, after{false};
    ASSERT_TRUE(engine.Enqueue(Op([&](const CollArgs &) {
                      running = true;
                      released.wait();  // MPI still writing the results
                      return Status::Ok();
                    })).ok());
    ASSERT_TRUE(sim.HostFunc(stream, [&] { after = true; }).ok());
    while (!running) std::this_thread::yield();
    EXPECT_TRUE(engine.started());
    engine.Cancel();
    std::this_thread::sleep_for(50ms);
    EXPECT_FALSE(after.load()) << "the stream went on while the operation still ran";
    release.set_value();
    ASSERT_TRUE(sim.StreamSynchronize(stream).ok());
    EXPECT_TRUE(after.load());
    EXPECT_FALSE(engine.started());
  });
}

TEST_F(EngineStrict, CancelSkipsAnOperationWaitingBehindAKernel) {
  WithinSeconds(20, [&] {
    auto engine = std::make_unique<ProgressEngine>("test");
    std::atomic<int> ran{0};
    // The stream is held by a gate that opens only after DestroyLater has
    // returned: a destruction that waited for the stream would never end
    // (WithinSeconds fails it).
    void *gate = nullptr;
    ASSERT_TRUE(sim.GateCreate(&gate).ok());
    ASSERT_TRUE(sim.GateWait(stream, gate, 1).ok());
    ASSERT_TRUE(engine->Enqueue(Op([&](const CollArgs &) {
                       ++ran;
                       return Status::Ok();
                     })).ok());
    std::this_thread::sleep_for(20ms);
    EXPECT_FALSE(engine->started());
    engine->Cancel();
    // Destroyed without waiting for the stream, as CommAbort's is.
    ProgressEngine::DestroyLater(std::move(engine));
    sim.GateOpen(gate, 1);
    ASSERT_TRUE(sim.StreamSynchronize(stream).ok());
    ASSERT_TRUE(sim.GateDestroy(gate).ok());
    (void)ProgressEngine::WaitDestroyed(std::chrono::hours(1));  // before the device goes
    EXPECT_EQ(ran.load(), 0);
  });
}

// Host-function gates of two engines on one device are never closed at
// once: the second engine's call waits until the first's gates are open.
TEST_F(EngineStrict, TwoEnginesHostFunctionGatesAreNeverClosedAtOnce) {
  WithinSeconds(20, [&] {
    void *other = nullptr;
    ASSERT_TRUE(sim.StreamCreate(&other).ok());
    ProgressEngine a("a"), b("b");
    std::promise<void> release;
    std::shared_future<void> released = release.get_future().share();
    ASSERT_TRUE(a.Enqueue(Op([&](const CollArgs &) {
                   released.wait();
                   return Status::Ok();
                 })).ok());
    std::atomic<bool> b_queued{false};
    std::thread caller([&] {
      EXPECT_TRUE(b.Enqueue(Op([](const CollArgs &) { return Status::Ok(); }, other)).ok());
      b_queued = true;
    });
    std::this_thread::sleep_for(50ms);
    EXPECT_FALSE(b_queued.load()) << "b's gate was queued while a's was closed";
    release.set_value();
    caller.join();
    EXPECT_TRUE(b_queued.load());
    EXPECT_TRUE(a.Drain().ok());
    EXPECT_TRUE(b.Drain().ok());
    ASSERT_TRUE(sim.StreamSynchronize(other).ok());
    ASSERT_TRUE(sim.StreamDestroy(other).ok());
  });
}

}  // namespace
}  // namespace infiniccl
