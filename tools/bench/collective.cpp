#include "collective.h"

#include <algorithm>

namespace bench {
namespace {

constexpr CollectiveInfo kInfos[] = {
    {Collective::kAllReduce, "allreduce", "AllReduce", true, false, false},
    {Collective::kAllGather, "allgather", "AllGather", false, false, true},
    {Collective::kAllToAll, "alltoall", "AllToAll", false, false, true},
    {Collective::kBroadcast, "broadcast", "Broadcast", false, true, false},
    {Collective::kReduce, "reduce", "Reduce", true, true, false},
    {Collective::kReduceScatter, "reduce_scatter", "ReduceScatter", true, false, true},
    {Collective::kGather, "gather", "Gather", false, true, true},
    {Collective::kScatter, "scatter", "Scatter", false, true, true},
    {Collective::kSendRecv, "sendrecv", "SendRecv", false, false, false},
    {Collective::kCopy, "copy", "Copy", false, false, false},
};

}  // namespace

const CollectiveInfo &Info(Collective c) {
  return kInfos[static_cast<int>(c)];
}

double BusFactor(Collective c, int nranks) {
  const double n = nranks;
  switch (c) {
    case Collective::kAllReduce: return 2.0 * (n - 1) / n;
    case Collective::kAllGather:
    case Collective::kAllToAll:
    case Collective::kReduceScatter:
    case Collective::kGather:
    case Collective::kScatter: return (n - 1) / n;
    default: return 1.0;
  }
}

Layout MakeLayout(Collective c, size_t elements, size_t type_size, int nranks, int rank,
                  int root, bool inplace) {
  Layout l;
  const size_t n = static_cast<size_t>(nranks);
  const size_t r = static_cast<size_t>(rank);
  const bool is_root = rank == root;
  if (Info(c).per_rank) {
    l.count = elements / n;
    l.total_count = l.count * n;
  } else {
    l.count = elements;
    l.total_count = elements;
  }
  switch (c) {
    case Collective::kAllGather:
      l.send_count = l.count;
      l.recv_count = l.total_count;
      l.send_offset = r * l.count;
      break;
    case Collective::kAllToAll: l.send_count = l.recv_count = l.total_count; break;
    case Collective::kReduceScatter:
      l.send_count = l.total_count;
      l.recv_count = l.count;
      l.recv_offset = r * l.count;
      break;
    case Collective::kGather:
      l.send_count = l.count;
      l.recv_count = l.total_count;
      l.send_offset = static_cast<size_t>(root) * l.count;
      l.recv_used = is_root;
      break;
    case Collective::kScatter:
      l.send_count = l.total_count;
      l.recv_count = l.count;
      l.recv_offset = static_cast<size_t>(root) * l.count;
      l.send_used = is_root;
      break;
    case Collective::kBroadcast:
      l.send_count = l.recv_count = l.count;
      l.send_used = is_root;
      break;
    case Collective::kReduce:
      l.send_count = l.recv_count = l.count;
      l.recv_used = is_root;
      break;
    default:  // AllReduce, SendRecv, Copy
      l.send_count = l.recv_count = l.count;
      break;
  }
  switch (c) {
    case Collective::kGather:
    case Collective::kScatter: l.inplace = inplace && is_root; break;
    case Collective::kSendRecv:
    case Collective::kCopy: l.inplace = false; break;
    default: l.inplace = inplace;
  }
  if (!l.inplace) l.send_offset = l.recv_offset = 0;
  l.buffer_count = std::max(l.send_count, l.recv_count);
  l.bytes = l.total_count * type_size;
  return l;
}

}  // namespace bench
