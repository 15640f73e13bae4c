// infiniccl-info: what this build of InfiniCCL is, what MPI it uses, and
// every environment variable it reads with the value it would use now.
// Runs without mpirun and without initialising MPI.
#include <infiniccl/infiniccl.h>
#include <mpi.h>

#include <cstdio>
#include <cstring>

#include "core/config.h"

int main() {
  int version = 0;
  infinicclGetVersion(&version);
  std::printf("InfiniCCL %d.%d.%d (version code %d)\n", version / 10000,
              (version / 100) % 100, version % 100, version);

  char mpi[MPI_MAX_LIBRARY_VERSION_STRING] = "";
  int len = 0;
  MPI_Get_library_version(mpi, &len);
  if (char *nl = std::strchr(mpi, '\n')) *nl = '\0';
  std::printf("MPI library: %s (MPI standard %d.%d headers)\n", mpi, MPI_VERSION,
              MPI_SUBVERSION);
  std::printf("Large counts: %s\n", MPI_VERSION >= 4
                                        ? "MPI-4 large-count calls (MPI_*_c)"
                                        : "chunking / derived datatypes above INT_MAX");
  std::printf("Backends: MPI (host memory)\n");
  std::printf("Devices: cpu\n\n");

  const infiniccl::Config config = infiniccl::Config::FromEnvironment();
  const auto values = config.Describe();
  std::printf("Environment (value in effect, default, meaning):\n");
  const auto &table = infiniccl::Config::Table();
  for (size_t i = 0; i < table.size(); ++i) {
    std::printf("  %-28s default '%s'\n      now: %s\n      %s\n", table[i].name,
                table[i].default_value, i < values.size() ? values[i].c_str() : "?",
                table[i].doc);
  }
  for (const std::string &w : config.warnings) std::printf("warning: %s\n", w.c_str());
  return 0;
}
