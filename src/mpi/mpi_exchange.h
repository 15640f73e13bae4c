// MpiExchange: core/exchange.h over an MPI communicator (MPI_Allgather of
// the sizes, then MPI_Allgatherv of the bytes). The communicator stays the
// caller's.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

#include "core/exchange.h"

namespace infiniccl {

class MpiExchange final : public Exchange {
 public:
  explicit MpiExchange(MPI_Comm comm);
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Status AllGather(const std::string &mine, std::vector<std::string> *all) override;

 private:
  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
};

}  // namespace infiniccl
