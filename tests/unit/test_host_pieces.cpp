// How the MPI backend cuts a large host-buffer reduction into pieces: whole
// up to the threshold (counted over the widest buffer), never when the piece
// size is 0, otherwise pieces of whole elements that tile the count exactly;
// device buffers and the staging pipeline's chunks are never cut.
#include <gtest/gtest.h>

#include <vector>

#include "backend/mpi/host_pieces.h"

namespace {

using infiniccl::HostPiecePlan;
using infiniccl::PlanHostPieces;

constexpr size_t kMiB = size_t{1} << 20;

// Checked independently of the formulas: pieces tile [0, count) in order,
// none empty, all but the last exactly `piece` elements.
std::vector<size_t> Tiles(const HostPiecePlan &p) {
  std::vector<size_t> sizes;
  size_t next = 0;
  for (size_t k = 0; k < p.pieces(); ++k) {
    EXPECT_EQ(p.offset(k), next) << "piece " << k;
    sizes.push_back(p.size(k));
    next += p.size(k);
  }
  EXPECT_EQ(next, p.count);
  return sizes;
}

TEST(HostPieces, WholeUpToTheThreshold) {
  // 16 MiB of float32 exactly: not larger than the threshold.
  HostPiecePlan p = PlanHostPieces(4 * kMiB, 4, 1, kMiB, 16 * kMiB);
  EXPECT_FALSE(p.cut());
  EXPECT_EQ(Tiles(p), std::vector<size_t>{4 * kMiB});
  // One element more: cut into 1 MiB pieces (262144 floats), the last one
  // element long.
  p = PlanHostPieces(4 * kMiB + 1, 4, 1, kMiB, 16 * kMiB);
  EXPECT_TRUE(p.cut());
  const std::vector<size_t> sizes = Tiles(p);
  ASSERT_EQ(sizes.size(), 17u);
  for (size_t k = 0; k < 16; ++k) EXPECT_EQ(sizes[k], 262144u);
  EXPECT_EQ(sizes[16], 1u);
}

TEST(HostPieces, ZeroPieceBytesNeverCuts) {
  const HostPiecePlan p = PlanHostPieces(size_t{1} << 32, 8, 1, 0, 0);
  EXPECT_FALSE(p.cut());
  EXPECT_EQ(p.pieces(), 1u);
  EXPECT_EQ(p.size(0), size_t{1} << 32);
}

TEST(HostPieces, ThresholdCountsTheWidestBuffer) {
  // ReduceScatter at 4 ranks: 5 MiB per block, 20 MiB of input.
  const size_t count = 5 * kMiB / 2;  // float16
  EXPECT_TRUE(PlanHostPieces(count, 2, 4, kMiB, 16 * kMiB).cut());
  EXPECT_FALSE(PlanHostPieces(count, 2, 1, kMiB, 16 * kMiB).cut());
  // A threshold so large that count * elem * blocks would overflow a naive
  // product on the way: still whole.
  EXPECT_FALSE(PlanHostPieces(size_t{1} << 40, 8, 1024, kMiB, ~size_t{0}).cut());
}

TEST(HostPieces, ColumnsOfSeveralBlocksStayWithinOnePiece) {
  // Scatter at 4 ranks, 64 MiB of float32 at the root: 16 MiB per block, cut
  // into columns of 1 MiB per block (4 MiB in all), the last block's share
  // included.
  HostPiecePlan p = PlanHostPieces(4 * kMiB, 4, 4, 4 * kMiB, 16 * kMiB);
  EXPECT_EQ(Tiles(p), std::vector<size_t>(16, 256 * 1024));
  // 3 blocks of 8-byte elements, 3001-byte pieces: 125 elements per block.
  p = PlanHostPieces(300, 8, 3, 3001, 0);
  EXPECT_EQ(Tiles(p), (std::vector<size_t>{125, 125, 50}));
  // More blocks than a piece holds elements: one element of each block.
  p = PlanHostPieces(2, 4, 1000, 3001, 0);
  EXPECT_EQ(Tiles(p), (std::vector<size_t>{1, 1}));
}

TEST(HostPieces, PiecesAreWholeElements) {
  // 3001 bytes of 8-byte elements: 375 elements a piece.
  const HostPiecePlan p = PlanHostPieces(1000, 8, 1, 3001, 0);
  EXPECT_EQ(Tiles(p), (std::vector<size_t>{375, 375, 250}));
  // A piece smaller than one element still moves one element at a time.
  const HostPiecePlan q = PlanHostPieces(3, 8, 1, 5, 0);
  EXPECT_EQ(Tiles(q), (std::vector<size_t>{1, 1, 1}));
  // One piece holds everything: whole.
  EXPECT_FALSE(PlanHostPieces(100, 4, 1, 400, 0).cut());
  EXPECT_TRUE(PlanHostPieces(101, 4, 1, 400, 0).cut());
}

TEST(HostPieces, CountsAboveIntMax) {
  // 2^31 + 5 bytes of uint8 in 1 MiB pieces: every piece fits an int count.
  const size_t count = (size_t{1} << 31) + 5;
  const HostPiecePlan p = PlanHostPieces(count, 1, 1, kMiB, 16 * kMiB);
  EXPECT_EQ(p.pieces(), 2049u);
  EXPECT_EQ(p.size(2047), kMiB);
  EXPECT_EQ(p.size(2048), 5u);
  EXPECT_EQ(p.offset(2048), size_t{1} << 31);
}

TEST(HostPieces, EmptyIsOnePiece) {
  const HostPiecePlan p = PlanHostPieces(0, 4, 1, 1, 0);
  EXPECT_EQ(p.pieces(), 1u);
  EXPECT_EQ(p.size(0), 0u);
}

TEST(HostPieces, DeviceBuffersAndStagedChunksStayWhole) {
  // The process settings are the defaults here (16 MiB threshold): a 64 MiB
  // host AllReduce is cut, the same call on device memory (direct path) or
  // from the staging pipeline is not.
  infiniccl::CollArgs a{};
  a.kind = infiniccl::CollKind::kAllReduce;
  a.count = 16 * kMiB;
  a.dtype = infinicclFloat32;
  EXPECT_TRUE(infiniccl::HostPiecesFor(a, 1).cut());
  a.staged = true;
  EXPECT_FALSE(infiniccl::HostPiecesFor(a, 1).cut());
  a.staged = false;
  a.device = reinterpret_cast<infiniccl::DeviceRuntime *>(&a);  // only compared to null
  EXPECT_FALSE(infiniccl::HostPiecesFor(a, 1).cut());
}

}  // namespace
