// Shared by the stand-in vendor libraries (tests only): call counters, the
// last error message, element-wise reductions, streams and events over host
// threads, and a "clique" of processes on one machine that exchange data
// through files in /dev/shm, which is how the stand-in CCLs (HCCL, CNCL) run
// real collectives over host memory.
//
// Nothing here is the vendors' code or behaviour beyond their documented
// signatures: it is what our adapters need to run the conformance matrix.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace standin {

// Counts of calls by function name.
class Counters {
 public:
  void Add(const char *name) {
    std::lock_guard<std::mutex> lock(mu_);
    ++counts_[name];
  }
  long Get(const char *name) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = counts_.find(name);
    return it == counts_.end() ? 0 : it->second;
  }
  void Reset() {
    std::lock_guard<std::mutex> lock(mu_);
    counts_.clear();
  }

 private:
  std::mutex mu_;
  std::map<std::string, long> counts_;
};

// Physical device count (ICCL_STANDIN_DEVICES, default 8) seen through the
// vendor's visibility variable (a comma-separated list of physical ids):
// the visible ids in order.
inline std::vector<int> VisibleDevices(const char *visible_var) {
  int physical = 8;
  if (const char *v = std::getenv("ICCL_STANDIN_DEVICES")) physical = std::atoi(v);
  std::vector<int> out;
  const char *list = std::getenv(visible_var);
  if (list == nullptr) {
    for (int i = 0; i < physical; ++i) out.push_back(i);
    return out;
  }
  std::string s(list);
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(',', start);
    if (end == std::string::npos) end = s.size();
    const std::string item = s.substr(start, end - start);
    char *e = nullptr;
    const long id = std::strtol(item.c_str(), &e, 10);
    // Like CUDA's rule: the list stops at the first invalid entry.
    if (item.empty() || *e != '\0' || id < 0 || id >= physical) break;
    out.push_back(static_cast<int>(id));
    start = end + 1;
  }
  return out;
}

// ---- streams and events ----------------------------------------------------
// A stand-in stream (an ACL stream, a CNRT queue): work runs in the order it
// was submitted. Work submitted to an idle stream runs at once on the
// caller's thread, so copies are complete when the call returns, as they
// always were in the stand-ins. Once something on the stream waits (a host
// function, a wait for an event not yet reached), what follows it goes to the
// stream's own thread, which runs it in order: a call on a held stream
// returns at once and its work runs when the stream is released, as on a
// device. Host functions always run on that thread (ACL's
// aclrtLaunchHostFunc and CNRT's cnrtInvokeHostFunc run them on a runtime
// thread, never on the caller's).
class Stream {
 public:
  Stream() = default;
  Stream(const Stream &) = delete;
  Stream &operator=(const Stream &) = delete;
  ~Stream() { Stop(); }

  // Runs `fn` now when `inline_ok` and the stream is idle; queues it
  // otherwise. True when it ran here.
  bool Submit(std::function<void()> fn, bool inline_ok) {
    std::unique_lock<std::mutex> lock(mu_);
    if (inline_ok && !busy_ && queue_.empty()) {
      RunUnlocked(lock, fn);
      return true;
    }
    queue_.push_back(std::move(fn));
    if (inline_ok) ++held_;
    if (!worker_.joinable()) worker_ = std::thread([this] { Run(); });
    cv_.notify_all();
    return false;
  }
  // Blocks until everything submitted has run.
  void Synchronize() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return queue_.empty() && !busy_; });
  }
  // How much work (copies, event records, CCL calls; not host functions or
  // event waits) found the stream busy and ran later, on its thread.
  long held() {
    std::lock_guard<std::mutex> lock(mu_);
    return held_;
  }
  // Finishes the work, then ends the stream's thread.
  void Stop() {
    Synchronize();
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (worker_.joinable()) worker_.join();
  }

 private:
  void Run() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return (!queue_.empty() && !busy_) || (stop_ && queue_.empty()); });
      if (queue_.empty()) return;
      std::function<void()> fn = std::move(queue_.front());
      queue_.pop_front();
      RunUnlocked(lock, fn);
    }
  }
  // Runs `fn` with the stream marked busy and its lock released.
  void RunUnlocked(std::unique_lock<std::mutex> &lock, const std::function<void()> &fn) {
    busy_ = true;
    lock.unlock();
    fn();
    lock.lock();
    busy_ = false;
    cv_.notify_all();
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool busy_ = false;  // something is running (inline or on the thread)
  bool stop_ = false;
  long held_ = 0;
  std::thread worker_;
};

