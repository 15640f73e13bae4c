#include "overlap.h"

#include <algorithm>
#include <cstddef>
#include <vector>

#include "errors.h"

namespace bench {
namespace {

// The loop's buffers, streams and events, released however the run ends.
class OverlapSetup {
 public:
  OverlapSetup(const Env &env, const Layout &layout) : env_(env), dev_(*env.device) {
    const size_t bytes = layout.count * env.opt->dtype->size;
    compute_ = dev_.NewStream();
    comm_ = dev_.NewStream();
    for (int b = 0; b < env.opt->buckets; ++b) {
      send_.emplace_back(&dev_, bytes);
      recv_.emplace_back(&dev_, bytes);
      events_.push_back(dev_.NewEvent());
    }
  }
  ~OverlapSetup() {
    // Nothing may still run on the buffers (an exception left it midway).
    try {
      if (compute_) dev_.SynchronizeStream(compute_);
      if (comm_) dev_.SynchronizeStream(comm_);
    } catch (...) {
    }
    for (void *e : events_) dev_.DeleteEvent(e);
    if (comm_) dev_.DeleteStream(comm_);
    if (compute_) dev_.DeleteStream(compute_);
  }
  OverlapSetup(const OverlapSetup &) = delete;
  OverlapSetup &operator=(const OverlapSetup &) = delete;

  void *compute() const { return compute_; }
  void *comm() const { return comm_; }
  void *send(int b) const { return send_[static_cast<size_t>(b)].data(); }
  void *recv(int b) const { return recv_[static_cast<size_t>(b)].data(); }
  void *event(int b) const { return events_[static_cast<size_t>(b)]; }

 private:
  const Env &env_;
  Device &dev_;
  void *compute_ = nullptr, *comm_ = nullptr;
  std::vector<Buffer> send_, recv_;
  std::vector<void *> events_;
};

enum class Part { kCompute, kComm, kBoth };

void AllReduce(const Env &env, const Layout &layout, const void *send, void *recv,
               void *stream) {
  CheckIccl(infinicclAllReduce(send, recv, layout.count, env.opt->dtype->id,
                               env.opt->op->id, env.comm, stream),
            "infinicclAllReduce", env.comm);
}

// One loop of `part`; `produce` (validation only): after each kernel, the
// copy that writes the bucket's input, on the compute stream.
void Loop(const Env &env, const Layout &layout, const OverlapSetup &s, Part part,
          const void *produce = nullptr) {
  Device &dev = *env.device;
  const Options &o = *env.opt;
  const unsigned us = static_cast<unsigned>(o.kernel_us);
  for (int b = 0; b < o.buckets; ++b) {
    if (part != Part::kComm) {
      dev.Kernel(s.compute(), us);
      if (produce)
        dev.CopyFromHostOn(s.compute(), s.send(b), produce, layout.count * o.dtype->size);
    }
    if (part == Part::kBoth) {
      dev.RecordEvent(s.event(b), s.compute());
      dev.WaitEvent(s.comm(), s.event(b));
    }
    if (part != Part::kCompute) AllReduce(env, layout, s.send(b), s.recv(b), s.comm());
  }
  if (part != Part::kComm) dev.SynchronizeStream(s.compute());
  if (part != Part::kCompute) dev.SynchronizeStream(s.comm());
}

double TimedLoop(const Env &env, const Layout &layout, const OverlapSetup &s, Part part) {
  CheckMpi(MPI_Barrier(env.mpi_comm), "MPI_Barrier");
  const double t0 = MPI_Wtime();
  Loop(env, layout, s, part);
  return MPI_Wtime() - t0;
}

}  // namespace

std::string OverlapUnavailable(const Env &env) {
  return env.device->OverlapUnsupported();
}

double OverlapEfficiency(const Result &r) {
  const double lo = std::min(r.compute_us, r.comm_us);
  return lo > 0 ? (r.compute_us + r.comm_us - r.both_us) / lo : 0.0;
}

void RunOverlap(const Env &env, bool validate, Result *res) {
  const Options &o = *env.opt;
  const Layout &layout = res->layout;
  const Expectation expect{Collective::kAllReduce, &layout, o.dtype, o.op->id,
                           env.rank,               env.nranks, o.root};
  OverlapSetup s(env, layout);
  Device &dev = *env.device;
  const size_t bytes = layout.count * o.dtype->size;
  std::vector<unsigned char> input(bytes), host(bytes);
  if (bytes) FillInput(expect, input.data(), layout.count);
  for (int b = 0; b < o.buckets; ++b) dev.CopyFromHost(s.send(b), input.data(), bytes);
  dev.Synchronize();

  CheckMpi(MPI_Barrier(env.mpi_comm), "MPI_Barrier");
  for (int i = 0; i < o.warmup; ++i) Loop(env, layout, s, Part::kBoth);
  // The three parts interleaved, so a burst of load from elsewhere weighs
  // on all three alike.
  const size_t n = static_cast<size_t>(o.iters);
  std::vector<double> mine(3 * n), slowest(3 * n);
  for (size_t i = 0; i < n; ++i) {
    mine[i] = TimedLoop(env, layout, s, Part::kCompute);
    mine[n + i] = TimedLoop(env, layout, s, Part::kComm);
    mine[2 * n + i] = TimedLoop(env, layout, s, Part::kBoth);
  }
  CheckMpi(MPI_Allreduce(mine.data(), slowest.data(), static_cast<int>(3 * n), MPI_DOUBLE,
                         MPI_MAX, env.mpi_comm),
           "MPI_Allreduce (timing)");
  // Each part: the median over loops of the slowest rank's time. The
  // efficiency is a difference of two large times when one part dominates,
  // and a mean would carry a single loop slowed by load from elsewhere.
  double median[3];
  for (size_t k = 0; k < 3; ++k) {
    std::vector<double> v(slowest.begin() + static_cast<std::ptrdiff_t>(k * n),
                          slowest.begin() + static_cast<std::ptrdiff_t>((k + 1) * n));
    std::sort(v.begin(), v.end());
    median[k] = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  }
  res->compute_us = std::min(res->compute_us, median[0] * 1e6);
  res->comm_us = std::min(res->comm_us, median[1] * 1e6);
  res->both_us = std::min(res->both_us, median[2] * 1e6);
  res->time_us = res->both_us;

  if (!validate) return;
  // Every input and result poisoned; each kernel's copy writes its bucket.
  std::vector<unsigned char> poison(bytes);
  if (bytes) Poison(poison.data(), bytes);
  for (int b = 0; b < o.buckets; ++b) {
    dev.CopyFromHost(s.send(b), poison.data(), bytes);
    dev.CopyFromHost(s.recv(b), poison.data(), bytes);
  }
  dev.Synchronize();
  CheckMpi(MPI_Barrier(env.mpi_comm), "MPI_Barrier");
  Loop(env, layout, s, Part::kBoth, input.data());
  uint64_t wrong = 0;
  for (int b = 0; b < o.buckets; ++b) {
    dev.CopyToHost(host.data(), s.recv(b), bytes);
    dev.Synchronize();
    wrong += CountWrong(expect, host.data());
  }
  uint64_t total = 0;
  CheckMpi(MPI_Allreduce(&wrong, &total, 1, MPI_UINT64_T, MPI_SUM, env.mpi_comm),
           "MPI_Allreduce (validation)");
  res->wrong = total;
  res->validated = true;
}

}  // namespace bench
