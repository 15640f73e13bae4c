// CclProvider: one native collective library (NCCL, MCCL) as the rest of the
// library sees it, without its headers: make a unique id, make a
// communicator (a Backend), group calls. Each is compiled only with its
// library (WITH_NCCL, WITH_MCCL) and only ever called once a device of its
// kind is present, so a build with NCCL never calls it on a GPU-less node.
#pragma once

#include <infiniccl/infiniccl.h>
#include <mpi.h>

#include <memory>
#include <string>

#include "backend/backend.h"
#include "core/status.h"
#include "device/device_runtime.h"

namespace infiniccl {

class CclProvider {
 public:
  virtual ~CclProvider() = default;
  virtual const char *Name() const = 0;  // "NCCL", "MCCL"
  virtual DeviceKind kind() const = 0;   // the device memory it works on
  virtual std::string Version() const = 0;
  // The CCL's own unique id, copied into ours (it must fit in 128 bytes).
  virtual Status GetUniqueId(infinicclUniqueId *id) = 0;
  // Collective over the `nranks` ranks that pass the same id; uses the
  // current device of the calling thread.
  virtual Status CreateComm(int nranks, const infinicclUniqueId &id, int rank,
                            std::unique_ptr<Backend> *out) = 0;
  virtual Status GroupStart() = 0;
  virtual Status GroupEnd() = 0;
  // Whether any communicator of this CCL was ever created in this process.
  virtual bool used() const = 0;
  // A CCL made over an MPI communicator of its ranks instead of a unique id
  // (the emulated CCL, whose collectives are MPI calls): CreateCommOverMpi,
  // collective over `comm`, which the backend duplicates. Real CCLs keep
  // the unique-id path and refuse this.
  virtual bool MadeOverMpi() const { return false; }
  virtual Status CreateCommOverMpi(MPI_Comm /*comm*/, std::unique_ptr<Backend> * /*out*/) {
    return Status(infinicclNotSupported, "this CCL is made from a unique id");
  }
  // Whether one communicator of it may span nodes (the emulated CCL models
  // a node's own links, so it never does).
  virtual bool SpansNodes() const { return true; }
};

// Factories, each defined only when its library is compiled in.
CclProvider *NcclProvider();  // INFINICCL_WITH_NCCL
CclProvider *McclProvider();  // INFINICCL_WITH_MCCL
CclProvider *RcclProvider();  // INFINICCL_WITH_RCCL  (HIP: AMD, Hygon DCU)
CclProvider *HcclProvider();  // INFINICCL_WITH_HCCL  (Ascend)
CclProvider *CnclProvider();  // INFINICCL_WITH_CNCL  (Cambricon)
// The EMULATED CCL of the emulated device (sim_ccl.cpp), always built;
// CclForKind serves it for kSim only under INFINICCL_SIM_CCL=1.
CclProvider *SimCclProvider();

// The CCL built for device `kind`, or nullptr.
CclProvider *CclForKind(DeviceKind kind);
// Test hook: `p` serves its kind() from now on (nullptr: back to the built
// ones), so the API's CCL paths run against a stand-in CCL on the emulated
// device without a GPU.
void SetCclProviderForTesting(CclProvider *p);
// The CCL of the first active device runtime (one with a device) that has
// one; nullptr with `why` set otherwise.
CclProvider *FirstUsableCcl(std::string *why);

// Group hooks for infinicclGroupStart/End: the CCLs' group calls, on every
// CCL that has a communicator in this process (none: nothing to group, OK).
Status CclGroupStart();
Status CclGroupEnd();

}  // namespace infiniccl
