// How the staged pipeline cuts an operation into chunks: one chunk when it
// fits one host buffer, otherwise balanced chunks of at most the chunk size
// of the widest buffer, both slots within the pool's cap, tiling the columns
// exactly.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "staging/pipeline.h"

namespace {

using infiniccl::ChunkSchedule;
using infiniccl::PlanChunks;

constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kNoCap = size_t{1} << 40;

std::vector<size_t> Sizes(const ChunkSchedule &s) {
  std::vector<size_t> out;
  for (size_t k = 0; k < s.chunks; ++k) out.push_back(s.at(k).cols);
  return out;
}

// Checked independently of the formulas: pieces tile [0, count) in order,
// none empty, widths differ by at most one, max_cols() is the widest.
void ExpectTiling(const ChunkSchedule &s, size_t count) {
  size_t next = 0, widest = 0, narrowest = count;
  for (size_t k = 0; k < s.chunks; ++k) {
    const ChunkSchedule::Piece p = s.at(k);
    ASSERT_EQ(p.offset, next) << "chunk " << k;
    ASSERT_GT(p.cols, 0u) << "chunk " << k;
    next += p.cols;
    widest = std::max(widest, p.cols);
    narrowest = std::min(narrowest, p.cols);
  }
  EXPECT_EQ(next, count);
  EXPECT_EQ(widest, s.max_cols());
  EXPECT_LE(widest - narrowest, 1u);
}

TEST(ChunkSchedule, OneChunkUpToTheChunkSize) {
  // float32 AllReduce (1 block wide, 2 in all), 4 MiB chunks.
  const size_t count = kMiB;  // exactly 4 MiB
  const ChunkSchedule s = PlanChunks(count, 1, 2, 4, 4 * kMiB, kNoCap);
  EXPECT_EQ(s.chunks, 1u);
  EXPECT_EQ(s.at(0).offset, 0u);
  EXPECT_EQ(s.at(0).cols, count);
  // One element more: two balanced chunks, not 4 MiB and 4 bytes.
  EXPECT_EQ(Sizes(PlanChunks(count + 1, 1, 2, 4, 4 * kMiB, kNoCap)),
            (std::vector<size_t>{kMiB / 2 + 1, kMiB / 2}));
}

TEST(ChunkSchedule, LargeOperationsInChunkSizedPieces) {
  const size_t e = kMiB / 4;  // float32 elements per MiB
  EXPECT_EQ(Sizes(PlanChunks(16 * e, 1, 2, 4, 4 * kMiB, kNoCap)),
            (std::vector<size_t>{4 * e, 4 * e, 4 * e, 4 * e}));
  const ChunkSchedule big = PlanChunks(64 * e + 3, 1, 2, 4, 4 * kMiB, kNoCap);
  EXPECT_EQ(big.chunks, 17u);
  EXPECT_LE(big.max_cols() * 4, 4 * kMiB);
  ExpectTiling(big, 64 * e + 3);
}

TEST(ChunkSchedule, WideShapesUseTheWidestBuffer) {
  // AllGather at 4 ranks: the receive buffer is 4 blocks wide, so a 4 MiB
  // chunk holds 1 MiB of columns.
  const ChunkSchedule s = PlanChunks(kMiB, 4, 5, 4, 4 * kMiB, kNoCap);
  EXPECT_EQ(Sizes(s), (std::vector<size_t>{kMiB / 4, kMiB / 4, kMiB / 4, kMiB / 4}));
}

TEST(ChunkSchedule, CapBoundsBothSlots) {
  // Cap 1 MiB, 2 blocks of 8 bytes: both slots of the widest chunk fit.
  const ChunkSchedule s = PlanChunks(10 * kMiB, 1, 2, 8, 64 * kMiB, kMiB);
  EXPECT_LE(2 * 2 * 8 * s.max_cols(), kMiB);
  ExpectTiling(s, 10 * kMiB);
  // Within the chunk size but more than one slot may hold (80 > 32 bytes):
  // one column per chunk.
  EXPECT_EQ(Sizes(PlanChunks(5, 1, 2, 8, 64 * kMiB, 32)),
            (std::vector<size_t>{1, 1, 1, 1, 1}));
}

TEST(ChunkSchedule, TilesExactlyForAnyCountAndChunk) {
  // Odd chunk sizes (the tests force 3001 bytes), every shape, many counts.
  for (size_t chunk : {size_t{1}, size_t{7}, size_t{3001}, size_t{4096}, 4 * kMiB}) {
    for (size_t widest : {size_t{1}, size_t{3}, size_t{4}}) {
      for (size_t count = 1; count < 3000; count += count < 64 ? 1 : 37) {
        const ChunkSchedule s = PlanChunks(count, widest, widest + 1, 2, chunk, kNoCap);
        ExpectTiling(s, count);
        EXPECT_LE(s.max_cols() * widest * 2, std::max<size_t>(chunk, widest * 2));
        if (::testing::Test::HasFailure()) {
          FAIL() << "chunk " << chunk << " widest " << widest << " count " << count;
        }
      }
    }
  }
}

}  // namespace
