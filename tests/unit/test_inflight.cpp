// The watchdog's in-flight record (no MPI): what Read() returns while idle,
// for a published call, after its path is set, and never a torn mixture of
// two calls while a writer thread publishes calls as fast as it can.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "progress/inflight.h"

using namespace infiniccl;

namespace {

// The same steps as Communicator::BeginCall/EndCall.
void Publish(InFlight &f, uint64_t token, uint64_t seq, uint64_t count, int root) {
  f.token.store(0, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  f.seq.store(seq, std::memory_order_relaxed);
  f.count.store(count, std::memory_order_relaxed);
  f.kind.store(static_cast<int>(CollKind::kReduce), std::memory_order_relaxed);
  f.dtype.store(infinicclFloat32, std::memory_order_relaxed);
  f.op.store(infinicclMax, std::memory_order_relaxed);
  f.root.store(root, std::memory_order_relaxed);
  f.path.store(0, std::memory_order_relaxed);
  f.token.store(token, std::memory_order_release);
}

}  // namespace

TEST(InFlight, IdleReadsNothing) {
  InFlight f;
  InFlight::Snapshot s;
  EXPECT_FALSE(f.Read(&s));
}

TEST(InFlight, PublishedCallReadsBack) {
  InFlight f;
  Publish(f, 7, 42, 1000, 3);
  f.SetPath(Path::kStagedMpi);
  InFlight::Snapshot s;
  ASSERT_TRUE(f.Read(&s));
  EXPECT_EQ(s.token, 7u);
  EXPECT_EQ(s.seq, 42u);
  EXPECT_EQ(s.count, 1000u);
  EXPECT_EQ(s.kind, CollKind::kReduce);
  EXPECT_EQ(s.dtype, infinicclFloat32);
  EXPECT_EQ(s.op, infinicclMax);
  EXPECT_EQ(s.root, 3);
  EXPECT_EQ(s.path, Path::kStagedMpi);
  f.token.store(0, std::memory_order_release);  // EndCall
  EXPECT_FALSE(f.Read(&s));
}

TEST(InFlight, PathNames) {
  EXPECT_STREQ(PathName(Path::kHostMpi), "host");
  EXPECT_STREQ(PathName(Path::kDirectMpi), "direct");
  EXPECT_STREQ(PathName(Path::kStagedMpi), "staged");
  EXPECT_STREQ(PathName(Path::kCcl), "CCL");
}

// Every field of call t is derived from t, so a snapshot mixing two calls
// shows up as fields that disagree with its token.
TEST(InFlight, NoTornSnapshotUnderConcurrentWriter) {
  InFlight f;
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (uint64_t t = 1; !stop.load(std::memory_order_relaxed); ++t) {
      Publish(f, t, t * 3, t * 5, static_cast<int>(t % 1000));
      f.token.store(0, std::memory_order_release);
    }
  });
  long consistent = 0;
  for (long i = 0; i < 20000000 && consistent < 20000; ++i) {
    InFlight::Snapshot s;
    if (!f.Read(&s)) continue;
    ASSERT_EQ(s.seq, s.token * 3);
    ASSERT_EQ(s.count, s.token * 5);
    ASSERT_EQ(s.root, static_cast<int>(s.token % 1000));
    ++consistent;
  }
  stop = true;
  writer.join();
  RecordProperty("consistent_reads", static_cast<int>(consistent));
}
