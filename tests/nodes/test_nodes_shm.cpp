// The shared-memory transport's segment across EMULATED nodes
// (tests/nodes/run_on_nodes.sh), host buffers, with INFINICCL_SHM=1 and
// INFINICCL_HIERARCHY=0 (no two-level groups, which make segments of their
// own inside each node). Counts the segments each rank makes by their tag
// (mpi/node_segment.h's test hook, at the step that makes one):
//
//  1. a communicator of every rank (two nodes or more) makes no "shm"
//     segment, the node's sequence board ("seq") one; its AllReduce, in
//     int64 and float32, is exact;
//  2. a communicator of each node's ranks (infinicclCommSplit by node)
//     makes one "shm" segment on each rank of a node of two or more ranks,
//     none on a node of one; its AllReduce is exact.
//
// `test_nodes_shm hier` (INFINICCL_HIERARCHY=1, no CCL): the communicator of
// every rank makes the two-level path's segment inside each node of two or
// more ranks, and no other: one "shm" segment on such a node's ranks, none
// on a node of one.
#include <infiniccl/infiniccl.h>
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "mpi/node_segment.h"
#include "test_util.h"

using namespace itest;

namespace {

int g_shm = 0, g_seq = 0;

void OnStep(const char *tag, const char *step) {
  if (std::strcmp(step, "memfd made") != 0 && std::strcmp(step, "name made") != 0) return;
  if (std::strcmp(tag, "shm") == 0) ++g_shm;
  if (std::strcmp(tag, "seq") == 0) ++g_seq;
}

// AllReduce of (member + 1) * (i % 7 + 1) over `n` members, exact in int64
// and float32.
void ExpectExact(infinicclComm_t comm, int member, int n, const char *what) {
  const size_t count = 5000;
  std::vector<int64_t> a(count);
  std::vector<float> f(count), fo(count, -1.0f);
  for (size_t i = 0; i < count; ++i) {
    a[i] = (member + 1) * static_cast<int64_t>(i % 7 + 1);
    f[i] = static_cast<float>(a[i]);
  }
  CHECK_RC(infinicclAllReduce(a.data(), a.data(), count, infinicclInt64, infinicclSum, comm,
                              nullptr),
           infinicclSuccess);
  CHECK_RC(infinicclAllReduce(f.data(), fo.data(), count, infinicclFloat32, infinicclSum, comm,
                              nullptr),
           infinicclSuccess);
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    const int64_t want = static_cast<int64_t>(n) * (n + 1) / 2 * static_cast<int64_t>(i % 7 + 1);
    if (a[i] != want || fo[i] != static_cast<float>(want)) ++wrong;
  }
  CHECK(wrong == 0, "%s: %zu of %zu sums wrong", what, wrong, count);
}

}  // namespace

int main(int argc, char **argv) {
  CHECK_RC(infinicclInit(&argc, &argv), infinicclSuccess);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  g_rank = rank;
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int node_rank = 0, node_size = 1;
  MPI_Comm_rank(node, &node_rank);
  MPI_Comm_size(node, &node_size);
  int nodes = node_rank == 0 ? 1 : 0, first = rank;
  MPI_Allreduce(MPI_IN_PLACE, &nodes, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Bcast(&first, 1, MPI_INT, 0, node);  // the node's first world rank: its color
  MPI_Comm_free(&node);
  CHECK(nodes >= 2, "the job is on %d node(s); the test needs two or more", nodes);
  infiniccl::NodeSegment::SetStepHookForTesting(OnStep);

  infinicclComm_t world = nullptr;
  CHECK_RC(infinicclCommInitAll(&world, 0, nullptr), infinicclSuccess);
  const bool hier = argc > 1 && std::strcmp(argv[1], "hier") == 0;
  const int inside = hier && node_size >= 2 ? 1 : 0;  // the two-level path's group
  CHECK(g_shm == inside,
        "a communicator over %d nodes made %d shared-memory segment(s) on a node of %d; "
        "expected %d",
        nodes, g_shm, node_size, inside);
  CHECK(g_seq == 1, "the sequence board: %d segment(s) made", g_seq);
  ExpectExact(world, rank, size, "every rank");
  std::printf("[rank %d] %d nodes: %d shm segment(s), %d sequence board(s) made\n", rank, nodes,
              g_shm, g_seq);

  infinicclComm_t local = nullptr;
  CHECK_RC(infinicclCommSplit(world, first, rank, &local), infinicclSuccess);
  CHECK(g_shm - inside == (node_size >= 2 ? 1 : 0),
        "the node's communicator (%d ranks): %d segment(s)", node_size, g_shm - inside);
  ExpectExact(local, node_rank, node_size, "the node's ranks");
  CHECK_RC(infinicclCommDestroy(local), infinicclSuccess);
  CHECK_RC(infinicclCommDestroy(world), infinicclSuccess);

  const long total = TotalFailures();
  std::printf("[rank %d/%d] test_nodes_shm: %ld failures\n", rank, size, g_failures);
  CHECK_RC(infinicclFinalize(), infinicclSuccess);
  return g_failures == 0 && total == 0 ? 0 : 1;
}