// An event (ACL event, CNRT notifier): a record marks the end of what its
// stream holds at that moment; it completes when the stream gets there.
// Shared by the closures that complete it or wait for it.
class Event : public std::enable_shared_from_this<Event> {
 public:
  void RecordOn(Stream &stream) {
    uint64_t g;
    {
      std::lock_guard<std::mutex> lock(mu_);
      g = ++recorded_;
    }
    auto self = shared_from_this();
    stream.Submit([self, g] { self->Complete(g); }, true);
  }
  // Blocks until the last record has completed (at once if never recorded).
  void Synchronize() {
    std::unique_lock<std::mutex> lock(mu_);
    const uint64_t target = recorded_;
    cv_.wait(lock, [&] { return completed_ >= target; });
  }
  // Work submitted to `stream` after this waits for the last record.
  void WaitOn(Stream &stream) {
    uint64_t target;
    {
      std::lock_guard<std::mutex> lock(mu_);
      target = recorded_;
      if (completed_ >= target) return;  // nothing to wait for
    }
    auto self = shared_from_this();
    stream.Submit(
        [self, target] {
          std::unique_lock<std::mutex> lock(self->mu_);
          self->cv_.wait(lock, [&] { return self->completed_ >= target; });
        },
        false);
  }

 private:
  void Complete(uint64_t g) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (g > completed_) completed_ = g;
    }
    cv_.notify_all();
  }
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t recorded_ = 0, completed_ = 0;
};

// What both stand-in runtimes (ACL, CNRT) keep: device allocations (host
// memory they hand out as "device" memory), pinned host allocations, the
// null stream and the streams (queues) and events (notifiers) they created,
// by handle. Not locked: each runtime holds its own lock around it, and
// waits (stream work, synchronisation) happen outside that lock.
class Registry {
 public:
  struct Alloc {
    size_t bytes;
    int device;
  };
  // The device allocation holding [p, p + n) (n == 0: holding p), or nullptr.
  const Alloc *FindDevice(const void *p, size_t n) const {
    const char *c = static_cast<const char *>(p);
    auto it = device_allocs_.upper_bound(c);
    if (it == device_allocs_.begin()) return nullptr;
    --it;
    if (c >= it->first && c + n <= it->first + it->second.bytes &&
        (n > 0 || c < it->first + it->second.bytes)) {
      return &it->second;
    }
    return nullptr;
  }
  void AddDevice(void *p, size_t bytes, int device) {
    device_allocs_[static_cast<const char *>(p)] = {bytes, device};
  }
  // False unless `p` is the base of a device allocation.
  bool RemoveDevice(void *p) { return device_allocs_.erase(static_cast<const char *>(p)) > 0; }
  void AddHost(void *p) { host_allocs_.insert(p); }
  bool RemoveHost(void *p) { return host_allocs_.erase(p) > 0; }
  bool IsHost(const void *p) const { return host_allocs_.count(const_cast<void *>(p)) > 0; }

