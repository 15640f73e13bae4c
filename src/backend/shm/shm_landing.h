// The landing of a queued AllReduce of device buffers (ShmBackend::Lands):
// the device runtime copies the input straight into this rank's landing
// area of the segment on the caller's stream (In), the ranks reduce there
// (coll/allreduce.cpp, Place::kDeviceLanded), and the result is copied out
// of it on the caller's stream (Out). The landing owns the event recorded
// behind each copy out: the area is free again once the stream reaches it,
// and the next copy in on another stream waits for it. Its destruction
// waits for the last copy out and destroys the event.
#pragma once

#include "core/coll_args.h"
#include "core/status.h"
#include "device/device_runtime.h"

namespace infiniccl {
namespace shm {

class Landing {
 public:
  explicit Landing(char *area) : area_(area) {}
  ~Landing();
  Landing(const Landing &) = delete;
  Landing &operator=(const Landing &) = delete;

  // On the caller's thread, in call order: the copy of a.sendbuff into the
  // area on a.stream, after the copy out of the landed call before it (on
  // another stream: a wait for its event queued on a.stream).
  Status In(const CollArgs &a, DeviceRuntime *device);
  // The copy of the area into a.recvbuff on a.stream (`copy`; without it
  // nothing is copied), then the event that frees the area.
  Status Out(const CollArgs &a, DeviceRuntime *device, bool copy);

 private:
  char *area_;
  DeviceRuntime *device_ = nullptr;  // the runtime of the event
  void *free_ = nullptr;             // recorded behind each Out
  void *stream_ = nullptr;           // the stream of the last In
};

}  // namespace shm
}  // namespace infiniccl
