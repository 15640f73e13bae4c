// Exchange: the ranks of a communicator being made, swapping bytes: each
// rank gives a string and gets every rank's (an allgather). Two carriers:
// an MPI communicator (mpi/mpi_exchange.h) and the bootstrap's connections
// (bootstrap/rendezvous.h: a session, open only while the communicator is
// made). What a communicator's creation agrees on (its settings, its
// node's segments) is written once, on this, and runs on either carrier.
// Collective: every rank calls each function in the same order.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/status.h"

namespace infiniccl {

class Exchange {
 public:
  virtual ~Exchange() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Every rank's `mine`, all[r] rank r's. An error on one rank (a peer's
  // connection lost, a failed MPI call) may leave the others waiting no
  // longer than the carrier's own bound (MPI's; the session's timeout).
  virtual Status AllGather(const std::string &mine, std::vector<std::string> *all) = 0;

  // Root's `bytes` on every rank.
  Status Bcast(int root, std::string *bytes) {
    std::vector<std::string> all;
    INFINICCL_RETURN_IF_ERROR(AllGather(rank() == root ? *bytes : std::string(), &all));
    *bytes = all[static_cast<size_t>(root)];
    return Status::Ok();
  }
  // The smallest and largest of every rank's `v`.
  Status Min(int64_t v, int64_t *out) { return Fold(v, out, true); }
  Status Max(int64_t v, int64_t *out) { return Fold(v, out, false); }
  Status Barrier() {
    std::vector<std::string> all;
    return AllGather(std::string(), &all);
  }
  // Every rank's `v`, of a trivially copyable type.
  template <typename T>
  Status AllGatherOf(const T &v, std::vector<T> *out) {
    std::vector<std::string> all;
    INFINICCL_RETURN_IF_ERROR(
        AllGather(std::string(reinterpret_cast<const char *>(&v), sizeof v), &all));
    out->assign(all.size(), T());
    for (size_t r = 0; r < all.size(); ++r) {
      if (all[r].size() != sizeof(T)) {
        return Status(infinicclInternalError, "an exchange's item differs in size between ranks");
      }
      std::memcpy(&(*out)[r], all[r].data(), sizeof(T));
    }
    return Status::Ok();
  }

 private:
  Status Fold(int64_t v, int64_t *out, bool min) {
    std::vector<int64_t> all;
    INFINICCL_RETURN_IF_ERROR(AllGatherOf(v, &all));
    *out = v;
    for (int64_t x : all) *out = min ? (x < *out ? x : *out) : (x > *out ? x : *out);
    return Status::Ok();
  }
};

}  // namespace infiniccl