  // The stream behind a handle (nullptr: the null stream), or nullptr.
  Stream *FindStream(const void *handle) {
    if (handle == nullptr) return &null_stream_;
    auto it = streams_.find(handle);
    return it == streams_.end() ? nullptr : it->second.get();
  }
  void *AddStream() {
    auto q = std::make_unique<Stream>();
    void *handle = q.get();
    streams_[handle] = std::move(q);
    return handle;
  }
  // The stream, no longer known by its handle (nullptr if it was not).
  std::unique_ptr<Stream> TakeStream(const void *handle) {
    auto it = streams_.find(handle);
    if (it == streams_.end()) return nullptr;
    std::unique_ptr<Stream> q = std::move(it->second);
    streams_.erase(it);
    return q;
  }
  std::shared_ptr<Event> FindEvent(const void *handle) const {
    auto it = events_.find(handle);
    return it == events_.end() ? nullptr : it->second;
  }
  void *AddEvent() {
    auto e = std::make_shared<Event>();
    void *handle = e.get();
    events_[handle] = std::move(e);
    return handle;
  }
  bool RemoveEvent(const void *handle) { return events_.erase(handle) > 0; }

 private:
  std::map<const char *, Alloc> device_allocs_;  // base -> size, device
  std::set<void *> host_allocs_;
  Stream null_stream_;
  std::map<const void *, std::unique_ptr<Stream>> streams_;
  std::map<const void *, std::shared_ptr<Event>> events_;
};

// The stand-in runtimes' hooks for their CCLs and the tests
// (iccl_standin_*_enqueue, iccl_standin_*_held): `fn(arg)` in the order of
// the stream behind `handle` (1: ran at once; 0: queued; -1: unknown
// stream), and how much work on that stream waited (-1: unknown).
inline int EnqueueOn(std::mutex &mu, Registry &r, const void *handle, void (*fn)(void *),
                     void *arg) {
  Stream *q;
  {
    std::lock_guard<std::mutex> lock(mu);
    q = r.FindStream(handle);
  }
  if (q == nullptr) return -1;
  return q->Submit([fn, arg] { fn(arg); }, true) ? 1 : 0;
}
inline long HeldOn(std::mutex &mu, Registry &r, const void *handle) {
  std::lock_guard<std::mutex> lock(mu);
  Stream *q = r.FindStream(handle);
  return q != nullptr ? q->held() : -1;
}

// ---- elements and reductions ----------------------------------------------
enum class Elem { kI8, kU8, kI16, kU16, kI32, kU32, kI64, kU64, kF16, kBF16, kF32, kF64 };
enum class Op { kSum, kProd, kMax, kMin };

inline size_t ElemSize(Elem e) {
  switch (e) {
    case Elem::kI8:
    case Elem::kU8: return 1;
    case Elem::kI16:
    case Elem::kU16:
    case Elem::kF16:
    case Elem::kBF16: return 2;
    case Elem::kI32:
    case Elem::kU32:
    case Elem::kF32: return 4;
    default: return 8;
  }
}

inline float HalfToFloat(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16;
  int exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      exp = 1;
      while ((mant & 0x400u) == 0) {
        mant <<= 1;
        --exp;
      }
      mant &= 0x3ffu;
      bits = sign | (static_cast<uint32_t>(exp + 112) << 23) | (mant << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | (static_cast<uint32_t>(exp + 112) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Round to nearest, ties to even.
inline uint16_t FloatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0));
  if (absx >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow
  if (absx < 0x38800000u) {  // subnormal or zero in half
    const float a = std::fabs(f) * 16777216.0f;  // 2^24: units of the smallest half
    const float r = std::nearbyint(a);            // default rounding: ties to even
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(r));
  }
  uint32_t mant = absx & 0x7fffffu;
  uint32_t exp = (absx >> 23) - 112;
  uint32_t h = (exp << 10) | (mant >> 13);
  const uint32_t rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
  return static_cast<uint16_t>(sign | h);
}

inline float BF16ToFloat(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline uint16_t FloatToBF16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  const uint32_t lsb = (x >> 16) & 1u;
  x += 0x7fffu + lsb;
  return static_cast<uint16_t>(x >> 16);
}

