// Failures of MPI or InfiniCCL calls during a benchmark. Peers may be inside
// the same collective, so main reports the message and aborts the job.
#ifndef INFINICCL_BENCH_ERRORS_H_
#define INFINICCL_BENCH_ERRORS_H_

#include <infiniccl/infiniccl.h>

#include <stdexcept>
#include <string>

namespace bench {

class BenchError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws BenchError naming `what` and MPI_Error_string(rc) unless rc is
// MPI_SUCCESS.
void CheckMpi(int rc, const char *what);
// Throws BenchError with infinicclGetErrorString and infinicclGetLastError.
void CheckIccl(infinicclResult_t r, const char *what, infinicclComm_t comm);

}  // namespace bench

#endif  // INFINICCL_BENCH_ERRORS_H_
