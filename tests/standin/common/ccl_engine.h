// The stand-in CCLs' collectives over a Clique (standin.h): every rank's
// contribution is exchanged, and each rank computes its own result in rank
// order. Buffers are host memory (the stand-in runtimes' "device" memory).
// Each call runs in its stream's order (OnStream): at once when the stream
// is idle, else when the stream reaches it (behind a host function that
// holds it, say).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "standin.h"

namespace standin {

enum class Join { kOk, kTimeout, kSpansHosts };

// A communicator's collective start: every rank posts its host name. With
// ICCL_STANDIN_CCL_ONE_NODE=1 the stand-in CCL reaches only the ranks of one
// host (as a CCL without a network between nodes would), and a clique
// whose ranks name different hosts fails on every rank (kSpansHosts, the
// clique's files removed): what makes the library take the two-level path
// (its CCL inside each node, MPI between) on emulated nodes, whose host
// names differ (tests/nodes/run_on_nodes.sh: a UTS namespace per node).
inline Join JoinClique(Clique &c) {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  std::vector<std::vector<char>> all;
  if (!c.Exchange(host, std::strlen(host), &all)) return Join::kTimeout;
  const char *one = std::getenv("ICCL_STANDIN_CCL_ONE_NODE");
  if (one == nullptr || std::string(one) != "1") return Join::kOk;
  for (const std::vector<char> &h : all) {
    if (std::string(h.begin(), h.end()) != host) {
      c.Finish(true);
      return Join::kSpansHosts;
    }
  }
  return Join::kOk;
}

// Runs `body` in `stream`'s order through the runtime stand-in's
// `enqueue(stream, fn, arg)` (1: ran at once; 0: queued; -1: unknown
// stream). At once, its result is the call's; queued, the call returns `ok`
// and a failure when the stream gets there becomes `*async_error` (the
// first one is kept), which the CCL's GetCommAsyncError reports.
template <typename Result, typename StreamT>
Result OnStream(int (*enqueue)(StreamT, void (*)(void *), void *), StreamT stream,
                std::function<Result()> body, std::atomic<int> *async_error, Result ok,
                Result bad_stream) {
  struct Task {
    std::function<Result()> body;
    std::atomic<int> *async_error;
    Result ok, result;
  };
  static thread_local Task *t_submitting = nullptr;  // run here, at once
  auto *task = new Task{std::move(body), async_error, ok, ok};
  t_submitting = task;
  const int ran = enqueue(
      stream,
      [](void *p) {
        auto *t = static_cast<Task *>(p);
        const Result r = t->body();
        if (t == t_submitting) {
          t->result = r;
          return;
        }
        int expected = static_cast<int>(t->ok);
        if (r != t->ok) t->async_error->compare_exchange_strong(expected, static_cast<int>(r));
        delete t;
      },
      task);
  t_submitting = nullptr;
  if (ran == 0) return ok;
  const Result r = ran > 0 ? task->result : bad_stream;
  delete task;
  return r;
}

// Each returns false when the exchange failed (timeout, I/O) or the ranks
// disagree on the sizes.
// A stand-in CCL communicator: its clique, the first failure of a call
// that ran queued (the CCL's GetCommAsyncError), and whether it was
// destroyed. The handle holds it through `self`; work still queued on a
// stream holds it too (OnComm), so destroying it with calls queued is safe
// and they fail instead of running.
struct CommState {
  std::unique_ptr<Clique> clique;
  std::atomic<int> async_error{0};
  std::atomic<bool> destroyed{false};
  std::shared_ptr<CommState> self;

  // Destroy or abort: a last collective exchange or not (Clique::Finish),
  // then the handle's reference goes (freed unless queued work holds it).
  static void Destroy(CommState *c, bool collective) {
    c->destroyed = true;
    c->clique->Finish(collective);
    const std::shared_ptr<CommState> last = std::move(c->self);
  }
};

// A communicator of type `C` (a CommState) on a new clique; its caller
// joins it (JoinClique) and, once joined, sets `self`.
template <typename C>
std::shared_ptr<C> NewComm(const std::string &name, int rank, int size) {
  auto c = std::make_shared<C>();
  c->clique = std::make_unique<Clique>(name, rank, size);
  return c;
}

// OnStream for a call of communicator `c`: `gone` when it was destroyed
// before the stream reached the call.
template <typename Result, typename StreamT>
Result OnComm(CommState *c, int (*enqueue)(StreamT, void (*)(void *), void *), StreamT stream,
              std::function<Result()> body, Result ok, Result bad_stream, Result gone) {
  std::shared_ptr<CommState> keep = c->self;
  return OnStream<Result, StreamT>(
      enqueue, stream,
      [keep, body = std::move(body), gone] { return keep->destroyed ? gone : body(); },
      &c->async_error, ok, bad_stream);
}

inline bool CclAllReduce(Clique &c, const void *s, void *r, size_t n, Elem e, Op op) {
  const size_t bytes = n * ElemSize(e);
  std::vector<std::vector<char>> all;
  if (!c.Exchange(s, bytes, &all)) return false;
  for (auto &v : all)
    if (v.size() != bytes) return false;
  std::vector<char> acc = all[0];
  for (int q = 1; q < c.size(); ++q) ReduceInto(e, op, acc.data(), all[q].data(), n);
  if (bytes) std::memcpy(r, acc.data(), bytes);
  return true;
}

inline bool CclReduce(Clique &c, const void *s, void *r, size_t n, Elem e, Op op, int root) {
  const size_t bytes = n * ElemSize(e);
  std::vector<std::vector<char>> all;
  if (!c.Exchange(s, bytes, &all)) return false;
  for (auto &v : all)
    if (v.size() != bytes) return false;
  if (c.rank() != root) return true;
  std::vector<char> acc = all[0];
  for (int q = 1; q < c.size(); ++q) ReduceInto(e, op, acc.data(), all[q].data(), n);
  if (bytes) std::memcpy(r, acc.data(), bytes);
  return true;
}

inline bool CclBroadcast(Clique &c, const void *s, void *r, size_t n, Elem e, int root) {
  const size_t bytes = n * ElemSize(e);
  const bool me = c.rank() == root;
  std::vector<std::vector<char>> all;
  if (!c.Exchange(me ? s : nullptr, me ? bytes : 0, &all)) return false;
  if (all[root].size() != bytes) return false;
  if (bytes) std::memcpy(r, all[root].data(), bytes);
  return true;
}

inline bool CclAllGather(Clique &c, const void *s, void *r, size_t n, Elem e) {
  const size_t bytes = n * ElemSize(e);
  std::vector<std::vector<char>> all;
  if (!c.Exchange(s, bytes, &all)) return false;
  for (int q = 0; q < c.size(); ++q) {
    if (all[q].size() != bytes) return false;
    if (bytes) std::memcpy(static_cast<char *>(r) + q * bytes, all[q].data(), bytes);
  }
  return true;
}

// `n`: elements received per rank.
inline bool CclReduceScatter(Clique &c, const void *s, void *r, size_t n, Elem e, Op op) {
  const size_t block = n * ElemSize(e);
  std::vector<std::vector<char>> all;
  if (!c.Exchange(s, block * c.size(), &all)) return false;
  for (auto &v : all)
    if (v.size() != block * c.size()) return false;
  std::vector<char> acc(all[0].begin() + c.rank() * block,
                        all[0].begin() + (c.rank() + 1) * block);
  for (int q = 1; q < c.size(); ++q)
    ReduceInto(e, op, acc.data(), all[q].data() + c.rank() * block, n);
  if (block) std::memcpy(r, acc.data(), block);
  return true;
}

}  // namespace standin
