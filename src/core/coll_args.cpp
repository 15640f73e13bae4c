#include "core/coll_args.h"

namespace infiniccl {

const char *CollKindName(CollKind kind) {
  switch (kind) {
    case CollKind::kAllReduce: return "AllReduce";
    case CollKind::kBroadcast: return "Broadcast";
    case CollKind::kReduce: return "Reduce";
    case CollKind::kAllGather: return "AllGather";
    case CollKind::kGather: return "Gather";
    case CollKind::kScatter: return "Scatter";
    case CollKind::kReduceScatter: return "ReduceScatter";
    case CollKind::kAllToAll: return "AllToAll";
    case CollKind::kSend: return "Send";
    case CollKind::kRecv: return "Recv";
  }
  return "?";
}

}  // namespace infiniccl
