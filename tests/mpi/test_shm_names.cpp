// A shared-memory backend made with a rank map (as the two-level path makes
// one on each group's communicator) names the mapped ranks in its
// messages (rank r is 10 + 2r here), never its ranks in the communicator:
// - an AllReduce whose count differs on the last rank is refused on every
//   rank, naming the ranks of each count;
// - a Broadcast whose root differs on the last rank likewise, each root
//   named as the ranks are;
// - the last rank calls Abort, the others then wait for it in an AllReduce
//   and return RemoteError naming it and themselves.
#include <mpi.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "backend/shm/shm_backend.h"

namespace {

int Fail(int rank, const std::string &what) {
  std::fprintf(stderr, "rank %d: FAIL: %s\n", rank, what.c_str());
  return 1;
}

}  // namespace

int main(int argc, char **argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int bad = 0;
  std::vector<int> names;
  for (int r = 0; r < size; ++r) names.push_back(10 + 2 * r);
  std::unique_ptr<infiniccl::ShmBackend> shm;
  std::string why;
  infiniccl::Status st = infiniccl::ShmBackend::Create(MPI_COMM_WORLD, rank, size, false, &shm, &why,
                                                       names);
  if (!st.ok() || shm == nullptr) {
    bad = Fail(rank, "no shared memory: " + st.message() + why);
  } else {
    const int last = size - 1;
    std::vector<float> in(65, 1.0f), out(65, 0.0f);
    infiniccl::CollArgs a{};
    a.kind = infiniccl::CollKind::kAllReduce;
    a.sendbuff = in.data();
    a.recvbuff = out.data();
    a.count = rank == last ? 65 : 64;
    a.dtype = infinicclFloat32;
    a.op = infinicclSum;
    st = shm->Run(a);
    std::string others;
    for (int r = 0; r < last; ++r) others += (r > 0 ? "," : "") + std::to_string(10 + 2 * r);
    const std::string differs = "count differs: rank " + others + " count=64, rank " +
                                std::to_string(10 + 2 * last) + " count=65";
    if (st.code() != infinicclInvalidUsage || st.message().find(differs) == std::string::npos) {
      bad = Fail(rank, "AllReduce of differing counts returned \"" + st.message() +
                           "\"; expected InvalidUsage with \"" + differs + "\"");
    }
    a.kind = infiniccl::CollKind::kBroadcast;
    a.count = 64;
    a.root = rank == last ? 1 : 0;
    st = shm->Run(a);
    const std::string roots = "root differs: rank " + others + " root=10, rank " +
                              std::to_string(10 + 2 * last) + " root=12";
    if (st.code() != infinicclInvalidUsage || st.message().find(roots) == std::string::npos) {
      bad = Fail(rank, "Broadcast of differing roots returned \"" + st.message() +
                           "\"; expected InvalidUsage with \"" + roots + "\"");
    }
    a.kind = infiniccl::CollKind::kAllReduce;
    a.root = 0;
    if (rank == last) shm->Abort();
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank != last) {
      st = shm->Run(a);
      const std::string want = "rank " + std::to_string(10 + 2 * last) +
                               " left the communicator (infinicclCommAbort) while rank " +
                               std::to_string(10 + 2 * rank) + " waited for it";
      if (st.code() != infinicclRemoteError || st.message().find(want) == std::string::npos) {
        bad = Fail(rank, "AllReduce after the last rank's Abort returned \"" + st.message() +
                             "\"; expected RemoteError with \"" + want + "\"");
      }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    shm.reset();
  }
  int any = 0;
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0 && any == 0) std::printf("shm names: PASS\n");
  MPI_Finalize();
  return any;
}
