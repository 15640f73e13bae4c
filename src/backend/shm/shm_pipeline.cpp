#include "backend/shm/shm_pipeline.h"

#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "core/dtype.h"

namespace infiniccl {
namespace shm {

Status Copies::Copy(void *dst, const void *src, size_t bytes, bool dst_dev, bool src_dev) {
  if (bytes == 0 || dst == src) return Status::Ok();
  if (!dst_dev && !src_dev) {
    std::memcpy(dst, src, bytes);
    return Status::Ok();
  }
  const CopyKind kind = dst_dev ? (src_dev ? CopyKind::kDeviceToDevice : CopyKind::kHostToDevice)
                                : CopyKind::kDeviceToHost;
  if (counts_ != nullptr && kind == CopyKind::kDeviceToHost) {
    ++counts_->d2h;
    counts_->d2h_bytes += bytes;
  } else if (counts_ != nullptr && kind == CopyKind::kHostToDevice) {
    ++counts_->h2d;
    counts_->h2d_bytes += bytes;
  }
  if (kind != CopyKind::kHostToDevice) {
    pending_in_ = true;
    return device_->MemcpyAsync(dst, src, bytes, kind, stream_);
  }
  if (out_ == nullptr) INFINICCL_RETURN_IF_ERROR(CopyOutStream(*device_, &out_));
  if (!ordered_) {
    // The destination may still be written by work queued on the call's
    // stream before the call.
    INFINICCL_RETURN_IF_ERROR(device_->StreamSynchronize(stream_));
    ordered_ = true;
    pending_in_ = false;
  }
  pending_out_ = true;
  return device_->MemcpyAsync(dst, src, bytes, kind, out_);
}

Status Copies::Finish() {
  Status in = Status::Ok(), out = Status::Ok();
  if (pending_in_) {
    in = device_->StreamSynchronize(stream_);
    ordered_ = true;
  }
  if (pending_out_) out = device_->StreamSynchronize(out_);
  pending_in_ = pending_out_ = false;
  return in.ok() ? out : in;
}

Call::Call(Channel &channel, const CollArgs &args, Place send_place, Place recv_place,
           DeviceRuntime *device, CopyCounts *counts, Scratch &s)
    : ch(channel),
      a(args),
      send(send_place),
      recv(recv_place),
      send_dev(OnDevice(send_place)),
      recv_dev(OnDevice(recv_place)),
      elem(DataTypeSize(args.dtype)),
      in(static_cast<const char *>(args.sendbuff)),
      out(static_cast<char *>(args.recvbuff)),
      divisor(args.avg_divisor > 0 ? args.avg_divisor : channel.size()),
      copies(device, args.stream, counts),
      scratch(s) {
  ch.PollBeforeSleep(!Staged());
}

void StreamCopy(char *dst, const char *src, size_t bytes) {
#if defined(__SSE2__)
  const size_t head = std::min(bytes, (16 - (reinterpret_cast<uintptr_t>(dst) & 15)) & 15);
  std::memcpy(dst, src, head);
  size_t i = head;
  for (; i + 64 <= bytes; i += 64) {
    const __m128i *from = reinterpret_cast<const __m128i *>(src + i);
    __m128i *to = reinterpret_cast<__m128i *>(dst + i);
    const __m128i a = _mm_loadu_si128(from), b = _mm_loadu_si128(from + 1);
    const __m128i c = _mm_loadu_si128(from + 2), d = _mm_loadu_si128(from + 3);
    _mm_stream_si128(to, a);
    _mm_stream_si128(to + 1, b);
    _mm_stream_si128(to + 2, c);
    _mm_stream_si128(to + 3, d);
  }
  std::memcpy(dst + i, src + i, bytes - i);
  _mm_sfence();  // before the post that tells the other ranks the chunk is in
#else
  std::memcpy(dst, src, bytes);
#endif
}

void CacheCopy(char *dst, const char *src, size_t bytes) { std::memcpy(dst, src, bytes); }

}  // namespace shm
}  // namespace infiniccl
