#include "route/route.h"

#include "core/dtype.h"
#include "core/log.h"

namespace infiniccl {

namespace {

enum class Path { kHostMpi = 0 };
constexpr int kNumPaths = 1;
const char *PathName(Path p) {
  switch (p) {
    case Path::kHostMpi: return "host buffers -> MPI (zero copy)";
  }
  return "?";
}

void Announce(Communicator &comm, const CollArgs &a, Path path) {
  const int bit = static_cast<int>(a.kind) * kNumPaths + static_cast<int>(path);
  if (LogEnabled(LogLevel::kInfo) && comm.FirstUse(bit)) {
    INFINICCL_INFO("%s on comm of %d ranks: %s (logged once per kind; TRACE logs every call)",
                   CollKindName(a.kind), comm.size(), PathName(path));
  }
  INFINICCL_TRACE("%s count=%zu dtype=%s op=%s root/peer=%d%s: %s", CollKindName(a.kind),
                  a.count, DataTypeName(a.dtype), RedOpName(a.op), a.root,
                  a.in_place ? " in-place" : "", PathName(path));
}

}  // namespace

Status RouteCollective(Communicator &comm, const CollArgs &args) {
  // Every buffer is host memory until device runtimes exist.
  const Path path = Path::kHostMpi;
  Announce(comm, args, path);
  return comm.mpi_backend().Run(args);
}

}  // namespace infiniccl
