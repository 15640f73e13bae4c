#include "staging/staged_path.h"

#include <algorithm>
#include <cstdlib>
#include <memory>

namespace infiniccl {

namespace {

// A host buffer for one call. (The reusable pinned StagingPool replaces this.)
struct HostBuffer {
  std::unique_ptr<char, decltype(&std::free)> data{nullptr, &std::free};
  Status Allocate(size_t bytes) {
    data.reset(static_cast<char *>(std::malloc(bytes)));
    if (data == nullptr) {
      return MakeStatus(infinicclSystemError, "cannot allocate %zu bytes of host staging",
                        bytes);
    }
    return Status::Ok();
  }
  char *get() const { return data.get(); }
};

}  // namespace

Status RunStaged(Backend &host_backend, DeviceRuntime &device, const CollArgs &args,
                 BufferPlacement placement) {
  const size_t send_bytes = args.send_bytes, recv_bytes = args.recv_bytes;
  void *stream = args.stream;
  CollArgs host = args;
  HostBuffer send_stage, recv_stage;
  const char *recv_stage_src = nullptr;  // where the result lies on the host

  if (args.in_place) {
    // One buffer holds both; stage the outer one with the same layout.
    const bool recv_outer = recv_bytes >= send_bytes;
    const char *outer = static_cast<const char *>(recv_outer ? args.recvbuff : args.sendbuff);
    const size_t outer_bytes = std::max(send_bytes, recv_bytes);
    INFINICCL_RETURN_IF_ERROR(recv_stage.Allocate(outer_bytes));
    INFINICCL_RETURN_IF_ERROR(device.MemcpyAsync(recv_stage.get(), outer, outer_bytes,
                                                 CopyKind::kDeviceToHost, stream));
    host.sendbuff = recv_stage.get() + (static_cast<const char *>(args.sendbuff) - outer);
    host.recvbuff = recv_stage.get() + (static_cast<const char *>(args.recvbuff) - outer);
  } else {
    if (placement.send_on_device && send_bytes > 0) {
      INFINICCL_RETURN_IF_ERROR(send_stage.Allocate(send_bytes));
      INFINICCL_RETURN_IF_ERROR(device.MemcpyAsync(send_stage.get(), args.sendbuff,
                                                   send_bytes, CopyKind::kDeviceToHost,
                                                   stream));
      host.sendbuff = send_stage.get();
    }
    if (placement.recv_on_device && recv_bytes > 0) {
      INFINICCL_RETURN_IF_ERROR(recv_stage.Allocate(recv_bytes));
      host.recvbuff = recv_stage.get();
    }
  }
  recv_stage_src = static_cast<const char *>(host.recvbuff);

  // Ordered on the user's stream: this waits for the kernels that produced
  // the input and for the device-to-host copies queued behind them.
  INFINICCL_RETURN_IF_ERROR(device.StreamSynchronize(stream));
  INFINICCL_RETURN_IF_ERROR(host_backend.Run(host));
  if (placement.recv_on_device && recv_bytes > 0) {
    INFINICCL_RETURN_IF_ERROR(device.MemcpyAsync(args.recvbuff, recv_stage_src, recv_bytes,
                                                 CopyKind::kHostToDevice, stream));
    // The host buffer is freed on return, so the copy must have finished.
    INFINICCL_RETURN_IF_ERROR(device.StreamSynchronize(stream));
  }
  return Status::Ok();
}

}  // namespace infiniccl
