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
  if (channel->has_rings()) b->p2p_.reset(new shm::P2p(*channel));
  b->channel_ = std::move(channel);
  *out = std::move(b);
}

ShmBackend::~ShmBackend() {
  p2p_.reset();
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
  if (IsP2p(a.kind)) {
    return RunP2p(a, device, a.kind == CollKind::kSend ? send_dev : recv_dev, counts);
  }
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

Status ShmBackend::RunP2p(const CollArgs &a, DeviceRuntime *device, bool on_device,
                          CopyCounts *counts) {
  if (p2p_ == nullptr) return Status(infinicclInternalError, Unsupported(a));
  const bool send = a.kind == CollKind::kSend;
  const size_t bytes = a.count * DataTypeSize(a.dtype);
  std::vector<char> staged;
  const void *buf = send ? a.sendbuff : a.recvbuff;
  if (on_device && device != nullptr) {
    // Through host memory: a Send's buffer copied out first, a Recv's
    // copied in once its message is whole.
    staged.resize(bytes);
    if (send) {
      shm::Copies copies(device, a.stream, counts);
      INFINICCL_RETURN_IF_ERROR(copies.Copy(staged.data(), a.sendbuff, bytes, false, true));
      INFINICCL_RETURN_IF_ERROR(copies.Finish());
    }
    buf = staged.data();
  }
  ShmP2pBatch one(*p2p_);
  INFINICCL_RETURN_IF_ERROR(one.Post(a, buf));
  std::vector<bool> ok;
  INFINICCL_RETURN_IF_ERROR(one.Complete([](size_t) {}, &ok));
  if (!send && on_device && device != nullptr) {
    shm::Copies copies(device, a.stream, counts);
    INFINICCL_RETURN_IF_ERROR(copies.Copy(a.recvbuff, staged.data(), bytes, true, false));
    INFINICCL_RETURN_IF_ERROR(copies.Finish());
  }
  return Status::Ok();
}

std::unique_ptr<P2pBatch> ShmBackend::NewP2pBatch() {
  if (p2p_ == nullptr) return nullptr;
  return std::make_unique<ShmP2pBatch>(*p2p_);
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
    case CollKind::kSend:
    case CollKind::kRecv:
      if (p2p_ != nullptr) return nullptr;
      return "the shared memory of a communicator made under MPI runs no point-to-point call";
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
  // Only a communicator without MPI has rings: every size goes there.
  if (IsP2p(a.kind)) return true;
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
