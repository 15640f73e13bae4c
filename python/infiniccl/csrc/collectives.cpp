// The collectives of the torch backend (all_reduce, broadcast, reduce,
// all_gather*, reduce_scatter*, all_to_all*, gather, scatter, barrier,
// monitored_barrier) and their argument checks (see backend.h).

#include <sstream>

#include "backend.h"

#pragma GCC visibility push(hidden)
namespace infiniccl_c10d {

c10::intrusive_ptr<c10d::Work> BackendInfiniCCL::allreduce(
    std::vector<at::Tensor> &tensors, const c10d::AllreduceOptions &opts) {
  NonEmpty(tensors, "allreduce");
  auto rop = opts.reduceOp;
  PreMul pre(rop);
  return Submit(
      "allreduce", "infiniccl:all_reduce", OpType::ALLREDUCE, tensors, tensors, opts,
      [this, tensors, rop, pre](void *stream) {
        for (const auto &t : tensors) {
          Output o(t);
          pre.Scale(o.t);
          int op;
          Buf b = Reduced(o.t, rop, &op);
          Check(infinicclAllReduce(b.ptr, b.ptr, b.count, (infinicclDataType_t)b.type,
                                   (infinicclRedOp_t)op, comm_, stream));
        }
      });
}

c10::intrusive_ptr<c10d::Work> BackendInfiniCCL::broadcast(
    std::vector<at::Tensor> &tensors, const c10d::BroadcastOptions &opts) {
  int root = Root(opts.rootRank, "broadcast");
  RootTensor(tensors, opts.rootTensor, "broadcast");
  return Submit("broadcast", "infiniccl:broadcast", OpType::BROADCAST, tensors, tensors,
                opts, [this, tensors, root](void *stream) {
                  for (const auto &t : tensors) {
                    Output o(t);
                    Buf b = Raw(o.t);
                    Check(infinicclBcast(b.ptr, b.count, (infinicclDataType_t)b.type,
                                         root, comm_, stream));
                  }
                });
}

c10::intrusive_ptr<c10d::Work> BackendInfiniCCL::reduce(std::vector<at::Tensor> &tensors,
                                                        const c10d::ReduceOptions &opts) {
  int root = Root(opts.rootRank, "reduce");
  RootTensor(tensors, opts.rootTensor, "reduce");
  auto rop = opts.reduceOp;
  PreMul pre(rop);
  return Submit(
      "reduce", "infiniccl:reduce", OpType::REDUCE, tensors, tensors, opts,
      [this, tensors, root, rop, pre](void *stream) {
        for (const auto &t : tensors) {
          Output o(t);
          at::Tensor in = pre.Scaled(o.t);  // other ranks' tensors stay
          int op;
          Buf b = Reduced(in, rop, &op);
          Check(infinicclReduce(b.ptr, b.ptr, b.count, (infinicclDataType_t)b.type,
                                (infinicclRedOp_t)op, root, comm_, stream));
          if (!in.is_same(o.t) && rank_ == root) o.t.copy_(in);
        }
      });
}

c10::intrusive_ptr<c10d::Work> BackendInfiniCCL::allgather(
    std::vector<std::vector<at::Tensor>> &outputs, std::vector<at::Tensor> &inputs,
    const c10d::AllgatherOptions &opts) {
  One(inputs, "allgather");
  TORCH_CHECK(outputs.size() == 1, "infiniccl: allgather takes one output list");
  CheckList(outputs[0], inputs[0], "allgather");
  auto in = inputs[0];
  auto outs = outputs[0];
  return Submit("allgather", "infiniccl:all_gather", OpType::ALLGATHER, inputs, outs,
                opts, [this, in, outs](void *stream) {
                  auto src = in.contiguous();
                  auto flat = at::empty({size_ * src.numel()}, src.options());
                  Buf b = Raw(src);
                  Check(infinicclAllGather(b.ptr, flat.data_ptr(), b.count,
                                           (infinicclDataType_t)b.type, comm_, stream));
                  Unflatten(flat, outs);
                });
}

c10::intrusive_ptr<c10d::Work> BackendInfiniCCL::allgather_coalesced(
    std::vector<std::vector<at::Tensor>> &output_lists, std::vector<at::Tensor> &inputs,
    const c10d::AllgatherOptions &opts) {
  if ((int)output_lists.size() != size_) {
    Fail("allgather_coalesced: " + std::to_string(output_lists.size()) +
         " output lists for a group of " + std::to_string(size_));
  }
  std::vector<std::vector<at::Tensor>> per_input(inputs.size());
  std::vector<at::Tensor> all_outs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    for (auto &lst : output_lists) {
      if (lst.size() != inputs.size())
        Fail("allgather_coalesced: a list of the wrong length");
      per_input[i].push_back(lst[i]);
      all_outs.push_back(lst[i]);
    }
    CheckList(per_input[i], inputs[i], "allgather_coalesced");
  }
  return Submit("allgather_coalesced", "infiniccl:all_gather",
                OpType::ALLGATHER_COALESCED, inputs, all_outs, opts,
                [this, inputs, per_input](void *stream) {
                  for (size_t i = 0; i < inputs.size(); ++i) {
                    auto src = inputs[i].contiguous();
                    auto flat = at::empty({size_ * src.numel()}, src.options());
                    Buf b = Raw(src);
                    Check(infinicclAllGather(b.ptr, flat.data_ptr(), b.count,
                                             (infinicclDataType_t)b.type, comm_, stream));
                    Unflatten(flat, per_input[i]);
                  }
                });
}

