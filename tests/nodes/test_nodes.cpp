// Ranks on EMULATED nodes (tests/nodes/run_on_nodes.sh, docs/TESTING.md):
// checks, on every rank, that the job really is spread over separate hosts
// the way the launcher was told, and that the library binds devices per
// node. Public API and MPI only; run as
//   tests/nodes/run_on_nodes.sh --mpi openmpi --nodes 1,2,3 -- test_nodes
// (the layout comes from ICCL_NODES_HOSTS, which the runner sets).
//
// On every rank:
//  1. its host name is the emulated node the launcher placed it on (ranks in
//     order: the first N1 on the first node...);
//  2. MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) holds exactly the ranks of
//     its node, and the launcher's node-local rank variable agrees;
//  3. device binding, on the EMULATED device (INFINICCL_DEVICE=sim, 8
//     devices per node): infinicclCommInitAll(&comm, size, NULL) binds it to
//     device <local rank>, so each node's ranks get 0..n-1. The header has no
//     query for the bound device, so the test reads the library's INFO line
//     ("bound to ... device D of N (local rank L from SOURCE)") from its own
//     INFINICCL_DEBUG_FILE. Three communicators: the local rank from the
//     launcher's variable; from MPI_COMM_TYPE_SHARED once those variables
//     are removed; and through a devlist (devlist[local rank]);
//  4. collectives across nodes with exact results: AllReduce, Broadcast from
//     a rank of the last node, AllGather, ReduceScatter, a Send/Recv ring in
//     a group, and a two-level AllReduce (CommSplit by node, then among the
//     nodes' first ranks, then Broadcast inside each node) that must equal
//     the flat one.
// `test_nodes hang` only starts MPI and blocks forever (rank 0 never reaches
// the barrier): the runner's self-test kills it by its timeout.
#include <infiniccl/infiniccl.h>
#include <mpi.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.h"

using namespace itest;

namespace {

struct Node {
  std::string name;
  int ranks = 0;
  int first = 0;  // world rank of its first rank
};

std::vector<Node> ParseLayout(const char *s) {
  std::vector<Node> nodes;
  std::stringstream in(s != nullptr ? s : "");
  std::string item;
  int first = 0;
  while (std::getline(in, item, ',')) {
    const size_t colon = item.rfind(':');
    if (colon == std::string::npos) return {};
    Node n{item.substr(0, colon), std::atoi(item.c_str() + colon + 1), first};
    if (n.ranks <= 0) return {};
    first += n.ranks;
    nodes.push_back(n);
  }
  return nodes;
}

std::string HostName() {
  char h[256] = "";
  gethostname(h, sizeof h - 1);
  return h;
}

// The launchers' node-local rank variables the library reads
// (src/core/binding.cpp), removed to make it fall back on
// MPI_COMM_TYPE_SHARED.
const char *const kLocalRankVars[] = {"OMPI_COMM_WORLD_LOCAL_RANK",
                                      "MPI_LOCALRANKID",
                                      "MV2_COMM_WORLD_LOCAL_RANK",
                                      "PMI_LOCAL_RANK",
                                      "PALS_LOCAL_RANKID",
                                      "FLUX_TASK_LOCAL_ID",
                                      "JSM_NAMESPACE_LOCAL_RANK",
                                      "MPT_LRANK",
                                      "LOCAL_RANK",
                                      "SLURM_LOCALID"};

std::string g_log;  // this process's INFINICCL_DEBUG_FILE

struct Bound {
  bool found = false;
  int device = -1, count = -1, local_rank = -1;
  std::string source, line;
  bool via_devlist = false;
};

// The last "bound to" INFO line in this process's log.
Bound LastBinding(const std::string &host, int rank) {
  Bound b;
  std::ifstream in(g_log);
  static const std::regex kLine(
      R"(^([^:]+):[0-9]+:(-?[0-9]+) INFINICCL INFO bound to .* device ([0-9]+) of ([0-9]+) )"
      R"(\(local rank ([0-9]+) from ([A-Za-z_]+)(, via devlist)?\))");
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (!std::regex_search(line, m, kLine)) continue;
    b.found = true;
    b.line = line;
    CHECK(m[1] == host, "[%s] the log line's host is '%s': %s", host.c_str(),
          m[1].str().c_str(), line.c_str());
    CHECK(std::stoi(m[2]) == rank, "[%s] the log line's rank: %s", host.c_str(),
          line.c_str());
    b.device = std::stoi(m[3]);
    b.count = std::stoi(m[4]);
    b.local_rank = std::stoi(m[5]);
    b.source = m[6];
    b.via_devlist = m[7].matched;
  }
  if (!b.found) {
    std::fprintf(
        stderr,
        "[rank %d] no 'bound to ... device D of N (local rank L from SOURCE)' INFO "
        "line in %s (has the library's binding message changed?)\n",
        rank, g_log.c_str());
  }
  return b;
}

