#include "bootstrap/rendezvous.h"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>

#include "bootstrap/socket.h"
#include "bootstrap/unique_id.h"
#include "core/config.h"
#include "core/log.h"
#include "core/rank_list.h"

namespace infiniccl::bootstrap {

namespace {

constexpr uint32_t kHelloMagic = 0x49434248;  // "ICBH"
constexpr int kHelloSeconds =
    30;  // a connected peer's hello, and the reply to it, at most

// The listeners of ids made by this process, by secret. A forked child
// closes its copies: only the process that made an id serves it.
struct Registry {
  std::mutex mutex;
  std::map<Secret, int> listeners;
};

Registry &Reg() {
  static Registry *r = [] {
    auto *reg = new Registry;
    pthread_atfork([] { Reg().mutex.lock(); }, [] { Reg().mutex.unlock(); },
                   [] {
                     Registry &g = Reg();
                     for (auto &kv : g.listeners) close(kv.second);
                     g.listeners.clear();
                     g.mutex.unlock();
                   });
    return reg;
  }();
  return *r;
}

Fd TakeListener(const Secret &s) {
  Registry &r = Reg();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.listeners.find(s);
  if (it == r.listeners.end()) return Fd();
  Fd fd(it->second);
  r.listeners.erase(it);
  return fd;
}

bool SameSecret(const unsigned char *a, const Secret &b) {
  unsigned char diff = 0;  // every byte compared: no early exit to time
  for (size_t i = 0; i < b.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

std::string Who() {
  char host[256] = "?";
  gethostname(host, sizeof host - 1);
  return std::string(host) + " pid " + std::to_string(getpid());
}

struct Arrival {
  Fd fd;  // invalid for the root's own rank
  int nranks = 0;
  int rank = 0;
  std::string who, blob;
};

std::string Reply(const Status &verdict) {
  std::string out;
  PutU32(&out, static_cast<uint32_t>(verdict.code()));
  PutBytes(&out, verdict.message());
  return out;
}

// The connections a Join kept: the root's to every other rank (peers[r],
// none at its own rank), another rank's to the root (peers[0]). The root
// is the process that made the id, whatever its rank. Each
// AllGather: every rank sends its bytes to the root, which answers every
// rank with a verdict and, on success, every rank's bytes in rank order.
// A failed round (a peer gone, the timeout) breaks the session: that
// round and every later one fail on every rank that can still be told.
class Session final : public Exchange {
 public:
  Session(int rank, int size, bool is_root, std::vector<Fd> peers, std::string root)
      : rank_(rank), size_(size), is_root_(is_root), peers_(std::move(peers)),
        root_(std::move(root)) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Status AllGather(const std::string &mine, std::vector<std::string> *all) override {
    if (!broken_.ok()) return broken_;
    const Status st = is_root_ ? Gather(mine, all) : Ask(mine, all);
    if (!st.ok()) broken_ = st;
    return st;
  }

 private:
  Status Gather(const std::string &mine, std::vector<std::string> *all) {
    const int timeout_sec = GlobalConfig().timeout_sec;
    const Deadline d = DeadlineAfter(timeout_sec);
    all->assign(static_cast<size_t>(size_), std::string());
    (*all)[static_cast<size_t>(rank_)] = mine;
    Status verdict = Status::Ok();
    for (int r = 0; r < size_ && verdict.ok(); ++r) {
      if (r == rank_) continue;
      const Status got = RecvBytes(peers_[static_cast<size_t>(r)].get(),
                                   Rendezvous::kMaxBlobBytes, d, &(*all)[static_cast<size_t>(r)]);
      if (!got.ok()) {
        verdict = MakeStatus(infinicclRemoteError,
                             "rank %d left while the communicator was being made: %s", r,
                             got.message().c_str());
      }
    }
    std::string reply = Reply(verdict);
    if (verdict.ok()) {
      for (const std::string &b : *all) PutBytes(&reply, b);
    }
    for (const Fd &p : peers_)
      if (p.valid()) (void)SendAll(p.get(), reply, DeadlineAfter(kHelloSeconds));
    return verdict;
  }

  Status Ask(const std::string &mine, std::vector<std::string> *all) {
    const int timeout_sec = GlobalConfig().timeout_sec;
    const int fd = peers_[0].get();
    std::string msg;
    PutBytes(&msg, mine);
    // The root may reach this round a timeout later than this rank.
    const Deadline d = timeout_sec > 0 ? DeadlineAfter(2 * timeout_sec) : Deadline::max();
    Status st = SendAll(fd, msg, d);
    unsigned char code[4];
    if (st.ok()) st = RecvAll(fd, code, sizeof code, d);
    std::string message;
    if (st.ok()) st = RecvBytes(fd, 1 << 20, d, &message);
    if (!st.ok()) {
      return MakeStatus(infinicclRemoteError,
                        "the bootstrap root at %s left while the communicator was being "
                        "made: %s",
                        root_.c_str(), st.message().c_str());
    }
    const auto result = static_cast<infinicclResult_t>(GetU32(code));
    if (result != infinicclSuccess) return Status(result, message);
    all->assign(static_cast<size_t>(size_), std::string());
    for (std::string &b : *all)
      INFINICCL_RETURN_IF_ERROR(RecvBytes(fd, Rendezvous::kMaxBlobBytes, d, &b));
    return Status::Ok();
  }

  int rank_, size_;
  bool is_root_;
  std::vector<Fd> peers_;
  std::string root_;
  Status broken_ = Status::Ok();
};

// A connected peer's hello; a refusal (wrong mark or secret) is returned
// as InvalidArgument, which the root sends back to that peer alone.
Status ReadHello(int fd, const Secret &secret, Deadline d, Arrival *a) {
  unsigned char head[4 + 32 + 4 + 4];
  INFINICCL_RETURN_IF_ERROR(RecvAll(fd, head, sizeof head, d));
  if (GetU32(head) != kHelloMagic) {
    return Status(infinicclInvalidArgument, "refused: not a bootstrap hello");
  }
  if (!SameSecret(head + 4, secret)) {
    return Status(infinicclInvalidArgument,
                  "refused by the root: the id's secret does not match (an id of another "
                  "infinicclGetUniqueId call, or altered on its way)");
  }
  a->nranks = static_cast<int>(GetU32(head + 36));
  a->rank = static_cast<int>(GetU32(head + 40));
  if (a->nranks < 1 || a->nranks > Rendezvous::kMaxRanks) {
    return Status(infinicclInvalidArgument, "refused: nranks out of range");
  }
  INFINICCL_RETURN_IF_ERROR(RecvBytes(fd, 1024, d, &a->who));
  return RecvBytes(fd, Rendezvous::kMaxBlobBytes, d, &a->blob);
}

// The root's verdict on who came: the same text reaches every rank.
Status Judge(const std::vector<Arrival> &in, bool timed_out, int timeout_sec) {
  int largest = 0;
  bool agree = true;
  for (const Arrival &a : in) {
    largest = std::max(largest, a.nranks);
    agree = agree && a.nranks == in.front().nranks;
  }
  std::vector<std::string> problems;
  if (!agree) {
    // By rank, as RanksByValue names them.
    std::vector<const Arrival *> by_rank;
    for (const Arrival &a : in) by_rank.push_back(&a);
    std::stable_sort(
        by_rank.begin(), by_rank.end(),
        [](const Arrival *x, const Arrival *y) { return x->rank < y->rank; });
    std::vector<std::string> labels;
    std::vector<int> names;
    for (const Arrival *a : by_rank) {
      labels.push_back("nranks=" + std::to_string(a->nranks));
      names.push_back(a->rank);
    }
    problems.push_back("the ranks disagree on nranks (" +
                       RanksByValue(labels, 8, &names) + ")");
  }
  std::vector<int> out_of_range;
  std::vector<int> count(static_cast<size_t>(largest), 0);
  for (const Arrival &a : in) {
    if (a.rank < 0 || a.rank >= a.nranks || a.rank >= largest) {
      out_of_range.push_back(a.rank);
    } else {
      ++count[static_cast<size_t>(a.rank)];
    }
  }
  if (!out_of_range.empty()) {
    std::sort(out_of_range.begin(), out_of_range.end());
    problems.push_back("rank " + RankList(out_of_range) + " out of range (nranks " +
                       std::to_string(in.front().nranks) + ")");
  }
  std::vector<int> twice, missing;
  for (int r = 0; r < largest; ++r) {
    if (count[static_cast<size_t>(r)] > 1) twice.push_back(r);
    if (count[static_cast<size_t>(r)] == 0) missing.push_back(r);
  }
  if (!twice.empty()) {
    std::string who;
    for (const Arrival &a : in) {
      if (std::find(twice.begin(), twice.end(), a.rank) != twice.end())
        who += (who.empty() ? "" : "; ") + a.who;
    }
    problems.push_back("rank " + RankList(twice) + " given by more than one process (" +
                       who + ")");
  }
  if (problems.empty() && missing.empty()) return Status::Ok();
  const std::string late = "rank " + RankList(missing) + " of " +
                           std::to_string(largest) + " did not join within " +
                           std::to_string(timeout_sec) + " s (INFINICCL_TIMEOUT_SEC)";
  if (!missing.empty() && !problems.empty())
    problems.push_back(timed_out ? late : "no process gave rank " + RankList(missing));
  if (!problems.empty()) {
    std::string text = "infinicclCommInitRank's arguments disagree across the ranks: ";
    for (size_t i = 0; i < problems.size(); ++i) text += (i ? "; " : "") + problems[i];
    return Status(infinicclInvalidUsage, text);
  }
  return Status(infinicclRemoteError, late);
}

Status Serve(Fd listener, const IdFields &f, int nranks, int rank,
             const std::string &blob, std::vector<std::string> *blobs,
             std::unique_ptr<Exchange> *session) {
  const int timeout_sec = GlobalConfig().timeout_sec;
  const Deadline deadline = DeadlineAfter(timeout_sec);
  std::vector<Arrival> in(1);
  in[0].nranks = nranks;
  in[0].rank = rank;
  in[0].who = Who() + " (the root)";
  in[0].blob = blob;
  size_t expected = static_cast<size_t>(nranks);
  bool timed_out = false;
  while (in.size() < expected) {
    Fd c;
    INFINICCL_RETURN_IF_ERROR(AcceptUntil(listener.get(), deadline, &c));
    if (!c.valid()) {
      timed_out = true;
      break;
    }
    Arrival a;
    const Status hello =
        ReadHello(c.get(), f.secret, Earlier(deadline, kHelloSeconds), &a);
    if (!hello.ok()) {
      INFINICCL_INFO("bootstrap root %s: a peer refused: %s", AddressText(f.root).c_str(),
                     hello.message().c_str());
      if (hello.code() == infinicclInvalidArgument)
        (void)SendAll(c.get(), Reply(hello), DeadlineAfter(1));
      continue;
    }
    a.fd = std::move(c);
    expected = std::max(expected, static_cast<size_t>(a.nranks));
    in.push_back(std::move(a));
  }
  listener.reset();  // the port closes: everyone expected came, or the time is up
  const Status verdict = Judge(in, timed_out, timeout_sec);
  std::string reply = Reply(verdict);
  if (verdict.ok()) {
    std::vector<const std::string *> ordered(static_cast<size_t>(nranks));
    for (const Arrival &a : in) ordered[static_cast<size_t>(a.rank)] = &a.blob;
    PutU32(&reply, static_cast<uint32_t>(nranks));
    for (const std::string *b : ordered) PutBytes(&reply, *b);
    blobs->clear();
    for (const std::string *b : ordered) blobs->push_back(*b);
  }
  // A peer that cannot be told fails by itself (its connection closes).
  // Each gets its own time to take the reply, past the joining's deadline.
  for (const Arrival &a : in)
    if (a.fd.valid()) (void)SendAll(a.fd.get(), reply, DeadlineAfter(kHelloSeconds));
  if (verdict.ok() && session != nullptr) {
    std::vector<Fd> peers(static_cast<size_t>(nranks));
    for (Arrival &a : in)
      if (a.fd.valid()) peers[static_cast<size_t>(a.rank)] = std::move(a.fd);
    session->reset(new Session(rank, nranks, true, std::move(peers), AddressText(f.root)));
  }
  return verdict;
}

Status Client(const IdFields &f, int nranks, int rank, const std::string &blob,
              std::vector<std::string> *blobs, std::unique_ptr<Exchange> *session) {
  const int timeout_sec = GlobalConfig().timeout_sec;
  const Deadline deadline = DeadlineAfter(timeout_sec);
  Fd s;
  INFINICCL_RETURN_IF_ERROR(ConnectRetrying(f.root, deadline, &s));
  std::string hello;
  PutU32(&hello, kHelloMagic);
  hello.append(reinterpret_cast<const char *>(f.secret.data()), f.secret.size());
  PutU32(&hello, static_cast<uint32_t>(nranks));
  PutU32(&hello, static_cast<uint32_t>(rank));
  PutBytes(&hello, Who());
  PutBytes(&hello, blob);
  INFINICCL_RETURN_IF_ERROR(SendAll(s.get(), hello, deadline));
  // The root's own timeout began when its process called Join, which may be
  // up to a timeout after this one: its verdict is awaited that much longer.
  const Deadline answer =
      timeout_sec > 0 ? deadline + std::chrono::seconds(timeout_sec) : Deadline::max();
  unsigned char code[4];
  Status st = RecvAll(s.get(), code, sizeof code, answer);
  std::string message;
  if (st.ok()) st = RecvBytes(s.get(), 1 << 20, answer, &message);
  if (!st.ok()) {
    return MakeStatus(infinicclRemoteError,
                      "the bootstrap root at %s gave no verdict: %s",
                      AddressText(f.root).c_str(), st.message().c_str());
  }
  const auto result = static_cast<infinicclResult_t>(GetU32(code));
  if (result != infinicclSuccess) return Status(result, message);
  unsigned char n[4];
  INFINICCL_RETURN_IF_ERROR(RecvAll(s.get(), n, sizeof n, answer));
  if (static_cast<int>(GetU32(n)) != nranks) {
    return Status(infinicclInternalError,
                  "the bootstrap root sent another number of blobs");
  }
  blobs->assign(static_cast<size_t>(nranks), std::string());
  for (std::string &b : *blobs)
    INFINICCL_RETURN_IF_ERROR(RecvBytes(s.get(), Rendezvous::kMaxBlobBytes, answer, &b));
  if (session != nullptr) {
    std::vector<Fd> peers(1);
    peers[0] = std::move(s);
    session->reset(new Session(rank, nranks, false, std::move(peers), AddressText(f.root)));
  }
  return Status::Ok();
}

}  // namespace

Status Rendezvous::Create(infinicclUniqueId *id) {
  IdFields f;
  std::string ifname;
  INFINICCL_RETURN_IF_ERROR(
      ChooseAddress(GlobalConfig().socket_ifname, &f.root, &ifname));
  INFINICCL_RETURN_IF_ERROR(RandomBytes(f.secret.data(), f.secret.size()));
  Registry &r = Reg();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (r.listeners.size() >= static_cast<size_t>(kMaxOpenIds)) {
    return MakeStatus(
        infinicclInvalidUsage,
        "%d ids made by this process still await infinicclCommInitRank; each "
        "holds a listening socket until its root's CommInitRank",
        kMaxOpenIds);
  }
  Fd listener;
  INFINICCL_RETURN_IF_ERROR(Listen(&f.root, &listener));
  INFINICCL_INFO("bootstrap root listens on %s (%s)", AddressText(f.root).c_str(),
                 ifname.c_str());
  r.listeners.emplace(f.secret, listener.release());
  EncodeId(f, id);
  return Status::Ok();
}

Status Rendezvous::Join(const infinicclUniqueId &id, int nranks, int rank,
                        const std::string &blob, std::vector<std::string> *blobs,
                        std::unique_ptr<Exchange> *session) {
  IdFields f;
  INFINICCL_RETURN_IF_ERROR(DecodeId(id, &f));
  if (nranks < 1 || nranks > kMaxRanks) {
    return MakeStatus(infinicclInvalidArgument, "nranks %d is out of range (1 to %d)",
                      nranks, kMaxRanks);
  }
  if (blob.size() > kMaxBlobBytes) {
    return MakeStatus(infinicclInvalidArgument, "a blob of %zu bytes exceeds %zu",
                      blob.size(), kMaxBlobBytes);
  }
  Fd listener = TakeListener(f.secret);
  if (listener.valid()) {
    return Serve(std::move(listener), f, nranks, rank, blob, blobs, session);
  }
  return Client(f, nranks, rank, blob, blobs, session);
}

int Rendezvous::OpenListeners() {
  Registry &r = Reg();
  std::lock_guard<std::mutex> lock(r.mutex);
  return static_cast<int>(r.listeners.size());
}

}  // namespace infiniccl::bootstrap