void BackendInfiniCCL::CheckTimesGroup(const at::Tensor &big, const at::Tensor &small,
                                       const char *what, const char *big_name,
                                       const char *small_name) const {
  SameType(big, small, what);
  if (big.numel() != small.numel() * size_) {
    Fail(std::string(what) + ": " + big_name + " has " + std::to_string(big.numel()) +
         " elements, not " + std::to_string(small.numel() * size_) + " (the " +
         small_name + "'s size times the group's)");
  }
}

c10::intrusive_ptr<c10d::Work> BackendInfiniCCL::_allgather_base(
    at::Tensor &output, at::Tensor &input, const c10d::AllgatherOptions &opts) {
  CheckTimesGroup(output, input, "all_gather_into_tensor", "output", "input");
  std::vector<at::Tensor> ins{input}, outs{output};
  return Submit("all_gather_into_tensor", "infiniccl:all_gather", OpType::_ALLGATHER_BASE,
                ins, outs, opts, [this, input, output](void *stream) {
                  GatherInto(output, input, stream);
                });
}

c10::intrusive_ptr<c10d::Work> BackendInfiniCCL::allgather_into_tensor_coalesced(
    std::vector<at::Tensor> &outputs, std::vector<at::Tensor> &inputs,
    const c10d::AllgatherOptions &opts) {
  TORCH_CHECK(outputs.size() == inputs.size(), "infiniccl: as many outputs as inputs");
  for (size_t i = 0; i < inputs.size(); ++i) {
    CheckTimesGroup(outputs[i], inputs[i], "allgather_into_tensor_coalesced", "an output",
                    "input");
  }
  return Submit("allgather_into_tensor_coalesced", "infiniccl:all_gather",
                OpType::COALESCED, inputs, outputs, opts,
                [this, inputs, outputs](void *stream) {
                  for (size_t i = 0; i < inputs.size(); ++i) {
                    GatherInto(outputs[i], inputs[i], stream);
                  }
                });
}

c10::intrusive_ptr<c10d::Work> BackendInfiniCCL::reduce_scatter(
    std::vector<at::Tensor> &outputs, std::vector<std::vector<at::Tensor>> &inputs,
    const c10d::ReduceScatterOptions &opts) {
  One(outputs, "reduce_scatter");
  TORCH_CHECK(inputs.size() == 1, "infiniccl: reduce_scatter takes one input list");
  CheckList(inputs[0], outputs[0], "reduce_scatter");
  auto out = outputs[0];
  auto ins = inputs[0];
  auto rop = opts.reduceOp;
  PreMul pre(rop);
  return Submit("reduce_scatter", "infiniccl:reduce_scatter", OpType::REDUCE_SCATTER, ins,
                outputs, opts, [this, out, ins, rop, pre](void *stream) {
                  at::Tensor flat = Flatten(ins);
                  pre.Scale(flat);
                  ScatterFrom(out, flat, rop, stream);
                });
}

c10::intrusive_ptr<c10d::Work> BackendInfiniCCL::_reduce_scatter_base(
    at::Tensor &output, at::Tensor &input, const c10d::ReduceScatterOptions &opts) {
  CheckTimesGroup(input, output, "reduce_scatter_tensor", "input", "output");
  auto rop = opts.reduceOp;
  PreMul pre(rop);
  std::vector<at::Tensor> ins{input}, outs{output};
  return Submit("reduce_scatter_tensor", "infiniccl:reduce_scatter",
                OpType::_REDUCE_SCATTER_BASE, ins, outs, opts,
                [this, output, input, rop, pre](void *stream) {
                  ScatterFrom(output, pre.Scaled(input.contiguous()), rop, stream);
                });
}

