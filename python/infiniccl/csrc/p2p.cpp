// Point to point on the torch backend: send, recv and recv from any
// source, batches (startCoalescing/endCoalescing), the worker's open
// group of posted sends and receives (Post, Flush), and all_to_all with
// split sizes as Send/Recv in one group (see backend.h).

#include <sstream>

#include "backend.h"

#pragma GCC visibility push(hidden)
namespace infiniccl_c10d {

c10::intrusive_ptr<c10d::Work> BackendInfiniCCL::send(std::vector<at::Tensor> &tensors,
                                                      int dst, int tag) {
  One(tensors, "send");
  Peer(dst, "send");
  Tag(tag, "send");
  auto t = tensors[0].contiguous();
  P2POp op;
  op.post = [this, t, dst, tag](void *stream) {
    Buf b = Raw(t);
    Check(infinicclSendTagged(b.ptr, b.count, (infinicclDataType_t)b.type, dst, tag,
                              comm_, stream));
  };
  return P2P("send", "infiniccl:send", OpType::SEND, tensors, std::move(op), -1);
}

c10::intrusive_ptr<c10d::Work> BackendInfiniCCL::recv(std::vector<at::Tensor> &tensors,
                                                      int src, int tag) {
  One(tensors, "recv");
  Peer(src, "recv");
  Tag(tag, "recv");
  auto t = tensors[0];
  auto c = t.is_contiguous() ? t : t.contiguous();
  P2POp op;
  op.post = [this, c, src, tag](void *stream) {
    Buf b = Raw(c);
    Check(infinicclRecvTagged(b.ptr, b.count, (infinicclDataType_t)b.type, src, tag,
                              nullptr, comm_, stream));
  };
  if (!c.is_same(t)) op.finish = [t, c] { t.copy_(c); };
  return P2P("recv", "infiniccl:recv", OpType::RECV, tensors, std::move(op), src);
}

c10::intrusive_ptr<c10d::Work> BackendInfiniCCL::recvAnysource(
    std::vector<at::Tensor> &tensors, int tag) {
  One(tensors, "recv");
  Tag(tag, "recv");
  if (coalescing_) {
    Fail(
        "batch_isend_irecv: a receive without a peer (from any source) cannot be "
        "batched: the batch's one Work could not report its sender");
  }
  auto t = tensors[0];
  auto c = t.is_contiguous() ? t : t.contiguous();
  auto source = std::make_shared<int>(-1);
  P2POp op;
  op.post = [this, c, tag, source](void *stream) {
    Buf b = Raw(c);
    Check(infinicclRecvTagged(b.ptr, b.count, (infinicclDataType_t)b.type,
                              INFINICCL_ANY_SOURCE, tag, source.get(), comm_, stream));
  };
  op.finish = [t, c] {
    if (!t.device().is_cpu()) {
      c10::impl::getDeviceGuardImpl(t.device().type())
          ->getStream(t.device())
          .synchronize();
    }
    if (!c.is_same(t)) t.copy_(c);
  };
  return P2P("recvAnysource", "infiniccl:recvAnySource", OpType::RECVANYSOURCE, tensors,
             std::move(op), -1, source);
}

void BackendInfiniCCL::startCoalescing() {
  TORCH_CHECK(!coalescing_, "infiniccl: startCoalescing while coalescing");
  coalescing_ = true;
  batch_.clear();
  batch_inputs_.clear();
  batch_work_ =
      c10::make_intrusive<WorkInfiniCCL>(rank_, OpType::COALESCED, "batch_isend_irecv",
                                         timeout_, std::vector<at::Tensor>(), group_);
}

c10::intrusive_ptr<c10d::Work> BackendInfiniCCL::endCoalescing() {
  TORCH_CHECK(coalescing_, "infiniccl: endCoalescing without startCoalescing");
  coalescing_ = false;
  auto ops = std::move(batch_);
  auto work = batch_work_;
  batch_work_.reset();
  if (ops.empty()) {
    work->Done(nullptr);
    return work;
  }
  // One event for the batch, as NCCL's "nccl:coalesced".
  work->Record("infiniccl:coalesced", batch_inputs_);
  std::vector<at::Tensor> keep = std::move(batch_inputs_);
  batch_inputs_.clear();
  if (batch_device_.is_cpu()) {
    work->MarkPosted();
    EnqueuePost(work, std::move(ops));
    return work;
  }
  // Device tensors: one group in the caller's thread, ordered on the stream.
  auto job = [this, ops](void *stream) {
    Check(infinicclGroupStart());
    std::exception_ptr err;
    for (const auto &op : ops) {
      try {
        op.post(stream);
      } catch (...) {
        if (!err) err = std::current_exception();
      }
    }
    infinicclResult_t rc = infinicclGroupEnd();
    if (err) std::rethrow_exception(err);
    Check(rc);
    for (const auto &op : ops) {
      if (op.finish) op.finish();
    }
  };
  Enqueue(work, std::move(job), batch_device_, batch_stream_, false, keep);
  return work;
}

void BackendInfiniCCL::Peer(int peer, const char *what) {
  if (peer < 0 || peer >= size_) {
    Fail(std::string(what) + ": peer " + std::to_string(peer) +
         " is not a rank of the group (size " + std::to_string(size_) + ")");
  }
}

void BackendInfiniCCL::Tag(int tag, const char *what) {
  if (tag < 0 || tag > INFINICCL_TAG_MAX) {
    Fail(std::string(what) + ": tag " + std::to_string(tag) +
         " is not a tag of the "
         "library (0.." +
         std::to_string(INFINICCL_TAG_MAX) + ")");
  }
}

void BackendInfiniCCL::Exchange(const std::vector<at::Tensor> &sends,
                                const std::vector<at::Tensor> &recvs, void *stream) {
  std::vector<at::Tensor> src;
  std::vector<Output> dst;
  dst.reserve(size_);
  for (int j = 0; j < size_; ++j) {
    src.push_back(sends[j].contiguous());
    dst.emplace_back(recvs[j]);
    if (src[j].numel() != 0 && src[j].scalar_type() != dst[j].t.scalar_type()) {
      Fail("all_to_all: input and output types differ");
    }
  }
  // Element counts checked across ranks first (one AllToAll, one
  // AllReduce), so a mismatch raises on every rank instead of truncating
  // or hanging.
  std::vector<int64_t> counts(size_), got(size_);
  for (int j = 0; j < size_; ++j) counts[j] = src[j].numel();
  Check(infinicclAllToAll(counts.data(), got.data(), 1, infinicclInt64, comm_, nullptr));
  int bad = 0;
  for (int j = 0; j < size_; ++j) bad |= got[j] != dst[j].t.numel();
  Check(infinicclAllReduce(&bad, &bad, 1, infinicclInt32, infinicclMax, comm_, nullptr));
  if (bad) {
    std::ostringstream msg;
    msg << "the ranks' split sizes disagree (this rank receives";
    for (int j = 0; j < size_; ++j) msg << (j ? ", " : " ") << dst[j].t.numel();
    msg << " elements from ranks 0.." << size_ - 1 << ", they send";
    for (int j = 0; j < size_; ++j) msg << (j ? ", " : " ") << got[j];
    msg << ")";
    throw std::runtime_error(msg.str());
  }
  // Its sends and receives complete at its own group's end: posted P2P
  // calls of the worker's open group complete first (a nested group would
  // end with the outer one).
  bool open;
  {
    std::lock_guard<std::mutex> lock(mu_);
    open = p2p_open_;
  }
  if (open) Flush();
  Check(infinicclGroupStart());
  std::exception_ptr err;
  try {
    for (int j = 0; j < size_; ++j) {
      if (j == rank_) {
        if (dst[j].t.numel() != src[j].numel()) Fail("all_to_all: split sizes disagree");
        dst[j].t.copy_(src[j].view(dst[j].t.sizes()));
        continue;
      }
      if (src[j].numel()) {
        Buf b = Raw(src[j]);
        Check(
            infinicclSend(b.ptr, b.count, (infinicclDataType_t)b.type, j, comm_, stream));
      }
      if (dst[j].t.numel()) {
        Buf b = Raw(dst[j].t);
        Check(
            infinicclRecv(b.ptr, b.count, (infinicclDataType_t)b.type, j, comm_, stream));
      }
    }
  } catch (...) {
    err = std::current_exception();
  }
  infinicclResult_t rc = infinicclGroupEnd();
  if (err) std::rethrow_exception(err);
  Check(rc);
}

c10::intrusive_ptr<c10d::Work> BackendInfiniCCL::P2P(
    const char *op, const char *event, OpType type,
    const std::vector<at::Tensor> &tensors, P2POp p2p, int src,
    std::shared_ptr<int> source) {
  seq_.fetch_add(1);
  c10::Device device(c10::kCPU);
  void *stream = StreamOf(tensors, {}, &device);
  if (coalescing_) {
    if (batch_.empty()) {
      batch_device_ = device;
      batch_stream_ = stream;
    } else if (device != batch_device_) {
      Fail("batch_isend_irecv: tensors on different devices in one batch");
    }
    batch_.push_back(std::move(p2p));
    batch_inputs_.insert(batch_inputs_.end(), tensors.begin(), tensors.end());
    return batch_work_;
  }
  auto work =
      c10::make_intrusive<WorkInfiniCCL>(rank_, type, op, timeout_, tensors, group_);
  work->Record(event, tensors);
  work->source_rank_ = src;
  work->source_ = std::move(source);
  if (!device.is_cpu()) {
    // Device calls return at once, ordered on the stream.
    Enqueue(
        work,
        [p2p](void *s) {
          p2p.post(s);
          if (p2p.finish) p2p.finish();
        },
        device, stream, false, tensors);
    return work;
  }
  work->MarkPosted();
  EnqueuePost(work, {std::move(p2p)});
  return work;
}

void BackendInfiniCCL::Post(Item &item) {
  item.work->Begin();
  bool open;
  {
    std::lock_guard<std::mutex> lock(mu_);
    open = p2p_open_;
  }
  if (!open) {
    std::exception_ptr err = Capture(item.work, [&] { Check(infinicclGroupStart()); });
    if (err) {
      item.work->Done(err);
      return;
    }
    std::lock_guard<std::mutex> lock(mu_);
    p2p_open_ = true;
  }
  std::exception_ptr err;
  for (const auto &op : item.p2p) {
    std::exception_ptr e = Capture(item.work, [&] { op.post(nullptr); });
    if (e && !err) err = e;
  }
  open_.push_back(Posted{item.work, std::move(item.p2p), err});
}

void BackendInfiniCCL::Flush() {
  bool aborted;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!p2p_open_) return;
    aborted = aborted_;
  }
  // After abort_process_group the posted calls are given up: ending the
  // group would wait for peers that may never come.
  const infinicclResult_t rc = aborted ? infinicclInvalidUsage : infinicclGroupEnd();
  std::string msg;
  if (aborted) {
    msg = kAborted;
  } else if (rc != infinicclSuccess) {
    msg = infinicclGetLastError(nullptr);
    if (msg.empty()) msg = infinicclGetLastError(comm_);
    msg = std::string(infinicclGetErrorString(rc)) + ": " + msg;
  }
  std::vector<Posted> done = std::move(open_);
  open_.clear();
  {
    std::lock_guard<std::mutex> lock(mu_);
    p2p_open_ = false;
  }
  for (auto &p : done) {
    std::exception_ptr err = p.err;
    if (!err && rc != infinicclSuccess) {
      err = Capture(p.work, [&] { throw std::runtime_error(msg); });
    }
    if (!err) {
      err = Capture(p.work, [&] {
        for (const auto &op : p.p2p) {
          if (op.finish) op.finish();
        }
      });
    }
    p.work->Done(err);
  }
}

}  // namespace infiniccl_c10d
#pragma GCC visibility pop
