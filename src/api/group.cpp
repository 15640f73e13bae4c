// infinicclGroupStart / infinicclGroupEnd. The state is per thread
// (comm/group.h); like NCCL's, the calls need no infinicclInit, so a group
// may also surround communicator creation.
#include "comm/group.h"

#include <infiniccl/infiniccl.h>

#include "api/api_call.h"

using namespace infiniccl;

extern "C" {

infinicclResult_t infinicclGroupStart(void) {
  return ApiCall("infinicclGroupStart",
                 [&](CallContext &) -> Status { return Group::Current().Start(); });
}

infinicclResult_t infinicclGroupEnd(void) {
  return ApiCall("infinicclGroupEnd",
                 [&](CallContext &) -> Status { return Group::Current().End(); });
}

}  // extern "C"
