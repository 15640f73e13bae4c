#include "mpi/mpi_exchange.h"

#include <cstdint>

#include "mpi/mpi_error.h"

namespace infiniccl {

MpiExchange::MpiExchange(MPI_Comm comm) : comm_(comm) {
  MPI_Comm_rank(comm, &rank_);
  MPI_Comm_size(comm, &size_);
}

Status MpiExchange::AllGather(const std::string &mine, std::vector<std::string> *all) {
  if (mine.size() > static_cast<size_t>(INT32_MAX / (size_ > 0 ? size_ : 1))) {
    return Status(infinicclInternalError, "an exchange's item is too large for MPI");
  }
  const int n = static_cast<int>(mine.size());
  std::vector<int> sizes(static_cast<size_t>(size_)), at(static_cast<size_t>(size_));
  INFINICCL_RETURN_IF_ERROR(MpiCheck(
      MPI_Allgather(&n, 1, MPI_INT, sizes.data(), 1, MPI_INT, comm_), "MPI_Allgather"));
  int64_t total = 0;
  for (int r = 0; r < size_; ++r) {
    at[static_cast<size_t>(r)] = static_cast<int>(total);
    total += sizes[static_cast<size_t>(r)];
  }
  if (total > INT32_MAX) {
    return Status(infinicclInternalError, "an exchange's items are too large for MPI");
  }
  std::string bytes(static_cast<size_t>(total), '\0');
  INFINICCL_RETURN_IF_ERROR(MpiCheck(
      MPI_Allgatherv(mine.data(), n, MPI_BYTE, &bytes[0], sizes.data(), at.data(), MPI_BYTE,
                     comm_),
      "MPI_Allgatherv"));
  all->assign(static_cast<size_t>(size_), std::string());
  for (int r = 0; r < size_; ++r) {
    (*all)[static_cast<size_t>(r)] =
        bytes.substr(static_cast<size_t>(at[static_cast<size_t>(r)]),
                     static_cast<size_t>(sizes[static_cast<size_t>(r)]));
  }
  return Status::Ok();
}

}  // namespace infiniccl