template <typename T>
T Apply(Op op, T a, T b) {
  switch (op) {
    case Op::kSum: return static_cast<T>(a + b);
    case Op::kProd: return static_cast<T>(a * b);
    case Op::kMax: return a > b ? a : b;
    case Op::kMin: return a < b ? a : b;
  }
  return a;
}

template <typename T>
void ReduceTyped(Op op, void *acc, const void *x, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    T a, b;
    std::memcpy(&a, static_cast<char *>(acc) + i * sizeof(T), sizeof(T));
    std::memcpy(&b, static_cast<const char *>(x) + i * sizeof(T), sizeof(T));
    a = Apply(op, a, b);
    std::memcpy(static_cast<char *>(acc) + i * sizeof(T), &a, sizeof(T));
  }
}

// acc[i] = acc[i] op x[i]; 16-bit floats through float, rounded once per step.
inline void ReduceInto(Elem e, Op op, void *acc, const void *x, size_t n) {
  switch (e) {
    case Elem::kI8: return ReduceTyped<int8_t>(op, acc, x, n);
    case Elem::kU8: return ReduceTyped<uint8_t>(op, acc, x, n);
    case Elem::kI16: return ReduceTyped<int16_t>(op, acc, x, n);
    case Elem::kU16: return ReduceTyped<uint16_t>(op, acc, x, n);
    case Elem::kI32: return ReduceTyped<int32_t>(op, acc, x, n);
    case Elem::kU32: return ReduceTyped<uint32_t>(op, acc, x, n);
    case Elem::kI64: return ReduceTyped<int64_t>(op, acc, x, n);
    case Elem::kU64: return ReduceTyped<uint64_t>(op, acc, x, n);
    case Elem::kF32: return ReduceTyped<float>(op, acc, x, n);
    case Elem::kF64: return ReduceTyped<double>(op, acc, x, n);
    case Elem::kF16:
    case Elem::kBF16: {
      const bool half = e == Elem::kF16;
      for (size_t i = 0; i < n; ++i) {
        uint16_t a, b;
        std::memcpy(&a, static_cast<char *>(acc) + 2 * i, 2);
        std::memcpy(&b, static_cast<const char *>(x) + 2 * i, 2);
        const float r = Apply(op, half ? HalfToFloat(a) : BF16ToFloat(a),
                              half ? HalfToFloat(b) : BF16ToFloat(b));
        a = half ? FloatToHalf(r) : FloatToBF16(r);
        std::memcpy(static_cast<char *>(acc) + 2 * i, &a, 2);
      }
      return;
    }
  }
}

// ---- the clique -----------------------------------------------------------
inline std::string ShmDir() {
  struct stat st;
  return stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm" : "/tmp";
}

// A fresh clique name: directory, pid, a per-process counter and the time.
inline std::string NewCliqueName() {
  static std::atomic<int> counter{0};
  const long ns = static_cast<long>(
      std::chrono::steady_clock::now().time_since_epoch().count() % 1000000000L);
  char buf[96];
  std::snprintf(buf, sizeof buf, "%s/icclsi-%d-%d-%ld", ShmDir().c_str(),
                static_cast<int>(getpid()), counter.fetch_add(1), ns);
  return buf;
}

inline double TimeoutSeconds() {
  const char *v = std::getenv("ICCL_STANDIN_TIMEOUT_S");
  return v ? std::atof(v) : 120.0;
}

inline bool WriteFileAtomic(const std::string &path, const void *data, size_t bytes) {
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0600);
  if (fd < 0) return false;
  const char *p = static_cast<const char *>(data);
  size_t left = bytes;
  while (left > 0) {
    const ssize_t w = ::write(fd, p, left);
    if (w <= 0) {
      ::close(fd);
      return false;
    }
    p += w;
    left -= static_cast<size_t>(w);
  }
  ::close(fd);
  return ::rename(tmp.c_str(), path.c_str()) == 0;
}

