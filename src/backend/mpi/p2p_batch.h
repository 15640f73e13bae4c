// Grouped Send/Recv over MPI: MPI_Isend/MPI_Irecv when posted (several
// requests for counts above INT_MAX), waited for one by one at GroupEnd.
#pragma once

#include <mpi.h>

#include <vector>

#include "backend/backend.h"

namespace infiniccl {

class MpiP2pBatch final : public P2pBatch {
 public:
  explicit MpiP2pBatch(MPI_Comm comm) : comm_(comm) {}
  ~MpiP2pBatch() override;
  MpiP2pBatch(const MpiP2pBatch &) = delete;
  MpiP2pBatch &operator=(const MpiP2pBatch &) = delete;

  Status Post(const CollArgs &a, const void *buf) override;
  size_t ops() const override { return ops_.size(); }
  Status Complete(const std::function<void(size_t)> &waiting,
                  std::vector<bool> *ok) override;

 private:
  struct Op {
    CollKind kind;
    int peer;  // kAnySource: a Recv from any source
    int tag;   // the API's
    size_t count;
    int *source;  // a Recv's sender goes here (nullptr: nowhere)
    size_t first_req, end_req;  // its requests in reqs_
  };
  MPI_Comm comm_;
  std::vector<MPI_Request> reqs_;
  std::vector<Op> ops_;
};

}  // namespace infiniccl
