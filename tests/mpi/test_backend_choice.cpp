// INFINICCL_BACKEND at 1-2 ranks on a machine without a CCL device: `ccl`
// refuses host buffers (InvalidUsage) and device buffers with no CCL
// communicator (NotSupported), each with a message, and the communicator
// stays usable; `mpi` and `auto` run the same calls correctly over MPI
// (emulated device buffers: staged), and so does an invalid value, after
// the config's warning. With a CCL device present (GPU
// machine) the emulated buffers still have no CCL, so the same holds.
#include <mpi.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "core/config.h"
#include "device/registry.h"
#include "test_util.h"

using namespace infiniccl;
using itest::g_failures;

namespace {

int g_n = 1;
DeviceRuntime *g_sim = nullptr;

void UseBackend(const char *value) {
  setenv("INFINICCL_BACKEND", value, 1);
  ReloadGlobalConfig();
}

// AllReduce Sum of rank+1+i over host or emulated device memory; checks the
// exact result when the call is expected to succeed.
infinicclResult_t AllReduce(infinicclComm_t comm, int rank, bool device, bool check) {
  const size_t n = 1000;
  std::vector<int32_t> host(n), out(n, -1);
  for (size_t i = 0; i < n; ++i) host[i] = static_cast<int32_t>(rank + 1 + i);
  void *send = host.data(), *recv = out.data();
  if (device) {
    CHECK(g_sim->Malloc(&send, n * 4).ok() && g_sim->Malloc(&recv, n * 4).ok());
    CHECK(g_sim->MemcpyAsync(send, host.data(), n * 4, CopyKind::kHostToDevice, nullptr)
              .ok());
  }
  const infinicclResult_t rc =
      infinicclAllReduce(send, recv, n, infinicclInt32, infinicclSum, comm, nullptr);
  if (device) {
    CHECK(g_sim->MemcpyAsync(out.data(), recv, n * 4, CopyKind::kDeviceToHost, nullptr)
              .ok());
    CHECK(g_sim->StreamSynchronize(nullptr).ok());
    g_sim->Free(send);
    g_sim->Free(recv);
  }
  if (check && rc == infinicclSuccess) {
    const int32_t ranks_sum = g_n * (g_n + 1) / 2;
    for (size_t i = 0; i < n; ++i) {
      const int32_t want = ranks_sum + static_cast<int32_t>(g_n * i);
      if (out[i] != want) {
        CHECK(out[i] == want, "device=%d element %zu: got %d want %d", device, i, out[i],
              want);
        break;
      }
    }
  }
  return rc;
}

void ExpectMessage(infinicclComm_t comm, const char *part) {
  const std::string msg = infinicclGetLastError(comm);
  CHECK(msg.rfind("infinicclAllReduce: ", 0) == 0, "message: %s", msg.c_str());
  CHECK(msg.find(part) != std::string::npos, "'%s' not in: %s", part, msg.c_str());
}

}  // namespace

int main(int argc, char **argv) {
  setenv("INFINICCL_BACKEND", "ccl", 1);
  if (infinicclInit(&argc, &argv) != infinicclSuccess) return 2;
  g_sim = &DeviceRegistry::EnableSim();
  infinicclComm_t comm = nullptr;
  // Under ccl without any CCL communicator the communicator is still made.
  CHECK_RC(infinicclCommInitAll(&comm, 0, nullptr), infinicclSuccess);
  if (comm == nullptr) return 2;
  int rank = 0;
  infinicclCommUserRank(comm, &rank);
  infinicclCommCount(comm, &g_n);
  itest::g_rank = rank;

  // ccl: host buffers are the caller's mistake, device buffers without a CCL
  // communicator are not supported; both say why.
  CHECK_RC(AllReduce(comm, rank, false, false), infinicclInvalidUsage);
  ExpectMessage(comm, "INFINICCL_BACKEND=ccl");
  // (On one rank a reduction of device buffers is a copy on any backend
  // choice: there is nothing for a CCL to do.)
  if (g_n == 1) {
    CHECK_RC(AllReduce(comm, rank, true, false), infinicclSuccess);
  } else {
    CHECK_RC(AllReduce(comm, rank, true, false), infinicclNotSupported);
    ExpectMessage(comm, "no CCL communicator");
  }

  // mpi and auto: the same calls succeed over MPI, with exact results. An
  // invalid value warns (the config's warning, logged at WARN by Init) and
  // behaves as auto.
  for (const char *mode : {"mpi", "auto", "nccl"}) {
    UseBackend(mode);
    const bool invalid = std::string(mode) == "nccl";
    const Config &config = GlobalConfig();
    CHECK(config.warnings.size() == (invalid ? 1u : 0u), "%s: %zu warnings", mode,
          config.warnings.size());
    if (invalid && !config.warnings.empty()) {
      CHECK(config.warnings[0] ==
                "INFINICCL_BACKEND='nccl' is not auto, mpi or ccl; using auto",
            "warning: %s", config.warnings[0].c_str());
      CHECK(config.backend == BackendChoice::kAuto);
    }
    CHECK_RC(AllReduce(comm, rank, false, true), infinicclSuccess);
    CHECK_RC(AllReduce(comm, rank, true, true), infinicclSuccess);
  }

  CHECK(infinicclCommDestroy(comm) == infinicclSuccess);
  const long total = itest::TotalFailures();
  if (rank == 0) std::printf("test_backend_choice: %ld failures\n", total);
  if (infinicclFinalize() != infinicclSuccess) return 1;
  return total == 0 ? 0 : 1;
}
