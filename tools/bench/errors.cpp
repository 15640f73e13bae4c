#include "errors.h"

#include "mpi_include.h"

namespace bench {

void CheckMpi(int rc, const char *what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw BenchError(std::string(what) + " failed: " + text);
}

void CheckIccl(infinicclResult_t r, const char *what, infinicclComm_t comm) {
  if (r == infinicclSuccess) return;
  throw BenchError(std::string(what) + " failed: " + infinicclGetErrorString(r) + " (" +
                   std::to_string(static_cast<int>(r)) +
                   "): " + infinicclGetLastError(comm));
}

}  // namespace bench