c10::intrusive_ptr<c10d::Work> BackendInfiniCCL::reduce_scatter_tensor_coalesced(
    std::vector<at::Tensor> &outputs, std::vector<at::Tensor> &inputs,
    const c10d::ReduceScatterOptions &opts) {
  TORCH_CHECK(outputs.size() == inputs.size(), "infiniccl: as many outputs as inputs");
  for (size_t i = 0; i < inputs.size(); ++i) {
    CheckTimesGroup(inputs[i], outputs[i], "reduce_scatter_tensor_coalesced", "an input",
                    "output");
  }
  auto rop = opts.reduceOp;
  PreMul pre(rop);
  return Submit(
      "reduce_scatter_tensor_coalesced", "infiniccl:reduce_scatter", OpType::COALESCED,
      inputs, outputs, opts, [this, inputs, outputs, rop, pre](void *stream) {
        for (size_t i = 0; i < inputs.size(); ++i) {
          ScatterFrom(outputs[i], pre.Scaled(inputs[i].contiguous()), rop, stream);
        }
      });
}

c10::intrusive_ptr<c10d::Work> BackendInfiniCCL::alltoall_base(
    at::Tensor &output, at::Tensor &input, std::vector<int64_t> &out_splits,
    std::vector<int64_t> &in_splits, const c10d::AllToAllOptions &opts) {
  SameType(output, input, "all_to_all_single");
  if (in_splits.empty() && out_splits.empty() && output.numel() != input.numel()) {
    // gloo's alltoall enforces the same; the even path below would write
    // the input's size into the output.
    Fail("all_to_all_single: the output has " + std::to_string(output.numel()) +
         " elements and the input " + std::to_string(input.numel()) +
         ": without split sizes they must be equal");
  }
  if (coalescing_ && !(in_splits.empty() && out_splits.empty())) {
    Fail(
        "all_to_all_single with split sizes cannot be coalesced (it is a group of its "
        "own)");
  }
  auto sends = Split(input, in_splits, "input");
  auto recvs = Split(output, out_splits, "output");
  std::vector<at::Tensor> ins{input}, outs{output};
  bool even = in_splits.empty() && out_splits.empty();
  return Submit("all_to_all_single", "infiniccl:all_to_all", OpType::ALLTOALL_BASE, ins,
                outs, opts, [this, input, output, sends, recvs, even](void *stream) {
                  if (even && output.is_contiguous()) {
                    auto src = input.contiguous();
                    Buf b = Raw(src);
                    Check(infinicclAllToAll(b.ptr, output.data_ptr(), b.count / size_,
                                            (infinicclDataType_t)b.type, comm_, stream));
                    return;
                  }
                  Exchange(sends, recvs, stream);
                });
}

c10::intrusive_ptr<c10d::Work> BackendInfiniCCL::alltoall(
    std::vector<at::Tensor> &outputs, std::vector<at::Tensor> &inputs,
    const c10d::AllToAllOptions &opts) {
  if ((int)outputs.size() != size_ || (int)inputs.size() != size_) {
    Fail("all_to_all: " + std::to_string(inputs.size()) + " inputs and " +
         std::to_string(outputs.size()) + " outputs for a group of " +
         std::to_string(size_));
  }
  for (int j = 0; j < size_; ++j) SameType(outputs[j], inputs[j], "all_to_all");
  if (coalescing_) Fail("all_to_all cannot be coalesced (it is a group of its own)");
  return Submit(
      "all_to_all", "infiniccl:all_to_all", OpType::ALLTOALL, inputs, outputs, opts,
      [this, inputs, outputs](void *stream) { Exchange(inputs, outputs, stream); });
}

