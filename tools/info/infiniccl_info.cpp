// infiniccl-info: what this build of InfiniCCL is, which MPI it runs on,
// which devices each rank sees and which one it binds to, and every
// INFINICCL_* setting in effect. Runs like any MPI program: under a launcher
// (`icclrun -np 4 infiniccl-info`) it reports every rank, alone it runs as a
// singleton. Rank 0 gathers the reports and prints them in rank order.
#include <infiniccl/infiniccl.h>
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/config.h"
#include "format.h"
#include "report.h"

namespace {

constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;

const char kUsage[] =
    "usage: infiniccl-info [--json] [--version] [--markdown] [--help]\n"
    "\n"
    "Prints the InfiniCCL version and build configuration, the MPI library\n"
    "(flavour, version, GPU-awareness), every backend built (MPI, NCCL, ...) with\n"
    "its version, the devices each rank finds (or why none), its local rank and\n"
    "where that came from, the device it binds to, whether a native CCL\n"
    "communicator is formed (or why not), every INFINICCL_* setting in effect\n"
    "with its default, and INFINICCL_* variables that no setting has.\n"
    "\n"
    "Run it like any MPI program to see every rank, e.g.\n"
    "  icclrun -np 4 infiniccl-info\n"
    "alone it runs as a single-rank job.\n"
    "\n"
    "  --json      one JSON object per rank, each on one line, in rank order\n"
    "  --version   the InfiniCCL version and the backends built, then exit\n"
    "  --markdown  the settings table of docs/CONFIG.md (Markdown), then exit\n"
    "  --help      this text\n";

// Every rank's string, in rank order, at rank 0 (empty elsewhere).
std::vector<std::string> GatherToRoot(const std::string &mine) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int len = static_cast<int>(mine.size());
  std::vector<int> lens(rank == 0 ? size : 0), displs(rank == 0 ? size : 0);
  MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::vector<char> all;
  if (rank == 0) {
    int total = 0;
    for (int i = 0; i < size; ++i) displs[i] = total, total += lens[i];
    all.resize(total > 0 ? total : 1);
  }
  MPI_Gatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), displs.data(),
              MPI_CHAR, 0, MPI_COMM_WORLD);
  std::vector<std::string> out;
  if (rank == 0) {
    for (int i = 0; i < size; ++i) out.emplace_back(all.data() + displs[i], lens[i]);
  }
  return out;
}

// True on every rank when any rank failed (so all of them stop together
// instead of leaving the others waiting in a collective).
bool AnyFailed(bool failed) {
  int mine = failed ? 1 : 0, any = 0;
  MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return any != 0;
}

void Fail(const char *what, infinicclResult_t r, infinicclComm_t comm) {
  // Read the message first: GetRank must not replace it.
  const std::string message = infinicclGetLastError(comm);
  int rank = -1;
  char where[32] = "";
  if (infinicclGetRank(&rank) == infinicclSuccess) {
    std::snprintf(where, sizeof where, "rank %d: ", rank);
  }
  std::fprintf(stderr, "infiniccl-info: %s%s failed: %s: %s\n", where, what,
               infinicclGetErrorString(r), message.c_str());
}

}  // namespace

int main(int argc, char **argv) {
  bool json = false, version = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--json") == 0) {
      json = true;
    } else if (std::strcmp(argv[i], "--version") == 0 ||
               std::strcmp(argv[i], "-V") == 0) {
      version = true;
    } else if (std::strcmp(argv[i], "--markdown") == 0) {
      std::fputs(infiniccl::Config::MarkdownTable().c_str(), stdout);
      return 0;
    } else if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::fputs(kUsage, stdout);
      return 0;
    } else {
      std::fprintf(stderr, "infiniccl-info: unknown argument '%s' (see --help)\n",
                   argv[i]);
      return kExitUsage;
    }
  }

  infinicclResult_t r = infinicclInit(&argc, &argv);
  if (r != infinicclSuccess) {
    Fail("infinicclInit", r, nullptr);
    return kExitFailed;
  }

  infinicclComm_t comm = nullptr;
  r = infinicclCommInitAll(&comm, 0, nullptr);
  if (r != infinicclSuccess) Fail("infinicclCommInitAll", r, nullptr);
  info::RankReport report;
  std::string error;
  bool ok = r == infinicclSuccess;
  if (ok && !info::CollectReport(comm, &report, &error)) {
    std::fprintf(stderr, "infiniccl-info: %s\n", error.c_str());
    ok = false;
  }
  if (comm != nullptr) {
    r = infinicclCommDestroy(comm);
    if (r != infinicclSuccess) {
      Fail("infinicclCommDestroy", r, nullptr);
      ok = false;
    }
  }
  if (AnyFailed(!ok)) {
    infinicclFinalize();
    return kExitFailed;
  }

  if (version) {
    // Like ompi_info --version: one short answer, from rank 0.
    if (report.rank == 0) {
      std::printf("infiniccl-info (InfiniCCL) %s\n", report.version.c_str());
      for (size_t i = 0; i < report.backends.size(); ++i)
        std::printf(
            "backend %s %s\n", report.backends[i].c_str(),
            i < report.backend_versions.size() ? report.backend_versions[i].c_str() : "");
    }
  } else if (json) {
    const std::vector<std::string> lines = GatherToRoot(info::FormatJson(report));
    for (const std::string &line : lines) std::printf("%s\n", line.c_str());
  } else {
    const std::vector<std::string> blocks = GatherToRoot(info::FormatHumanRank(report));
    if (report.rank == 0) {
      std::fputs(info::FormatHumanHeader(report).c_str(), stdout);
      for (const std::string &b : blocks) std::fputs(b.c_str(), stdout);
      std::fputs(info::FormatHumanSettings(report).c_str(), stdout);
    }
  }
  std::fflush(stdout);

  r = infinicclFinalize();
  if (r != infinicclSuccess) {
    Fail("infinicclFinalize", r, nullptr);
    return kExitFailed;
  }
  return 0;
}
