// The MPI tags of the library's point-to-point messages on a communicator's
// MPI communicator (collectives have their own matching context in MPI and
// need none). Every internal tag lies below kMpiP2pTag; the API's tags
// 0..INFINICCL_TAG_MAX (infinicclSendTagged/RecvTagged; tag 0 is
// infinicclSend/Recv's) map onto kMpiP2pTag + tag, above all of them, so no
// message of the caller's can match one of the library's or the other way
// round, whatever the tag.
#pragma once

#include <infiniccl/infiniccl.h>

#include <climits>

namespace infiniccl {

// A process started by infinicclCommGrow tells the parent's rank 0 it is
// alive, over the inter-communicator, before the merge
// (comm/comm_shrink_grow.cpp).
inline constexpr int kMpiGrowHelloTag = 0x1cbd;
// The shrink's exchange of the callers' lists over the parent
// (comm/comm_shrink_grow.cpp).
inline constexpr int kMpiShrinkTag = 0x1cbe;
// MPI_Comm_create_group on the parent (api/comm_init_ranks.cpp).
inline constexpr int kMpiCreateGroupTag = 0x1cbf;
// The library's rings of MPI_Sendrecv (backend/mpi/rings.h), which may run
// while grouped Send/Recv are still pending on the same communicator.
inline constexpr int kMpiRingTag = 0x1cc0;
// Send/Recv: API tag 0.
inline constexpr int kMpiP2pTag = 0x1cc1;

static_assert(kMpiGrowHelloTag < kMpiP2pTag && kMpiShrinkTag < kMpiP2pTag && kMpiCreateGroupTag < kMpiP2pTag &&
                  kMpiRingTag < kMpiP2pTag,
              "internal tags lie below the API's range");
static_assert(INFINICCL_TAG_MAX <= INT_MAX - kMpiP2pTag, "the API's tags fit in an int");

// The MPI tag of API tag `tag` (0..INFINICCL_TAG_MAX).
constexpr int MpiP2pTag(int tag) { return kMpiP2pTag + tag; }
// The largest API tag an MPI whose MPI_TAG_UB is `tag_ub` carries; at the
// standard's least MPI_TAG_UB (32767), 32767 - kMpiP2pTag.
constexpr int LargestApiTag(int tag_ub) {
  return tag_ub - kMpiP2pTag < INFINICCL_TAG_MAX ? tag_ub - kMpiP2pTag : INFINICCL_TAG_MAX;
}

}  // namespace infiniccl