// Waits for `path` to exist (or the timeout), then reads it whole.
inline bool WaitAndRead(const std::string &path, std::vector<char> *out) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(TimeoutSeconds());
  int fd;
  int spins = 0;
  while ((fd = ::open(path.c_str(), O_RDONLY)) < 0) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    if (++spins < 100) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
  struct stat st;
  fstat(fd, &st);
  out->resize(static_cast<size_t>(st.st_size));
  size_t got = 0;
  while (got < out->size()) {
    const ssize_t r = ::read(fd, out->data() + got, out->size() - got);
    if (r <= 0) break;
    got += static_cast<size_t>(r);
  }
  ::close(fd);
  return got == out->size();
}

class Clique {
 public:
  Clique(std::string name, int rank, int size)
      : name_(std::move(name)), rank_(rank), size_(size), sends_(size, 0), recvs_(size, 0) {}
  int rank() const { return rank_; }
  int size() const { return size_; }

  // Every rank's `bytes` from `mine`, in rank order (an all-gather of
  // variable sizes). Collective; false on timeout or I/O failure.
  bool Exchange(const void *mine, size_t bytes, std::vector<std::vector<char>> *all) {
    const uint64_t k = ++op_;
    if (!WriteFileAtomic(OpPath(k, rank_), mine, bytes)) return false;
    all->assign(size_, {});
    for (int r = 0; r < size_; ++r) {
      if (!WaitAndRead(OpPath(k, r), &(*all)[r])) return false;
    }
    // Every rank posted op k, so every rank finished reading op k - 1.
    if (k > 1) ::unlink(OpPath(k - 1, rank_).c_str());
    return true;
  }
  // Point to point: sends never wait; a receive waits for the matching send.
  bool Send(int peer, const void *data, size_t bytes) {
    return WriteFileAtomic(P2pPath(rank_, peer, sends_[peer]++), data, bytes);
  }
  bool Recv(int peer, void *data, size_t bytes) {
    const std::string path = P2pPath(peer, rank_, recvs_[peer]++);
    std::vector<char> got;
    if (!WaitAndRead(path, &got)) return false;
    ::unlink(path.c_str());
    if (got.size() != bytes) return false;
    std::memcpy(data, got.data(), bytes);
    return true;
  }
  // Collective end: one last exchange; then each rank appends a byte to
  // "<name>.left" and the one that makes it `size` bytes long (everyone has
  // read the last exchange) removes the last files. Not collective (an
  // abort): only this rank's files go.
  void Finish(bool collective) {
    std::vector<std::vector<char>> all;
    if (collective && Exchange(nullptr, 0, &all)) {
      const std::string left = name_ + ".left";
      const int fd = ::open(left.c_str(), O_CREAT | O_WRONLY | O_APPEND, 0600);
      if (fd >= 0) {
        const char one = 1;
        struct stat st {};
        const bool wrote = ::write(fd, &one, 1) == 1;
        fstat(fd, &st);
        ::close(fd);
        if (wrote && st.st_size == size_) {
          for (int r = 0; r < size_; ++r) ::unlink(OpPath(op_, r).c_str());
          ::unlink(left.c_str());
        }
      }
      return;
    }
    if (op_ > 0) ::unlink(OpPath(op_, rank_).c_str());
  }

 private:
  std::string OpPath(uint64_t k, int r) const {
    return name_ + ".c" + std::to_string(k) + "." + std::to_string(r);
  }
  std::string P2pPath(int from, int to, uint64_t n) const {
    return name_ + ".p" + std::to_string(from) + "-" + std::to_string(to) + "." +
           std::to_string(n);
  }
  std::string name_;
  int rank_, size_;
  uint64_t op_ = 0;
  std::vector<uint64_t> sends_, recvs_;
};

}  // namespace standin
