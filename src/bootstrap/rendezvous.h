// The bootstrap: ranks that share nothing but a unique id find each other
// over TCP, and each learns every rank's blob (an allgather). It needs no
// MPI and no communicator; comm/comm_create.cpp builds communicators on it.
//
// Create (infinicclGetUniqueId) opens a listening socket in the calling
// process, kept in a process-wide registry under the id's secret, and
// writes the id: the listener's address and the secret. Join
// (infinicclCommInitRank) is called once per rank. In the process that
// holds the listener, the first Join serves as the root: it counts itself
// as its rank and accepts the others. Every other Join connects to the root
// and presents the secret, its nranks, its rank and its blob. The root
// refuses a wrong secret (that peer alone gets the error) and waits until as
// many ranks joined as the largest nranks given, or the timeout
// (INFINICCL_TIMEOUT_SEC). Then it judges: differing nranks, ranks out of
// range or given twice, ranks missing; every rank that joined gets the same
// verdict, and on success every blob in rank order. The listener is closed
// when the root's Join returns, whatever the verdict. No thread is started.
//
// A Join that asks for a session keeps the connections (the root one per
// rank, every other rank its own to the root) as a core/exchange.h: more
// allgathers through the root, while the communicator is being made. They
// close with the session; the listener is closed already.
#pragma once

#include <infiniccl/infiniccl.h>

#include <memory>
#include <string>
#include <vector>

#include "core/exchange.h"
#include "core/status.h"

namespace infiniccl::bootstrap {

class Rendezvous {
 public:
  // A new id with its listener (at most kMaxOpenIds await their Join).
  static Status Create(infinicclUniqueId *id);
  // This rank's part; `blobs` receives every rank's blob, blobs[r] rank r's.
  // `session`, when given, gets the connections on success (see above):
  // every rank of the rendezvous must ask for one, or none.
  static Status Join(const infinicclUniqueId &id, int nranks, int rank,
                     const std::string &blob, std::vector<std::string> *blobs,
                     std::unique_ptr<Exchange> *session = nullptr);
  // Listeners of this process whose id has not been joined yet.
  static int OpenListeners();

  static constexpr int kMaxOpenIds = 64;
  static constexpr int kMaxRanks = 1 << 20;
  static constexpr size_t kMaxBlobBytes = size_t{1} << 26;
};

}  // namespace infiniccl::bootstrap
