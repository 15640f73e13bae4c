// bootstrap/rendezvous.h with real processes: the test process makes the
// id (it holds the listener, so its Join is the root's) and fork()ed
// children join with it over TCP, as ranks launched apart would.
#include <arpa/inet.h>
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "bootstrap/rendezvous.h"
#include "bootstrap/socket.h"
#include "bootstrap/unique_id.h"
#include "core/config.h"

namespace infiniccl::bootstrap {
namespace {

struct Outcome {
  infinicclResult_t code = infinicclSuccess;
  std::string message;
  std::vector<std::string> blobs;
};

// One process's part: its Join, with whatever arguments the test gives it.
using Part = std::function<Outcome(const infinicclUniqueId &id, int index)>;

Outcome JoinAs(const infinicclUniqueId &id, int nranks, int rank,
               const std::string &blob) {
  Outcome o;
  const Status st = Rendezvous::Join(id, nranks, rank, blob, &o.blobs);
  o.code = st.code();
  o.message = st.message();
  return o;
}

std::string Pack(const Outcome &o) {
  std::string out;
  PutU32(&out, static_cast<uint32_t>(o.code));
  PutBytes(&out, o.message);
  PutU32(&out, static_cast<uint32_t>(o.blobs.size()));
  for (const std::string &b : o.blobs) PutBytes(&out, b);
  return out;
}

Outcome Unpack(const std::string &in) {
  Outcome o;
  const auto *p = reinterpret_cast<const unsigned char *>(in.data());
  size_t at = 0;
  auto bytes = [&] {
    const uint64_t n = GetU64(p + at);
    at += 8;
    std::string s = in.substr(at, n);
    at += n;
    return s;
  };
  if (in.size() < 4)
    return Outcome{infinicclInternalError, "the child wrote nothing", {}};
  o.code = static_cast<infinicclResult_t>(GetU32(p));
  at = 4;
  o.message = bytes();
  const uint32_t n = GetU32(p + at);
  at += 4;
  for (uint32_t i = 0; i < n; ++i) o.blobs.push_back(bytes());
  return o;
}

void WriteAll(int fd, const std::string &s) {
  size_t done = 0;
  while (done < s.size()) {
    const ssize_t n = write(fd, s.data() + done, s.size() - done);
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

std::string ReadAll(int fd) {
  std::string s;
  char buf[65536];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) s.append(buf, static_cast<size_t>(n));
  return s;
}

// `procs` processes: this one runs part(id, 0) as the id's maker, children
// 1..procs-1 get the id through a pipe once it exists. `id_out`: the id.
std::vector<Outcome> RunProcs(int procs, const Part &part,
                              infinicclUniqueId *id_out = nullptr) {
  std::vector<int> id_pipes, result_pipes;
  std::vector<pid_t> pids;
  for (int i = 1; i < procs; ++i) {
    int to[2], from[2];
    if (pipe(to) != 0 || pipe(from) != 0) ADD_FAILURE() << "pipe";
    const pid_t pid = fork();
    if (pid == 0) {
      // The earlier children's pipes too: a copy of their write end would
      // keep them from seeing the end of their id.
      for (int fd : id_pipes) close(fd);
      for (int fd : result_pipes) close(fd);
      close(to[1]);
      close(from[0]);
      infinicclUniqueId id;
      const std::string got = ReadAll(to[0]);
      if (got.size() == sizeof id.internal) {
        std::memcpy(id.internal, got.data(), sizeof id.internal);
        WriteAll(from[1], Pack(part(id, i)));
      }
      _exit(0);
    }
    close(to[0]);
    close(from[1]);
    id_pipes.push_back(to[1]);
    result_pipes.push_back(from[0]);
    pids.push_back(pid);
  }
  infinicclUniqueId id;
  const Status made = Rendezvous::Create(&id);
  EXPECT_TRUE(made.ok()) << made.message();
  if (id_out != nullptr) *id_out = id;
  for (int fd : id_pipes) {
    WriteAll(fd, std::string(id.internal, sizeof id.internal));
    close(fd);
  }
  std::vector<Outcome> out;
  out.push_back(part(id, 0));
  for (size_t i = 0; i < pids.size(); ++i) {
    out.push_back(Unpack(ReadAll(result_pipes[i])));
    close(result_pipes[i]);
    int status = 0;
    waitpid(pids[i], &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child " << i + 1;
  }
  return out;
}

std::string BlobOf(int rank) {
  // 0 bytes, 1 MiB, 3 bytes, 100 KiB: sizes far apart, contents that tell
  // the ranks apart at every offset.
  const size_t sizes[] = {0, 1 << 20, 3, 100 << 10};
  std::string b(sizes[rank % 4], '\0');
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = static_cast<char>((i * 131 + rank * 7) & 0xff);
  return b;
}

int Threads() {
  int n = 0;
  if (DIR *d = opendir("/proc/self/task")) {
    while (dirent *e = readdir(d))
      if (e->d_name[0] != '.') ++n;
    closedir(d);
  }
  return n;
}

// Whether anything still accepts connections at the id's address.
bool Accepts(const infinicclUniqueId &id) {
  IdFields f;
  if (!DecodeId(id, &f).ok()) return false;
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  const bool ok =
      connect(s, reinterpret_cast<const sockaddr *>(&f.root), sizeof f.root) == 0;
  close(s);
  return ok;
}

class Bootstrap : public ::testing::Test {
 protected:
  void SetUp() override { SetTimeout("20"); }
  void TearDown() override {
    unsetenv("INFINICCL_TIMEOUT_SEC");
    unsetenv("INFINICCL_SOCKET_IFNAME");
    ReloadGlobalConfig();
  }
  static void SetTimeout(const char *seconds) {
    setenv("INFINICCL_TIMEOUT_SEC", seconds, 1);
    ReloadGlobalConfig();
  }
};

TEST_F(Bootstrap, EveryRankGetsEveryBlobExactly) {
  for (int n = 2; n <= 4; ++n) {
    // The maker of the id is rank n-1: the root need not be rank 0.
    const auto out = RunProcs(n, [n](const infinicclUniqueId &id, int i) {
      const int rank = (i + n - 1) % n;
      return JoinAs(id, n, rank, BlobOf(rank));
    });
    for (int i = 0; i < n; ++i) {
      ASSERT_EQ(out[i].code, infinicclSuccess)
          << "process " << i << ": " << out[i].message;
      ASSERT_EQ(out[i].blobs.size(), static_cast<size_t>(n));
      for (int r = 0; r < n; ++r)
        EXPECT_TRUE(out[i].blobs[r] == BlobOf(r)) << i << " " << r;
    }
  }
}

TEST_F(Bootstrap, OneRankNeedsNoPeer) {
  infinicclUniqueId id;
  ASSERT_TRUE(Rendezvous::Create(&id).ok());
  const Outcome o = JoinAs(id, 1, 0, "alone");
  ASSERT_EQ(o.code, infinicclSuccess) << o.message;
  EXPECT_EQ(o.blobs, std::vector<std::string>{"alone"});
}

TEST_F(Bootstrap, AWrongSecretIsRefusedAndTheRanksGoOn) {
  // Rank 2's process first presents a forged id, then joins as rank 2: the
  // root cannot have finished (and closed its port) before the refusal.
  const auto out = RunProcs(3, [](const infinicclUniqueId &id, int i) {
    if (i != 2) return JoinAs(id, 3, i, BlobOf(i));
    infinicclUniqueId forged = id;
    forged.internal[20] ^= 1;  // a byte of the secret
    const Outcome refused = JoinAs(forged, 3, 2, BlobOf(2));
    Outcome o = JoinAs(id, 3, 2, BlobOf(2));
    o.message = std::to_string(refused.code) + "|" + refused.message + "|" + o.message;
    return o;
  });
  EXPECT_EQ(out[2].message.rfind(std::to_string(infinicclInvalidArgument) + "|", 0), 0u)
      << out[2].message;
  EXPECT_NE(out[2].message.find("secret does not match"), std::string::npos)
      << out[2].message;
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(out[i].code, infinicclSuccess) << i << ": " << out[i].message;
    for (int r = 0; r < 3; ++r)
      EXPECT_TRUE(out[i].blobs[r] == BlobOf(r)) << i << " " << r;
  }
}

TEST_F(Bootstrap, ARepeatedRankFailsEveryRankNamingIt) {
  const auto out = RunProcs(3, [](const infinicclUniqueId &id, int i) {
    return JoinAs(id, 3, i == 2 ? 1 : i, "x");
  });
  for (const Outcome &o : out) {
    EXPECT_EQ(o.code, infinicclInvalidUsage);
    EXPECT_NE(o.message.find("rank 1 given by more than one process"), std::string::npos)
        << o.message;
    EXPECT_NE(o.message.find("no process gave rank 2"), std::string::npos) << o.message;
  }
}

TEST_F(Bootstrap, ARankOutOfRangeFailsEveryRankNamingIt) {
  const auto out = RunProcs(3, [](const infinicclUniqueId &id, int i) {
    return JoinAs(id, 3, i == 2 ? 5 : i, "x");
  });
  for (const Outcome &o : out) {
    EXPECT_EQ(o.code, infinicclInvalidUsage);
    EXPECT_NE(o.message.find("rank 5 out of range (nranks 3)"), std::string::npos)
        << o.message;
  }
}

TEST_F(Bootstrap, DifferingNranksFailEveryRankNamingThem) {
  const auto out = RunProcs(3, [](const infinicclUniqueId &id, int i) {
    return JoinAs(id, i == 2 ? 2 : 3, i == 2 ? 1 : i, "x");
  });
  for (const Outcome &o : out) {
    EXPECT_EQ(o.code, infinicclInvalidUsage);
    EXPECT_NE(o.message.find("disagree on nranks"), std::string::npos) << o.message;
    EXPECT_NE(o.message.find("rank 0,1 nranks=3, rank 1 nranks=2"), std::string::npos)
        << o.message;
  }
}

TEST_F(Bootstrap, AMissingRankFailsTheOthersWithinTheTimeout) {
  SetTimeout("2");
  const int threads = Threads();
  infinicclUniqueId id;
  const auto start = std::chrono::steady_clock::now();
  const auto out = RunProcs(
      3, [](const infinicclUniqueId &id, int i) { return JoinAs(id, 4, i, "x"); }, &id);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(took, 10.0);
  for (const Outcome &o : out) {
    EXPECT_EQ(o.code, infinicclRemoteError);
    EXPECT_NE(o.message.find("rank 3 of 4 did not join within 2 s"), std::string::npos)
        << o.message;
  }
  // Failed creation leaves nothing behind either.
  EXPECT_FALSE(Accepts(id));
  EXPECT_EQ(Rendezvous::OpenListeners(), 0);
  EXPECT_EQ(Threads(), threads);
}

TEST_F(Bootstrap, AfterCreationThePortIsClosedAndNoThreadRemains) {
  const int threads = Threads();
  infinicclUniqueId id;
  bool open_before = false;
  const auto out = RunProcs(
      3,
      [&open_before](const infinicclUniqueId &id, int i) {
        // The listener exists until the root's Join; this connection sends
        // no hello, and the root drops it and goes on.
        if (i == 0) open_before = Accepts(id);
        return JoinAs(id, 3, i, BlobOf(i));
      },
      &id);
  for (const Outcome &o : out) ASSERT_EQ(o.code, infinicclSuccess) << o.message;
  EXPECT_TRUE(open_before);
  EXPECT_FALSE(Accepts(id));
  EXPECT_EQ(Rendezvous::OpenListeners(), 0);
  EXPECT_EQ(Threads(), threads);
}

TEST_F(Bootstrap, AnIdNotMadeByCreateIsAnInvalidArgument) {
  infinicclUniqueId id;
  std::memset(&id, 0x5a, sizeof id);
  std::vector<std::string> blobs;
  EXPECT_EQ(Rendezvous::Join(id, 2, 0, "", &blobs).code(), infinicclInvalidArgument);
}

TEST(BootstrapInterface, IfnameSyntaxIsNcclSocketIfnames) {
  EXPECT_TRUE(InterfaceMatches("eth", "eth0"));
  EXPECT_TRUE(InterfaceMatches("ib,eth", "eth1"));
  EXPECT_FALSE(InterfaceMatches("ib", "eth0"));
  EXPECT_FALSE(InterfaceMatches("^eth,lo", "eth0"));
  EXPECT_TRUE(InterfaceMatches("^eth,lo", "ib0"));
  EXPECT_TRUE(InterfaceMatches("=eth0", "eth0"));
  EXPECT_FALSE(InterfaceMatches("=eth", "eth0"));
}

TEST(BootstrapInterface, LoopbackByNameAndAnUnknownNameRefused) {
  sockaddr_in a{};
  std::string name;
  ASSERT_TRUE(ChooseAddress("lo", &a, &name).ok());
  EXPECT_EQ(name, "lo");
  EXPECT_EQ(ntohl(a.sin_addr.s_addr) >> 24, 127u);
  const Status st = ChooseAddress("=no-such-interface", &a, &name);
  EXPECT_EQ(st.code(), infinicclInvalidUsage);
  EXPECT_NE(st.message().find("INFINICCL_SOCKET_IFNAME"), std::string::npos)
      << st.message();
}

}  // namespace
}  // namespace infiniccl::bootstrap
