// How the staged pipeline cuts an operation into chunks: an exact tiling of
// the columns, ramps of steady/8, /4, /2 at both ends, balanced chunks of at
// most `steady` columns between them, and both slots within the pool's cap.
#include <gtest/gtest.h>

#include <vector>

#include "staging/pipeline.h"

namespace {

using infiniccl::ChunkSchedule;
using infiniccl::PlanChunks;

constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kNoCap = size_t{1} << 40;

std::vector<size_t> Sizes(const ChunkSchedule &s) {
  std::vector<size_t> out;
  for (size_t k = 0; k < s.chunks(); ++k) out.push_back(s.at(k).cols);
  return out;
}

// Checked independently of the formulas: pieces tile [0, count) in order,
// none empty, none wider than max_cols(), and max_cols() is attained.
void ExpectTiling(const ChunkSchedule &s, size_t count) {
  size_t next = 0, widest = 0;
  for (size_t k = 0; k < s.chunks(); ++k) {
    const ChunkSchedule::Piece p = s.at(k);
    ASSERT_EQ(p.offset, next) << "chunk " << k;
    ASSERT_GT(p.cols, 0u) << "chunk " << k;
    ASSERT_LE(p.cols, s.max_cols()) << "chunk " << k;
    next += p.cols;
    widest = std::max(widest, p.cols);
  }
  EXPECT_EQ(next, count);
  EXPECT_EQ(widest, s.max_cols());
}

TEST(ChunkSchedule, SmallOperationIsOneChunk) {
  // 4 MiB chunks of float32 AllReduce (1 block wide, 2 blocks in all):
  // ramps start at 512 KiB, so below 1.5 MiB there is nothing to overlap.
  const size_t count = (3 * kMiB / 2) / 4 - 1;
  const ChunkSchedule s = PlanChunks(count, 1, 2, 4, 4 * kMiB, kNoCap);
  EXPECT_EQ(s.chunks(), 1u);
  EXPECT_EQ(s.at(0).offset, 0u);
  EXPECT_EQ(s.at(0).cols, count);
  EXPECT_EQ(s.max_cols(), count);
}

TEST(ChunkSchedule, RampsAtBothEnds) {
  // 1.5 MiB: 512 KiB three times.
  EXPECT_EQ(Sizes(PlanChunks(3 * kMiB / 8, 1, 2, 4, 4 * kMiB, kNoCap)),
            (std::vector<size_t>{kMiB / 8, kMiB / 8, kMiB / 8}));
  // 4 MiB: 512K 1M 1M 1M 512K (in float32 elements).
  EXPECT_EQ(Sizes(PlanChunks(kMiB, 1, 2, 4, 4 * kMiB, kNoCap)),
            (std::vector<size_t>{kMiB / 8, kMiB / 4, kMiB / 4, kMiB / 4, kMiB / 8}));
  // 16 MiB: 512K 1M 2M, 9 MiB in three 3 MiB chunks, 2M 1M 512K.
  const size_t e = kMiB / 4;  // float32 elements per MiB
  EXPECT_EQ(Sizes(PlanChunks(16 * e, 1, 2, 4, 4 * kMiB, kNoCap)),
            (std::vector<size_t>{e / 2, e, 2 * e, 3 * e, 3 * e, 3 * e, 2 * e, e, e / 2}));
  // 64 MiB: the middle is 57 MiB in 15 balanced chunks of at most 4 MiB.
  const ChunkSchedule big = PlanChunks(64 * e, 1, 2, 4, 4 * kMiB, kNoCap);
  EXPECT_EQ(big.chunks(), 6u + 15u);
  EXPECT_LE(big.max_cols(), 4 * e);
  ExpectTiling(big, 64 * e);
}

TEST(ChunkSchedule, WideShapesUseTheWidestBuffer) {
  // AllGather at 4 ranks: the receive buffer is 4 blocks wide, so a 4 MiB
  // chunk holds 1 MiB of columns.
  const ChunkSchedule s = PlanChunks(kMiB / 4, 4, 5, 4, 4 * kMiB, kNoCap);
  EXPECT_EQ(s.steady, kMiB / 4);
  EXPECT_EQ(Sizes(s), (std::vector<size_t>{kMiB / 32, kMiB / 16, kMiB / 16, kMiB / 16,
                                           kMiB / 32}));
}

TEST(ChunkSchedule, CapBoundsBothSlots) {
  // Cap 1 MiB, 2 blocks of 8 bytes: both slots of the widest chunk fit.
  const size_t cap = kMiB;
  const ChunkSchedule s = PlanChunks(10 * kMiB, 1, 2, 8, 64 * kMiB, cap);
  EXPECT_LE(2 * 2 * 8 * s.max_cols(), cap);
  ExpectTiling(s, 10 * kMiB);
  // Cap 64 bytes: steady chunks of 2 columns, a ramp of 1.
  EXPECT_EQ(Sizes(PlanChunks(5, 1, 2, 8, 64 * kMiB, 64)), (std::vector<size_t>{1, 2, 1, 1}));
  // Cap 32 bytes: one column per slot, nothing to ramp, and the operation
  // (80 bytes) is more than one slot may hold: one column at a time.
  const ChunkSchedule t = PlanChunks(5, 1, 2, 8, 64 * kMiB, 32);
  EXPECT_EQ(Sizes(t), (std::vector<size_t>{1, 1, 1, 1, 1}));
}

TEST(ChunkSchedule, TilesExactlyForAnyCountAndChunk) {
  // Odd chunk sizes (the tests force 3001 bytes), every shape, many counts.
  for (size_t chunk : {size_t{1}, size_t{7}, size_t{3001}, size_t{4096}, 4 * kMiB}) {
    for (size_t widest : {size_t{1}, size_t{3}, size_t{4}}) {
      for (size_t count = 1; count < 3000; count += count < 64 ? 1 : 37) {
        const ChunkSchedule s = PlanChunks(count, widest, widest + 1, 2, chunk, kNoCap);
        ExpectTiling(s, count);
        // Chunks never shrink towards the middle: each ramp step doubles.
        for (size_t k = 1; k < s.levels; ++k) {
          EXPECT_EQ(s.at(k).cols, 2 * s.at(k - 1).cols);
        }
        if (::testing::Test::HasFailure()) {
          FAIL() << "chunk " << chunk << " widest " << widest << " count " << count;
        }
      }
    }
  }
}

}  // namespace
