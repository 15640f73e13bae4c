#include "backend/shm/shm_backend.h"

#include <utility>

#include "backend/shm/coll/collectives.h"
#include "core/config.h"
#include "core/dtype.h"
#include "core/log.h"

namespace infiniccl {

Status ShmBackend::Create(MPI_Comm comm, int rank, int size, bool devices,
                          std::unique_ptr<ShmBackend> *out, std::string *why,
                          std::vector<int> names) {
  out->reset();
  std::unique_ptr<shm::Channel> channel;
  INFINICCL_RETURN_IF_ERROR(
      shm::Channel::Create(comm, rank, size, std::move(names), devices, &channel, why));
  Wrap(std::move(channel), out);
  return Status::Ok();
}

Status ShmBackend::Create(Exchange &ex, bool devices, std::unique_ptr<ShmBackend> *out,
                          std::string *why) {
  out->reset();
  std::unique_ptr<shm::Channel> channel;
  INFINICCL_RETURN_IF_ERROR(shm::Channel::Create(ex, {}, devices, &channel, why));
  Wrap(std::move(channel), out);
  return Status::Ok();
}

void ShmBackend::Wrap(std::unique_ptr<shm::Channel> channel, std::unique_ptr<ShmBackend> *out) {
  if (channel == nullptr) return;
  std::unique_ptr<ShmBackend> b(new ShmBackend());
  const int rank = channel->rank(), size = channel->size();
  b->landing_.reset(new shm::Landing(channel->Landing(rank)));
  b->scratch_.sources.resize(static_cast<size_t>(size));
  b->scratch_.in_landing.resize(static_cast<size_t>(size));
  b->channel_ = std::move(channel);
  *out = std::move(b);
}

ShmBackend::~ShmBackend() {
  channel_->Leave(shm::Channel::kLeftDestroyed);
  // The last landed call's copy out has run before the segment is
  // unregistered and unmapped.
  landing_.reset();
  // Errors ignored: at process exit the runtime may already be torn down.
  if (registered_with_ != nullptr) {
    (void)registered_with_->HostUnregister(channel_->segment().base());
  }
}

Status ShmBackend::RunOn(const CollArgs &a, DeviceRuntime *device, bool send_dev,
                         bool recv_dev, CopyCounts *counts) {
  if (channel_->failed()) return channel_->FailedError();
  if (device != nullptr && (send_dev || recv_dev)) RegisterWith(device);
  const auto place = [](bool dev) { return dev ? shm::Place::kDeviceStaged : shm::Place::kHost; };
  return RunAt(a, place(send_dev), place(recv_dev), device, counts);
}

Status ShmBackend::RunAt(const CollArgs &a, shm::Place send, shm::Place recv,
                         DeviceRuntime *device, CopyCounts *counts) {
  shm::Call c(*channel_, a, send, recv, device, counts, scratch_);
  switch (a.kind) {
    case CollKind::kAllReduce: return shm::AllReduce(c);
    case CollKind::kReduceScatter: return shm::ReduceScatter(c);
    case CollKind::kReduce: return shm::Reduce(c);
    case CollKind::kAllGather: return shm::AllGather(c);
    case CollKind::kBroadcast: return shm::Broadcast(c);
    case CollKind::kGather: return shm::Gather(c);
    case CollKind::kScatter: return shm::Scatter(c);
    case CollKind::kAllToAll: return shm::AllToAll(c);
    default: break;
  }
  return Status(infinicclInternalError, Unsupported(a));
}

const char *ShmBackend::Unsupported(const CollArgs &a) const {
  switch (a.kind) {
    case CollKind::kAllReduce:
    case CollKind::kReduceScatter:
    case CollKind::kReduce:
    case CollKind::kAllGather:
    case CollKind::kBroadcast:
    case CollKind::kGather:
    case CollKind::kScatter:
    case CollKind::kAllToAll:
      return nullptr;
    default:
      return "shared memory runs no point-to-point call";
  }
}

size_t ShmBackend::MaxBytes(CollKind kind, bool devices) {
  const size_t set = GlobalConfig().shm_max_bytes;
  if (set != SIZE_MAX) return set;
  if (devices) return SIZE_MAX;
  // Where shared memory beat MPI at 2 and 4 ranks on one node (host
  // float32, Open MPI 4.1 and MPICH 4.0; docs/PERFORMANCE.md, "Shared
  // memory on a node"): AllReduce at every size (above 4 MiB also ahead of
  // MPI cut into pieces), Reduce to 16 MiB, ReduceScatter at every size
  // measured (MPI's moves every block twice), AllGather, Broadcast and
  // Gather only to 16 KiB, Scatter and AllToAll (per block) to 8 KiB (past
  // them MPI's single-copy transfer beats a copy in and a copy out; 2 ranks,
  // Open MPI 4.1).
  switch (kind) {
    case CollKind::kAllReduce: return SIZE_MAX;
    case CollKind::kReduce: return size_t{16} << 20;
    case CollKind::kReduceScatter: return size_t{64} << 20;
    case CollKind::kScatter:
    case CollKind::kAllToAll: return size_t{8} << 10;
    default: return size_t{16} << 10;
  }
}

bool ShmBackend::Takes(const CollArgs &a, bool devices) const {
  if (Unsupported(a) != nullptr) return false;
  if (GlobalConfig().shm == Tristate::kOn) return true;
  return a.count * DataTypeSize(a.dtype) <= MaxBytes(a.kind, devices);
}

bool ShmBackend::RegisterWith(DeviceRuntime *device) {
  std::lock_guard<std::mutex> lock(register_mutex_);
  if (register_tried_) return registered_with_ == device;
  register_tried_ = true;
  const NodeSegment &segment = channel_->segment();
  const Status st = device->HostRegister(segment.base(), segment.bytes());
  if (st.ok()) {
    registered_with_ = device;
    INFINICCL_INFO("shared memory: the segment (%zu bytes) is page-locked with %s: device "
                   "copies into and out of it are DMA",
                   segment.bytes(), device->description());
  } else {
    INFINICCL_INFO("shared memory: the segment stays pageable for %s (%s): device copies "
                   "through it are synchronous",
                   device->description(), st.message().c_str());
  }
  return registered_with_ == device;
}

bool ShmBackend::Lands(const CollArgs &a, DeviceRuntime *device, bool send_dev,
                       bool recv_dev) {
  return a.kind == CollKind::kAllReduce && send_dev && recv_dev && device != nullptr &&
         a.count > 0 && a.count * DataTypeSize(a.dtype) <= kStageBytes && RegisterWith(device);
}

}  // namespace infiniccl
