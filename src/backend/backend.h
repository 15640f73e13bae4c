// Backend: something that runs collectives over buffers it can access (UCC
// calls it a transport layer). The MPI backend always exists; native CCLs
// (NCCL, MCCL) join behind the same interface. route/ picks one per call.
#pragma once

#include "core/coll_args.h"
#include "core/status.h"

namespace infiniccl {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char *Name() const = 0;
  // Runs `args` (already validated, count > 0). Blocking for host buffers.
  virtual Status Run(const CollArgs &args) = 0;
  // nullptr when Run can take `args` with InfiniCCL's semantics, otherwise
  // why not (route/ then picks another path or reports it).
  virtual const char *Unsupported(const CollArgs &) const { return nullptr; }
};

}  // namespace infiniccl
