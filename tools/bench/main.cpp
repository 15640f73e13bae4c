// infiniccl-bench: InfiniCCL collectives next to the raw MPI calls, in
// nccl-tests' format. See --help; the pieces are
//   options.*     command line            modes.*     the mode table
//   collective.*  sizes and busbw         calls.h     one call, MPI/InfiniCCL
//   run.*         one mode at one size    runner.*    timing loop
//   validate.*    exact expected values   output.*    table, JSON, CSV
//   overlap.*     the DDP-like overlap loop (two streams, kernels, events)
//   device.*      where device buffers live: cpu, or (runtime_device.cpp) a
//                 DeviceRegistry runtime: cuda, metax, ..., sim (emulated)
#include <infiniccl/infiniccl.h>

#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "errors.h"
#include "modes.h"
#include "mpi_include.h"
#include "options.h"
#include "output.h"
#include "runner.h"

namespace {

constexpr int kExitWrong = 1;
constexpr int kExitUsage = 2;
constexpr int kExitFailed = 3;

// Resolves --modes; 'all' expands to every mode. Duplicates are dropped.
bool ResolveModes(const std::vector<std::string> &names,
                  std::vector<const bench::Mode *> *modes, std::string *error) {
  auto add = [&](const bench::Mode *m) {
    for (const bench::Mode *have : *modes)
      if (have == m) return;
    modes->push_back(m);
  };
  for (const std::string &n : names) {
    if (n == "all") {
      for (const bench::Mode &m : bench::AllModes()) add(&m);
      continue;
    }
    const bench::Mode *m = bench::FindMode(n);
    if (!m) {
      *error = "unknown mode '" + n + "' (--list-modes prints them)";
      return false;
    }
    add(m);
  }
  return true;
}

int Finalize(int status) {
  infinicclFinalize();
  return status;
}

}  // namespace

int main(int argc, char **argv) {
  infinicclResult_t r = infinicclInit(&argc, &argv);
  if (r != infinicclSuccess) {
    std::fprintf(stderr, "infiniccl-bench: infinicclInit failed: %s: %s\n",
                 infinicclGetErrorString(r), infinicclGetLastError(nullptr));
    return kExitFailed;
  }
  int rank = 0, nranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  const bool leader = rank == 0;

  bench::Options opt;
  std::string error;
  std::vector<const bench::Mode *> modes;
  std::unique_ptr<bench::Device> device;
  switch (bench::ParseOptions(argc, argv, &opt, &error)) {
    case bench::ParseResult::kHelp:
      if (leader) std::fputs(bench::Usage(argv[0]).c_str(), stdout);
      return Finalize(0);
    case bench::ParseResult::kListModes:
      if (leader) bench::PrintModeList(stdout);
      return Finalize(0);
    case bench::ParseResult::kVersion:
      if (leader) bench::PrintVersion(stdout);
      return Finalize(0);
    case bench::ParseResult::kError: break;
    case bench::ParseResult::kRun:
      if (!ResolveModes(opt.modes, &modes, &error)) break;
      if (opt.root >= nranks) {
        error = "--root " + std::to_string(opt.root) +
                " is not a rank (ranks: " + std::to_string(nranks) + ")";
        break;
      }
      device = bench::MakeDevice(opt.device, &error);
      break;
  }
  if (!device) {
    if (leader)
      std::fprintf(stderr, "infiniccl-bench: %s\nTry '%s --help'.\n", error.c_str(),
                   argv[0]);
    return Finalize(kExitUsage);
  }
  // The output files, before anything is measured: a path that cannot be
  // written must not cost a whole run. Rank 0 writes them; all ranks stop.
  bench::OutputFiles outputs;
  int outputs_ok = !leader || outputs.Open(opt, &error) ? 1 : 0;
  if (!outputs_ok) std::fprintf(stderr, "infiniccl-bench: %s\n", error.c_str());
  MPI_Bcast(&outputs_ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (!outputs_ok) return Finalize(kExitUsage);

  infinicclComm_t comm = nullptr;
  r = infinicclCommInitAll(&comm, 0, nullptr);
  if (r != infinicclSuccess) {
    std::fprintf(stderr,
                 "[rank %d] infiniccl-bench: infinicclCommInitAll failed: %s: %s\n", rank,
                 infinicclGetErrorString(r), infinicclGetLastError(nullptr));
    MPI_Abort(MPI_COMM_WORLD, kExitFailed);
  }
  // The rank is bound to a device now: the stream belongs to that device.
  try {
    device->Open();
  } catch (const std::exception &e) {
    std::fprintf(stderr, "[rank %d] infiniccl-bench: %s\n", rank, e.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, kExitFailed);
  }
  MPI_Comm mpi_comm = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &mpi_comm);
  MPI_Comm_set_errhandler(mpi_comm, MPI_ERRORS_RETURN);
  const bench::Env env{&opt, rank, nranks, comm, mpi_comm, device.get()};

  if (leader) bench::PrintHeader(stdout, env, modes);
  std::vector<bench::Result> results;
  try {
    results = bench::RunBenchmark(
        env, modes, [&](const bench::Result &row) { bench::PrintRow(stdout, env, row); });
  } catch (const std::exception &e) {
    std::fprintf(stderr, "[rank %d] infiniccl-bench: %s\n", rank, e.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, kExitFailed);
  }

  int status = 0;
  for (const bench::Result &res : results)
    if (res.wrong) status = kExitWrong;
  if (leader) {
    bench::PrintSummary(stdout, env, results);
    if (!outputs.Write(env, results, &error)) {
      std::fprintf(stderr, "infiniccl-bench: %s\n", error.c_str());
      if (status == 0) status = kExitFailed;
    }
  }

  r = infinicclCommDestroy(comm);
  if (r != infinicclSuccess) {
    std::fprintf(stderr,
                 "[rank %d] infiniccl-bench: infinicclCommDestroy failed: %s: %s\n", rank,
                 infinicclGetErrorString(r), infinicclGetLastError(nullptr));
    if (status == 0) status = kExitFailed;
  }
  MPI_Comm_free(&mpi_comm);
  device.reset();  // its stream, before the library shuts down
  return Finalize(status);
}