c10::intrusive_ptr<c10d::Work> BackendInfiniCCL::gather(
    std::vector<std::vector<at::Tensor>> &outputs, std::vector<at::Tensor> &inputs,
    const c10d::GatherOptions &opts) {
  One(inputs, "gather");
  int root = Root(opts.rootRank, "gather");
  std::vector<at::Tensor> outs;
  if (rank_ == root) {
    TORCH_CHECK(outputs.size() == 1,
                "infiniccl: gather takes one output list at the root");
    CheckList(outputs[0], inputs[0], "gather");
    outs = outputs[0];
  } else if (!outputs.empty()) {
    // As gloo: a list here is a mistake made on every rank (the root's
    // own check raises there), so this rank raises too instead of waiting
    // in the library for a root that never comes.
    Fail("gather: requires empty output on non-root (the root is rank " +
         std::to_string(root) + ")");
  }
  auto in = inputs[0];
  return Submit(
      "gather", "infiniccl:gather", OpType::GATHER, inputs, outs, opts,
      [this, in, outs, root](void *stream) {
        auto src = in.contiguous();
        Buf b = Raw(src);
        at::Tensor flat;
        if (rank_ == root) flat = at::empty({size_ * src.numel()}, src.options());
        Check(infinicclGather(b.ptr, rank_ == root ? flat.data_ptr() : nullptr, b.count,
                              (infinicclDataType_t)b.type, root, comm_, stream));
        if (rank_ == root) Unflatten(flat, outs);
      });
}

c10::intrusive_ptr<c10d::Work> BackendInfiniCCL::scatter(
    std::vector<at::Tensor> &outputs, std::vector<std::vector<at::Tensor>> &inputs,
    const c10d::ScatterOptions &opts) {
  One(outputs, "scatter");
  int root = Root(opts.rootRank, "scatter");
  std::vector<at::Tensor> ins;
  if (rank_ == root) {
    TORCH_CHECK(inputs.size() == 1,
                "infiniccl: scatter takes one input list at the root");
    CheckList(inputs[0], outputs[0], "scatter");
    ins = inputs[0];
  } else if (!inputs.empty()) {
    // As gloo (see gather).
    Fail("scatter: requires empty input on non-root (the root is rank " +
         std::to_string(root) + ")");
  }
  auto out = outputs[0];
  return Submit(
      "scatter", "infiniccl:scatter", OpType::SCATTER, ins, outputs, opts,
      [this, ins, out, root](void *stream) {
        Output o(out);
        at::Tensor flat;
        if (rank_ == root) flat = Flatten(ins);
        Buf b = Raw(o.t);
        Check(infinicclScatter(rank_ == root ? flat.data_ptr() : nullptr, b.ptr, b.count,
                               (infinicclDataType_t)b.type, root, comm_, stream));
      });
}

void BackendInfiniCCL::monitoredBarrier(const c10d::BarrierOptions &opts,
                                        bool wait_all_ranks) {
  RECORD_USER_SCOPE("infiniccl:monitored_barrier");  // runs in the caller's thread
  Refuse("monitored_barrier");
  TORCH_CHECK(store_, "infiniccl: monitored_barrier needs the group's store");
  const Ms limit = opts.timeout == c10d::kUnsetTimeout ? timeout_ : opts.timeout;
  const std::string key =
      "infiniccl/monitored_barrier/" + std::to_string(++monitored_) + "/";
  if (rank_ != 0) {
    store_->set(key + std::to_string(rank_), std::vector<uint8_t>{1});
    try {
      store_->wait({key + "release"}, limit);
    } catch (const c10::Error &) {
      Fail(What("monitored_barrier") + ": rank 0 did not release this rank within " +
           std::to_string(limit.count()) + " ms (a rank of the group has not arrived)");
    }
    return;
  }
  const auto deadline = std::chrono::steady_clock::now() + limit;
  std::vector<int> missing;
  for (int r = 1; r < size_; ++r) {
    const std::string k = key + std::to_string(r);
    const auto left =
        std::chrono::duration_cast<Ms>(deadline - std::chrono::steady_clock::now());
    bool arrived = false;
    if (left.count() > 0) {
      try {
        store_->wait({k}, left);
        arrived = true;
      } catch (const c10::Error &) {
      }
    } else {
      arrived = store_->check({k});
    }
    if (!arrived) {
      missing.push_back(r);
      if (!wait_all_ranks) break;
    }
  }
  if (missing.empty()) {
    store_->set(key + "release", std::vector<uint8_t>{1});
    return;
  }
  std::ostringstream m;
  m << (missing.size() == 1 ? "Rank " : "Ranks ");
  for (size_t i = 0; i < missing.size(); ++i) m << (i ? ", " : "") << missing[i];
  m << " failed to pass monitoredBarrier in " << limit.count() << " ms";
  Fail(What("monitored_barrier") + ": " + m.str());
}

