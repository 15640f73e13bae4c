// ValidateCollective for every CollKind: valid calls, NCCL's in-place
// layouts, overlaps, NULL buffers, bad enums, roots and peers, and counts
// that overflow. Buffers are addresses inside a local array (or plain
// integers for huge extents); validation never touches memory.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "api/validate.h"
#include "core/dtype.h"
#include "c_caller.h"

namespace {

using infiniccl::CollArgs;
using infiniccl::CollKind;
using infiniccl::CollKindName;
using infiniccl::Status;
using infiniccl::ValidateCollective;

constexpr int kSize = 4;
constexpr size_t kCount = 8;           // int32 elements per block
constexpr size_t kBlock = kCount * 4;  // bytes per block
alignas(64) char g_mem[8192];
char *const kSend = g_mem;  // disjoint default buffers
char *const kRecv = g_mem + 4096;

const CollKind kAllKinds[] = {CollKind::kAllReduce,     CollKind::kBroadcast,
                              CollKind::kReduce,        CollKind::kAllGather,
                              CollKind::kGather,        CollKind::kScatter,
                              CollKind::kReduceScatter, CollKind::kAllToAll,
                              CollKind::kSend,          CollKind::kRecv};

bool IsP2pKind(CollKind k) {
  return k == CollKind::kSend || k == CollKind::kRecv;
}
bool IsRootedKind(CollKind k) {
  return k == CollKind::kBroadcast || k == CollKind::kReduce || k == CollKind::kGather ||
         k == CollKind::kScatter;
}
bool IsReductionKind(CollKind k) {
  return k == CollKind::kAllReduce || k == CollKind::kReduce ||
         k == CollKind::kReduceScatter;
}

// Which buffers a rank uses, as the public header documents it.
struct Uses {
  bool send, recv;
};
Uses UsesAt(CollKind k, int rank, int root) {
  const bool at_root = rank == root;
  switch (k) {
    case CollKind::kBroadcast: return {at_root, true};
    case CollKind::kReduce: return {true, at_root};
    case CollKind::kGather: return {true, at_root};
    case CollKind::kScatter: return {at_root, true};
    case CollKind::kSend: return {true, false};
    case CollKind::kRecv: return {false, true};
    default: return {true, true};
  }
}

// The root for rooted kinds, the peer for Send/Recv (never the caller).
int RootFor(CollKind k, int rank, int size) {
  return IsP2pKind(k) ? (rank + 1) % size : 1 % size;
}

// A call of kind `k` at `rank` with the default (disjoint) buffers where the
// rank uses them and NULL where the API passes NULL (Send/Recv).
CollArgs Args(CollKind k, int rank, int size = kSize) {
  CollArgs a{};
  a.kind = k;
  a.sendbuff = k == CollKind::kRecv ? nullptr : kSend;
  a.recvbuff = k == CollKind::kSend ? nullptr : kRecv;
  a.count = kCount;
  a.dtype = infinicclInt32;
  a.op = infinicclSum;
  a.root = RootFor(k, rank, size);
  a.stream = nullptr;
  a.in_place = false;
  return a;
}

std::string Describe(const CollArgs &a, int rank) {
  return std::string(CollKindName(a.kind)) + " at rank " + std::to_string(rank) +
         " root/peer " + std::to_string(a.root) + " count " + std::to_string(a.count);
}

// Expects success; returns whether the call was detected as in place.
bool ExpectOk(int rank, CollArgs a, int size = kSize) {
  const Status st = ValidateCollective(rank, size, &a);
  EXPECT_TRUE(st.ok()) << Describe(a, rank) << ": " << st.message();
  EXPECT_EQ(st.code(), infinicclSuccess);
  EXPECT_TRUE(st.message().empty()) << st.message();
  return a.in_place;
}

// Expects InvalidArgument with a message naming each of `words`.
void ExpectInvalid(int rank, CollArgs a, const std::vector<std::string> &words,
                   int size = kSize) {
  const Status st = ValidateCollective(rank, size, &a);
  EXPECT_EQ(st.code(), infinicclInvalidArgument) << Describe(a, rank);
  EXPECT_FALSE(st.message().empty()) << Describe(a, rank);
  for (const std::string &w : words) {
    EXPECT_NE(st.message().find(w), std::string::npos)
        << Describe(a, rank) << ": message \"" << st.message() << "\" lacks \"" << w
        << "\"";
  }
}

TEST(CollKind, Names) {
  const char *const want[] = {"AllReduce", "Broadcast", "Reduce",        "AllGather",
                              "Gather",    "Scatter",   "ReduceScatter", "AllToAll",
                              "Send",      "Recv"};
  ASSERT_EQ(std::size(want), static_cast<size_t>(infiniccl::kNumCollKinds));
  for (int i = 0; i < infiniccl::kNumCollKinds; ++i) {
    EXPECT_STREQ(CollKindName(kAllKinds[i]), want[i]);
    EXPECT_EQ(infiniccl::IsReduction(kAllKinds[i]), IsReductionKind(kAllKinds[i]));
    EXPECT_EQ(infiniccl::IsRooted(kAllKinds[i]), IsRootedKind(kAllKinds[i]));
  }
}

// ---- valid calls -------------------------------------------------------------

TEST(Validate, DisjointBuffersPassForEveryKindRankAndType) {
  for (CollKind k : kAllKinds) {
    for (int rank = 0; rank < kSize; ++rank) {
      EXPECT_FALSE(ExpectOk(rank, Args(k, rank))) << CollKindName(k);
      for (int t = 0; t < infinicclNumTypes; ++t) {
        CollArgs a = Args(k, rank);
        a.dtype = static_cast<infinicclDataType_t>(t);
        ExpectOk(rank, a);
      }
      if (IsReductionKind(k)) {
        for (int op = 0; op < infinicclNumOps; ++op) {
          CollArgs a = Args(k, rank);
          a.op = static_cast<infinicclRedOp_t>(op);
          ExpectOk(rank, a);
          for (int t = 0; t < infinicclNumTypes; ++t) {  // bitwise: below
            a.dtype = static_cast<infinicclDataType_t>(t);
            if (!infiniccl::IsBitwiseRedOp(op) || infiniccl::IsIntegerDataType(t))
              ExpectOk(rank, a);
          }
        }
      }
    }
  }
}

TEST(Validate, SingleRank) {
  for (CollKind k : kAllKinds) {
    CollArgs a = Args(k, 0, 1);
    if (IsP2pKind(k)) {
      a.root = 0;  // the only peer there is: the caller itself
      ExpectInvalid(0, a, {"peer"}, 1);
    } else {
      a.root = 0;
      ExpectOk(0, a, 1);
      a.root = 1;
      if (IsRootedKind(k)) ExpectInvalid(0, a, {"root"}, 1);
    }
  }
  // In place with one rank.
  CollArgs ag = Args(CollKind::kAllGather, 0, 1);
  ag.sendbuff = ag.recvbuff;
  EXPECT_TRUE(ExpectOk(0, ag, 1));
}

// ---- in place ----------------------------------------------------------------

TEST(Validate, InPlaceAllReduceAndAllToAll) {
  for (CollKind k : {CollKind::kAllReduce, CollKind::kAllToAll}) {
    for (int rank = 0; rank < kSize; ++rank) {
      CollArgs a = Args(k, rank);
      a.sendbuff = a.recvbuff;
      EXPECT_TRUE(ExpectOk(rank, a)) << CollKindName(k);
    }
  }
}

TEST(Validate, InPlaceAllGatherAtEveryRank) {
  for (int rank = 0; rank < kSize; ++rank) {
    CollArgs a = Args(CollKind::kAllGather, rank);
    a.sendbuff = kRecv + rank * kBlock;
    EXPECT_TRUE(ExpectOk(rank, a)) << rank;
    // Another rank's block, or a misaligned one: overlap, not in place.
    for (int other = 0; other < kSize; ++other) {
      if (other == rank) continue;
      a.sendbuff = kRecv + other * kBlock;
      ExpectInvalid(rank, a, {"sendbuff", "recvbuff", "AllGather"});
    }
    a.sendbuff = kRecv + rank * kBlock + 4;
    ExpectInvalid(rank, a, {"sendbuff", "recvbuff"});
  }
}

TEST(Validate, InPlaceReduceScatterAtEveryRank) {
  for (int rank = 0; rank < kSize; ++rank) {
    CollArgs a = Args(CollKind::kReduceScatter, rank);
    a.recvbuff = kSend + rank * kBlock;
    EXPECT_TRUE(ExpectOk(rank, a)) << rank;
    for (int other = 0; other < kSize; ++other) {
      if (other == rank) continue;
      a.recvbuff = kSend + other * kBlock;
      ExpectInvalid(rank, a, {"sendbuff", "recvbuff", "ReduceScatter"});
    }
    a.recvbuff = kSend + rank * kBlock + 2;
    ExpectInvalid(rank, a, {"sendbuff", "recvbuff"});
  }
}

TEST(Validate, InPlaceGatherAndScatterAtTheRoot) {
  for (int root = 0; root < kSize; ++root) {
    for (int rank = 0; rank < kSize; ++rank) {
      CollArgs g = Args(CollKind::kGather, rank);
      g.root = root;
      g.sendbuff = kRecv + root * kBlock;
      CollArgs s = Args(CollKind::kScatter, rank);
      s.root = root;
      s.recvbuff = kSend + root * kBlock;
      if (rank == root) {
        EXPECT_TRUE(ExpectOk(rank, g)) << "Gather root " << root;
        EXPECT_TRUE(ExpectOk(rank, s)) << "Scatter root " << root;
        g.sendbuff = kRecv + ((root + 1) % kSize) * kBlock;
        ExpectInvalid(rank, g, {"sendbuff", "recvbuff", "Gather"});
        s.recvbuff = kSend + ((root + 1) % kSize) * kBlock;
        ExpectInvalid(rank, s, {"sendbuff", "recvbuff", "Scatter"});
      } else {
        // The root's receive (Gather) / send (Scatter) buffer is unused
        // elsewhere: any value passes, and nothing is in place.
        EXPECT_FALSE(ExpectOk(rank, g)) << "Gather non-root";
        EXPECT_FALSE(ExpectOk(rank, s)) << "Scatter non-root";
      }
    }
  }
}

TEST(Validate, InPlaceReduceAndBroadcastAtTheRoot) {
  for (CollKind k : {CollKind::kReduce, CollKind::kBroadcast}) {
    for (int root = 0; root < kSize; ++root) {
      for (int rank = 0; rank < kSize; ++rank) {
        CollArgs a = Args(k, rank);
        a.root = root;
        a.sendbuff = a.recvbuff;
        if (rank == root) {
          EXPECT_TRUE(ExpectOk(rank, a)) << CollKindName(k) << " root " << root;
          a.sendbuff = kRecv + 4;
          ExpectInvalid(rank, a, {"sendbuff", "recvbuff", CollKindName(k)});
          a.sendbuff = kRecv - 4;
          ExpectInvalid(rank, a, {"sendbuff", "recvbuff"});
        } else {
          EXPECT_FALSE(ExpectOk(rank, a)) << CollKindName(k) << " non-root";
          a.sendbuff = kRecv + 4;  // overlapping, but one side is unused here
          ExpectOk(rank, a);
        }
      }
    }
  }
}

// ---- overlap boundaries -------------------------------------------------------

TEST(Validate, OverlapBoundaries) {
  // Extents at kSize ranks, in blocks: AllReduce 1/1, AllGather 1/4,
  // ReduceScatter 4/1, AllToAll 4/4. Adjacent is fine; one byte into the
  // other buffer is not.
  struct Case {
    CollKind kind;
    size_t send_blocks, recv_blocks;
  };
  const Case cases[] = {{CollKind::kAllReduce, 1, 1},
                        {CollKind::kAllGather, 1, 4},
                        {CollKind::kReduceScatter, 4, 1},
                        {CollKind::kAllToAll, 4, 4}};
  for (const Case &c : cases) {
    for (int rank : {0, 3}) {
      CollArgs a = Args(c.kind, rank);
      char *const base = g_mem + 1024;
      a.sendbuff = base;
      a.recvbuff = base + c.send_blocks * kBlock;  // right after sendbuff
      EXPECT_FALSE(ExpectOk(rank, a)) << CollKindName(c.kind);
      a.recvbuff = base - c.recv_blocks * kBlock;  // right before sendbuff
      EXPECT_FALSE(ExpectOk(rank, a)) << CollKindName(c.kind);
      a.recvbuff = base + c.send_blocks * kBlock - 1;
      ExpectInvalid(rank, a, {"sendbuff", "recvbuff", CollKindName(c.kind)});
      a.recvbuff = base - c.recv_blocks * kBlock + 1;
      ExpectInvalid(rank, a, {"sendbuff", "recvbuff"});
    }
  }
}

// ---- NULL buffers and count 0 ---------------------------------------------------

TEST(Validate, NullBufferWhereUsedIsRejected) {
  for (CollKind k : kAllKinds) {
    for (int rank = 0; rank < kSize; ++rank) {
      const CollArgs base = Args(k, rank);
      const Uses uses = UsesAt(k, rank, base.root);
      CollArgs a = base;
      a.sendbuff = nullptr;
      if (uses.send) {
        ExpectInvalid(rank, a, {"sendbuff"});
      } else {
        EXPECT_FALSE(ExpectOk(rank, a));
      }
      a = base;
      a.recvbuff = nullptr;
      if (uses.recv) {
        ExpectInvalid(rank, a, {"recvbuff"});
      } else {
        EXPECT_FALSE(ExpectOk(rank, a));
      }
    }
  }
}

TEST(Validate, CountZeroPassesWithNullBuffers) {
  for (CollKind k : kAllKinds) {
    for (int rank = 0; rank < kSize; ++rank) {
      CollArgs a = Args(k, rank);
      a.count = 0;
      a.sendbuff = nullptr;
      a.recvbuff = nullptr;
      ExpectOk(rank, a);
      // Count 0 with overlapping non-NULL buffers is also nothing to do.
      a.sendbuff = kRecv + 1;
      a.recvbuff = kRecv;
      ExpectOk(rank, a);
    }
  }
}

// ---- bad enums, roots and peers -----------------------------------------------

TEST(Validate, InvalidDatatypeForEveryKind) {
  for (CollKind k : kAllKinds) {
    for (int v : {12, 13, -1, 1000}) {
      CollArgs a = Args(k, 0);
      c_caller::StoreRaw(&a.dtype, v);  // as a C caller passes it
      ExpectInvalid(0, a, {"datatype", std::to_string(v)});
    }
  }
}

TEST(Validate, InvalidOpOnlyMattersForReductions) {
  for (CollKind k : kAllKinds) {
    for (int v : {8, 9, -1, 1000}) {
      CollArgs a = Args(k, 0);
      c_caller::StoreRaw(&a.op, v);
      if (IsReductionKind(k)) {
        ExpectInvalid(0, a, {"op", std::to_string(v)});
      } else {
        ExpectOk(0, a);
      }
    }
  }
}

// Band, Bor, Bxor take the integer types; on a floating type a reduction is
// InvalidArgument naming the op and the type, and a data movement (which
// ignores its op) passes.
TEST(Validate, BitwiseOpsRefuseFloatingTypes) {
  const std::pair<infinicclDataType_t, const char *> floats[] = {
      {infinicclFloat16, "float16"},
      {infinicclBFloat16, "bfloat16"},
      {infinicclFloat32, "float32"},
      {infinicclFloat64, "float64"}};
  const std::pair<infinicclRedOp_t, const char *> ops[] = {
      {infinicclBand, "band"}, {infinicclBor, "bor"}, {infinicclBxor, "bxor"}};
  for (CollKind k : kAllKinds) {
    for (const auto &[op, op_name] : ops) {
      for (const auto &[t, type_name] : floats) {
        CollArgs a = Args(k, 0);
        a.op = op;
        a.dtype = t;
        if (IsReductionKind(k)) {
          ExpectInvalid(0, a, {op_name, type_name, "integer"});
        } else {
          ExpectOk(0, a);
        }
      }
      for (int t = infinicclInt8; t <= infinicclUInt64; ++t) {
        CollArgs a = Args(k, 0);
        a.op = op;
        a.dtype = static_cast<infinicclDataType_t>(t);
        ExpectOk(0, a);
      }
    }
  }
}

TEST(Validate, RootOutOfRange) {
  for (CollKind k : kAllKinds) {
    for (int v : {-1, kSize, kSize + 1, -1000}) {
      CollArgs a = Args(k, 0);
      a.root = v;
      if (IsRootedKind(k)) {
        ExpectInvalid(0, a, {"root", std::to_string(v)});
      } else if (IsP2pKind(k)) {
        ExpectInvalid(0, a, {"peer", std::to_string(v)});
      } else {
        ExpectOk(0, a);  // root is not an argument of this kind
      }
    }
    if (IsRootedKind(k)) {
      for (int root = 0; root < kSize; ++root) {
        CollArgs a = Args(k, 2);
        a.root = root;
        ExpectOk(2, a);
      }
    }
  }
}

TEST(Validate, PeerIsTheCallingRank) {
  for (CollKind k : {CollKind::kSend, CollKind::kRecv}) {
    for (int rank = 0; rank < kSize; ++rank) {
      CollArgs a = Args(k, rank);
      a.root = rank;
      ExpectInvalid(rank, a, {"peer"});
      for (int peer = 0; peer < kSize; ++peer) {
        if (peer == rank) continue;
        a.root = peer;
        ExpectOk(rank, a);
      }
    }
  }
}

// Tags (SendTagged/RecvTagged): 0..INFINICCL_TAG_MAX on Send and Recv;
// INFINICCL_ANY_SOURCE only as a tagged Recv's peer, and outside a group only
// with another rank to send.
TEST(Validate, Tags) {
  for (CollKind k : {CollKind::kSend, CollKind::kRecv}) {
    for (int tag : {0, 1, 77, INFINICCL_TAG_MAX}) {
      CollArgs a = Args(k, 0);
      a.tag = tag;
      a.tagged = true;
      ExpectOk(0, a);
    }
    for (int tag : {-1, INFINICCL_TAG_MAX + 1, -1000, INT32_MAX}) {
      CollArgs a = Args(k, 0);
      a.tag = tag;
      a.tagged = true;
      ExpectInvalid(0, a, {"tag " + std::to_string(tag), "INFINICCL_TAG_MAX"});
    }
  }
}

TEST(Validate, AnySource) {
  CollArgs recv = Args(CollKind::kRecv, 2);
  recv.root = INFINICCL_ANY_SOURCE;
  recv.tagged = true;
  ExpectOk(2, recv);
  CollArgs one = recv;
  ExpectInvalid(0, one, {"INFINICCL_ANY_SOURCE", "one rank"}, 1);
  EXPECT_TRUE(ValidateCollective(0, 1, /*in_group=*/true, &one).ok());
  // Plain Recv (not tagged) and any Send: -1 is no rank.
  CollArgs plain = recv;
  plain.tagged = false;
  ExpectInvalid(2, plain, {"peer -1 is out of range"});
  CollArgs send = Args(CollKind::kSend, 2);
  send.root = INFINICCL_ANY_SOURCE;
  send.tagged = true;
  ExpectInvalid(2, send, {"any source is for receives"});
  // Other negative peers stay out of range; the message names the wildcard.
  recv.root = -2;
  ExpectInvalid(2, recv, {"peer -2", "INFINICCL_ANY_SOURCE"});
  // Rooted collectives take no wildcard.
  CollArgs bcast = Args(CollKind::kBroadcast, 2);
  bcast.root = INFINICCL_ANY_SOURCE;
  bcast.tagged = true;
  ExpectInvalid(2, bcast, {"root -1"});
}

// ---- counts too large for the address space -----------------------------------

void *Addr(uintptr_t a) {
  return reinterpret_cast<void *>(a);
}

TEST(Validate, CountTimesElementSizeOverflows) {
  for (CollKind k : kAllKinds) {
    for (int rank = 0; rank < kSize; ++rank) {
      CollArgs a = Args(k, rank);
      a.count = SIZE_MAX / 2;
      ExpectInvalid(rank, a, {"count"});
      a.count = SIZE_MAX;
      a.dtype = infinicclFloat64;
      ExpectInvalid(rank, a, {"count"});
      a.count = SIZE_MAX;  // one byte per element: SIZE_MAX > PTRDIFF_MAX
      a.dtype = infinicclUInt8;
      ExpectInvalid(rank, a, {"count"});
    }
  }
}

TEST(Validate, CountTimesRanksOverflows) {
  // 2^61 - 1 int32 elements: one block fits below PTRDIFF_MAX, kSize blocks
  // do not. Only kinds that need kSize blocks at this rank fail.
  const size_t count = SIZE_MAX / 8;
  for (CollKind k : kAllKinds) {
    for (int rank = 0; rank < kSize; ++rank) {
      CollArgs a = Args(k, rank);
      a.count = count;
      // The same address for both: in place wherever both are used, so
      // a single block of 2^63 - 4 bytes is a valid extent.
      a.sendbuff = k == CollKind::kRecv ? nullptr : Addr(0x10000);
      a.recvbuff = k == CollKind::kSend ? nullptr : Addr(0x10000);
      const bool root = rank == a.root;
      const bool needs_n_blocks =
          k == CollKind::kAllGather || k == CollKind::kReduceScatter ||
          k == CollKind::kAllToAll ||
          ((k == CollKind::kGather || k == CollKind::kScatter) && root);
      if (needs_n_blocks) {
        ExpectInvalid(rank, a, {"count"});
      } else {
        ExpectOk(rank, a);
      }
    }
  }
}

TEST(Validate, ExtentAtTheAddressSpaceLimit) {
  // Recv uses one buffer, so nothing else can fail: the limit is PTRDIFF_MAX
  // bytes.
  CollArgs a = Args(CollKind::kRecv, 0);
  a.recvbuff = Addr(0x10000);
  a.dtype = infinicclInt32;
  a.count = static_cast<size_t>(PTRDIFF_MAX) / 4;
  ExpectOk(0, a);
  a.count += 1;
  ExpectInvalid(0, a, {"count"});
  a.dtype = infinicclUInt8;
  a.count = static_cast<size_t>(PTRDIFF_MAX);
  ExpectOk(0, a);
  a.count += 1;
  ExpectInvalid(0, a, {"count"});
}

TEST(Validate, CountsAboveIntMaxPass) {
  // 2^31 + 3 elements (> INT_MAX) of 8 bytes, far-apart fake addresses.
  const size_t count = (size_t{1} << 31) + 3;
  const uintptr_t send = uintptr_t{1} << 40, recv = uintptr_t{1} << 44;
  for (CollKind k : kAllKinds) {
    for (int rank = 0; rank < kSize; ++rank) {
      CollArgs a = Args(k, rank);
      a.count = count;
      a.dtype = infinicclFloat64;
      if (a.sendbuff) a.sendbuff = Addr(send);
      if (a.recvbuff) a.recvbuff = Addr(recv);
      EXPECT_FALSE(ExpectOk(rank, a)) << CollKindName(k);
      // In place at that size is still recognised.
      if (k == CollKind::kAllGather) {
        a.sendbuff = Addr(recv + rank * count * 8);
        EXPECT_TRUE(ExpectOk(rank, a));
      }
      if (k == CollKind::kReduceScatter) {
        a.recvbuff = Addr(send + rank * count * 8);
        EXPECT_TRUE(ExpectOk(rank, a));
      }
    }
  }
}

}  // namespace