int HangForever() {
  MPI_Init(nullptr, nullptr);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0)
    for (;;) sleep(1);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc > 1 && std::string(argv[1]) == "hang") return HangForever();

  // Before Init, which reads the environment: the emulated device, INFO log
  // to a file of this process only, no local-rank override.
  const char *tmp = std::getenv("TMPDIR");
  g_log = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") +
          "/test_nodes.%h.%p.log";
  setenv("INFINICCL_DEVICE", "sim", 1);
  setenv("INFINICCL_DEBUG", "INFO", 1);
  setenv("INFINICCL_DEBUG_FILE", g_log.c_str(), 1);
  unsetenv("INFINICCL_DEBUG_SUBSYS");
  unsetenv("INFINICCL_LOCAL_RANK");
  setenv("INFINICCL_SIM_DEVICE_COUNT", "8", 1);  // more than any node here has ranks

  if (infinicclInit(&argc, &argv) != infinicclSuccess) {
    std::fprintf(stderr, "infinicclInit failed: %s\n", SafeLastError());
    return 2;
  }
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  g_rank = rank;
  const std::string host = HostName();
  g_log.replace(g_log.find("%h"), 2, host);
  g_log.replace(g_log.find("%p"), 2, std::to_string(getpid()));
  const double t0 = MPI_Wtime();

  // ---- 1. the layout, and this rank's host name ---------------------------------
  const std::vector<Node> nodes = ParseLayout(std::getenv("ICCL_NODES_HOSTS"));
  int total = 0;
  for (const Node &n : nodes) total += n.ranks;
  if (nodes.empty() || total != size) {
    if (rank == 0)
      std::fprintf(
          stderr,
          "FAIL: ICCL_NODES_HOSTS='%s' does not describe this job of %d ranks: run "
          "it with tests/nodes/run_on_nodes.sh\n",
          std::getenv("ICCL_NODES_HOSTS") ? std::getenv("ICCL_NODES_HOSTS") : "", size);
    infinicclFinalize();
    return 2;
  }
  int node = 0;
  while (rank >= nodes[node].first + nodes[node].ranks) ++node;
  const Node &me = nodes[node];
  const int local = rank - me.first;
  CHECK(host == me.name, "host name '%s', but the launcher was to place rank %d on %s",
        host.c_str(), rank, me.name.c_str());

  // ---- 2. MPI's view of the node ----------------------------------------------
  MPI_Comm shared = MPI_COMM_NULL;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &shared);
  int shared_rank = -1, shared_size = -1;
  MPI_Comm_rank(shared, &shared_rank);
  MPI_Comm_size(shared, &shared_size);
  CHECK(shared_size == me.ranks, "[%s] MPI_COMM_TYPE_SHARED has %d ranks, the node %d",
        host.c_str(), shared_size, me.ranks);
  CHECK(shared_rank == local, "[%s] rank %d in MPI_COMM_TYPE_SHARED, expected %d",
        host.c_str(), shared_rank, local);
  std::vector<int> members(shared_size);
  MPI_Allgather(&rank, 1, MPI_INT, members.data(), 1, MPI_INT, shared);
  for (int i = 0; i < shared_size; ++i)
    CHECK(members[i] == me.first + i,
          "[%s] MPI_COMM_TYPE_SHARED member %d is world rank %d, expected %d",
          host.c_str(), i, members[i], me.first + i);
  MPI_Comm_free(&shared);
  const char *launcher_var = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK") != nullptr
                                 ? "OMPI_COMM_WORLD_LOCAL_RANK"
                                 : "MPI_LOCALRANKID";
  const char *launcher_local = std::getenv(launcher_var);
  CHECK(launcher_local != nullptr && std::atoi(launcher_local) == local,
        "[%s] %s=%s, expected %d", host.c_str(), launcher_var,
        launcher_local ? launcher_local : "(unset)", local);

  // ---- 3. device binding across nodes ---------------------------------------------
  // 3a. upstream's call: the local rank from the launcher's variable.
  infinicclComm_t comm = nullptr;
  CHECK_RC(infinicclCommInitAll(&comm, size, nullptr), infinicclSuccess);
  if (comm == nullptr) MPI_Abort(MPI_COMM_WORLD, 2);
  Bound b = LastBinding(host, rank);
  const int device = b.device;
  CHECK(b.found && b.device == local && b.local_rank == local &&
            b.source == launcher_var && b.count == 8 && !b.via_devlist,
        "[%s] expected device %d (local rank %d from %s): %s", host.c_str(), local, local,
        launcher_var, b.line.c_str());

  // 3b. Without the launchers' variables the library finds the node itself.
  for (const char *v : kLocalRankVars) unsetenv(v);
  infinicclComm_t comm_shared = nullptr;
  CHECK_RC(infinicclCommInitAll(&comm_shared, size, nullptr), infinicclSuccess);
  b = LastBinding(host, rank);
  CHECK(b.found && b.device == local && b.local_rank == local &&
            b.source == "MPI_COMM_TYPE_SHARED",
        "[%s] expected device %d (local rank %d from MPI_COMM_TYPE_SHARED): %s",
        host.c_str(), local, local, b.line.c_str());
  if (comm_shared != nullptr)
    CHECK_RC(infinicclCommDestroy(comm_shared), infinicclSuccess);

  // 3c. A devlist is indexed by the local rank, on every node alike.
  const int devlist[] = {7, 5, 3};
  infinicclComm_t comm_list = nullptr;
  CHECK_RC(infinicclCommInitAll(&comm_list, 3, devlist), infinicclSuccess);
  b = LastBinding(host, rank);
  const int want_dev = local < 3 ? devlist[local] : local;  // past the list: its own
  CHECK(b.found && b.device == want_dev && b.local_rank == local &&
            b.via_devlist == (local < 3),
        "[%s] expected device %d (local rank %d, devlist {7,5,3}): %s", host.c_str(),
        want_dev, local, b.line.c_str());
  if (comm_list != nullptr) CHECK_RC(infinicclCommDestroy(comm_list), infinicclSuccess);

  // Every rank checks the whole job's table: node k's ranks hold 0..n_k-1.
  std::vector<int> devices(size);
  MPI_Allgather(&device, 1, MPI_INT, devices.data(), 1, MPI_INT, MPI_COMM_WORLD);
  std::string table;
  for (const Node &n : nodes) {
    table += " " + n.name + ":";
    for (int i = 0; i < n.ranks; ++i) {
      table += (i ? "," : "") + std::to_string(devices[n.first + i]);
      CHECK(devices[n.first + i] == i, "%s's rank %d (world %d) is bound to device %d",
            n.name.c_str(), i, n.first + i, devices[n.first + i]);
    }
  }
  if (rank == 0) std::printf("[rank 0] devices per node:%s\n", table.c_str());

  // ---- 4. collectives across nodes ------------------------------------------------
  const size_t n = 1031;  // per rank
  auto value = [](int r, size_t i) { return int64_t(r + 1) * 100000 + int64_t(i % 977); };
  std::vector<int64_t> send(n * size), recv(n * size);
  for (size_t i = 0; i < n * size; ++i) send[i] = value(rank, i);

  // AllReduce.
  CHECK_RC(infinicclAllReduce(send.data(), recv.data(), n, infinicclInt64, infinicclSum,
                              comm, nullptr),
           infinicclSuccess);
  std::vector<int64_t> flat(recv.begin(), recv.begin() + n);
  for (size_t i = 0; i < n; ++i) {
    int64_t want = 0;
    for (int r = 0; r < size; ++r) want += value(r, i);
    if (recv[i] != want) {
      CHECK(recv[i] == want, "[%s] AllReduce[%zu] = %lld, expected %lld", host.c_str(), i,
            (long long)recv[i], (long long)want);
      break;
    }
  }
  // Broadcast from the last rank (on the last node).
  const int root = size - 1;
  std::vector<int64_t> bc(n);
  for (size_t i = 0; i < n; ++i) bc[i] = rank == root ? value(root, i) : -1;
  CHECK_RC(
      infinicclBroadcast(bc.data(), bc.data(), n, infinicclInt64, root, comm, nullptr),
      infinicclSuccess);
  for (size_t i = 0; i < n; ++i)
    if (bc[i] != value(root, i)) {
      CHECK(bc[i] == value(root, i), "[%s] Broadcast[%zu] = %lld", host.c_str(), i,
            (long long)bc[i]);
      break;
    }
  // AllGather.
  CHECK_RC(infinicclAllGather(send.data(), recv.data(), n, infinicclInt64, comm, nullptr),
           infinicclSuccess);
  for (int r = 0; r < size; ++r)
    for (size_t i = 0; i < n; ++i)
      if (recv[r * n + i] != value(r, i)) {
        CHECK(recv[r * n + i] == value(r, i), "[%s] AllGather block %d [%zu] = %lld",
              host.c_str(), r, i, (long long)recv[r * n + i]);
        r = size;
        break;
      }
  // ReduceScatter: rank r gets block r of the sum.
  CHECK_RC(infinicclReduceScatter(send.data(), recv.data(), n, infinicclInt64,
                                  infinicclSum, comm, nullptr),
           infinicclSuccess);
  for (size_t i = 0; i < n; ++i) {
    int64_t want = 0;
    for (int r = 0; r < size; ++r) want += value(r, rank * n + i);
    if (recv[i] != want) {
      CHECK(recv[i] == want, "[%s] ReduceScatter[%zu] = %lld, expected %lld",
            host.c_str(), i, (long long)recv[i], (long long)want);
      break;
    }
  }
  // A ring of Send/Recv in a group: every hop from a node's last rank leaves
  // the node.
  if (size > 1) {
    std::vector<int64_t> got(n, -1);
    CHECK_RC(infinicclGroupStart(), infinicclSuccess);
    CHECK_RC(
        infinicclSend(send.data(), n, infinicclInt64, (rank + 1) % size, comm, nullptr),
        infinicclSuccess);
    CHECK_RC(infinicclRecv(got.data(), n, infinicclInt64, (rank + size - 1) % size, comm,
                           nullptr),
             infinicclSuccess);
    CHECK_RC(infinicclGroupEnd(), infinicclSuccess);
    const int from = (rank + size - 1) % size;
    for (size_t i = 0; i < n; ++i)
      if (got[i] != value(from, i)) {
        CHECK(got[i] == value(from, i), "[%s] Recv from %d [%zu] = %lld", host.c_str(),
              from, i, (long long)got[i]);
        break;
      }
  }
  // Two levels: inside the node, among the nodes' first ranks, back inside
  // the node. Must equal the flat AllReduce.
  infinicclComm_t node_comm = nullptr, leaders = nullptr;
  CHECK_RC(infinicclCommSplit(comm, node, local, &node_comm), infinicclSuccess);
  CHECK_RC(
      infinicclCommSplit(comm, local == 0 ? 0 : INFINICCL_SPLIT_NOCOLOR, node, &leaders),
      infinicclSuccess);
  if (node_comm != nullptr) {
    int v = -1;
    CHECK_RC(infinicclCommCount(node_comm, &v), infinicclSuccess);
    CHECK(v == me.ranks, "[%s] node communicator of %d ranks", host.c_str(), v);
    CHECK_RC(infinicclCommUserRank(node_comm, &v), infinicclSuccess);
    CHECK(v == local, "[%s] rank %d in the node communicator", host.c_str(), v);
    std::vector<int64_t> two(n);
    CHECK_RC(infinicclReduce(send.data(), two.data(), n, infinicclInt64, infinicclSum, 0,
                             node_comm, nullptr),
             infinicclSuccess);
    CHECK((local == 0) == (leaders != nullptr), "[%s] leaders communicator",
          host.c_str());
    if (leaders != nullptr) {
      CHECK_RC(infinicclCommCount(leaders, &v), infinicclSuccess);
      CHECK(v == int(nodes.size()), "[%s] leaders communicator of %d ranks", host.c_str(),
            v);
      CHECK_RC(infinicclAllReduce(two.data(), two.data(), n, infinicclInt64, infinicclSum,
                                  leaders, nullptr),
               infinicclSuccess);
    }
    CHECK_RC(infinicclBroadcast(two.data(), two.data(), n, infinicclInt64, 0, node_comm,
                                nullptr),
             infinicclSuccess);
    CHECK(two == flat, "[%s] the two-level AllReduce differs from the flat one",
          host.c_str());
    CHECK_RC(infinicclCommDestroy(node_comm), infinicclSuccess);
  }
  if (leaders != nullptr) CHECK_RC(infinicclCommDestroy(leaders), infinicclSuccess);
  CHECK_RC(infinicclCommDestroy(comm), infinicclSuccess);

  long failures = g_failures, all = 0;
  MPI_Allreduce(&failures, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  std::printf(
      "[rank %d/%d] test_nodes on %s (local rank %d of %d, device %d): %ld failures, "
      "%.2f s\n",
      rank, size, host.c_str(), local, me.ranks, device, failures, MPI_Wtime() - t0);
  if (all == 0) std::remove(g_log.c_str());
  CHECK_RC(infinicclFinalize(), infinicclSuccess);
  if (rank == 0 && all != 0) std::printf("test_nodes: %ld failures in all ranks\n", all);
  return all == 0 && g_failures == 0 ? 0 : 1;
}