c10::intrusive_ptr<c10d::Work> BackendInfiniCCL::barrier(
    const c10d::BarrierOptions &opts) {
  std::vector<at::Tensor> none;
  return Submit("barrier", "infiniccl:barrier", OpType::BARRIER, none, none, opts,
                [this](void *) {
                  int one = 1;
                  Check(infinicclAllReduce(&one, &one, 1, infinicclInt32, infinicclSum,
                                           comm_, nullptr));
                });
}

int BackendInfiniCCL::Root(int64_t root, const char *what) {
  if (root < 0 || root >= size_) {
    Fail(std::string(what) + ": root " + std::to_string(root) +
         " is not a rank of the group (size " + std::to_string(size_) + ")");
  }
  return static_cast<int>(root);
}

void BackendInfiniCCL::NonEmpty(const std::vector<at::Tensor> &tensors, const char *what) {
  if (tensors.empty()) Fail(std::string(what) + ": requires non-empty tensor list");
}

void BackendInfiniCCL::RootTensor(const std::vector<at::Tensor> &tensors, int64_t root_tensor,
                                  const char *what) {
  NonEmpty(tensors, what);
  if (root_tensor < 0 || root_tensor >= static_cast<int64_t>(tensors.size())) {
    Fail(std::string(what) + ": invalid root tensor: " + std::to_string(root_tensor) +
         " (the list has " + std::to_string(tensors.size()) + ")");
  }
}

void BackendInfiniCCL::CheckList(const std::vector<at::Tensor> &lst,
                                 const at::Tensor &like, const char *what) {
  if ((int)lst.size() != size_) {
    Fail(std::string(what) + ": " + std::to_string(lst.size()) +
         " tensors for a group of " + std::to_string(size_));
  }
  for (const auto &t : lst) {
    if (t.scalar_type() != like.scalar_type() || t.numel() != like.numel()) {
      Fail(std::string(what) +
           ": the tensors of the list differ from the other tensor in "
           "type or number of elements");
    }
  }
}

std::vector<at::Tensor> BackendInfiniCCL::Split(const at::Tensor &t,
                                                const std::vector<int64_t> &splits,
                                                const char *what) {
  int64_t rows = t.dim() == 0 ? 1 : t.size(0);
  std::vector<int64_t> s = splits;
  if (s.empty()) {
    if (rows % size_) {
      Fail(std::string("all_to_all_single: ") + what + " has " + std::to_string(rows) +
           " rows, not a multiple of the group size, and no split sizes");
    }
    s.assign(size_, rows / size_);
  }
  int64_t sum = 0;
  for (auto v : s) sum += v < 0 ? rows + 1 : v;
  if ((int)s.size() != size_ || sum != rows) {
    Fail(std::string("all_to_all_single: the ") + what +
         " split sizes do not split its " + std::to_string(rows) + " rows among " +
         std::to_string(size_) + " ranks");
  }
  return t.dim() == 0 ? std::vector<at::Tensor>{t} : t.split_with_sizes(s);
}

at::Tensor BackendInfiniCCL::Flatten(const std::vector<at::Tensor> &ts) {
  std::vector<at::Tensor> flat;
  flat.reserve(ts.size());
  for (const auto &t : ts) flat.push_back(t.reshape(-1));
  return at::cat(flat);
}

void BackendInfiniCCL::Unflatten(const at::Tensor &flat,
                                 const std::vector<at::Tensor> &outs) {
  int64_t off = 0;
  for (const auto &o : outs) {
    int64_t n = o.numel();
    o.copy_(flat.narrow(0, off, n).view(o.sizes()));
    off += n;
  }
}

void BackendInfiniCCL::GatherInto(const at::Tensor &output, const at::Tensor &input,
                                  void *stream) {
  auto src = input.contiguous();
  Output o(output);
  Buf b = Raw(src);
  Check(infinicclAllGather(b.ptr, o.t.data_ptr(), b.count, (infinicclDataType_t)b.type,
                           comm_, stream));
}

void BackendInfiniCCL::ScatterFrom(const at::Tensor &output, const at::Tensor &flat,
                                   const c10d::ReduceOp &rop, void *stream) {
  Output o(output);
  int op;
  Buf in = Reduced(flat, rop, &op);
  Buf out = Reduced(o.t, rop, &op);
  Check(infinicclReduceScatter(in.ptr, out.ptr, out.count, (infinicclDataType_t)out.type,
                               (infinicclRedOp_t)op, comm_, stream));
}

}  // namespace infiniccl_c10d
#pragma GCC visibility pop
