#include "bootstrap/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

namespace infiniccl::bootstrap {

namespace {

// Milliseconds poll() may wait before `d`; -1 for no deadline.
int PollMs(Deadline d) {
  if (d == Deadline::max()) return -1;
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(d - Clock::now());
  return static_cast<int>(std::clamp<int64_t>(left.count(), 0, 1 << 30));
}

// Waits for `events` on fd; false when the deadline passed first.
bool WaitFor(int fd, short events, Deadline d) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int n = poll(&p, 1, PollMs(d));
    if (n > 0) return true;
    if (n == 0) return false;
    if (errno != EINTR) return true;  // the next call reports the error
  }
}

Status Errno(const char *what) {
  return MakeStatus(infinicclSystemError, "%s: %s", what, std::strerror(errno));
}

int NewSocket() {
  return socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
}

// One connection attempt until `d`; the errno of the failure, 0 on success.
int TryConnect(const sockaddr_in &addr, Deadline d, Fd *out) {
  Fd s(NewSocket());
  if (!s.valid()) return errno;
  if (connect(s.get(), reinterpret_cast<const sockaddr *>(&addr), sizeof addr) != 0) {
    if (errno != EINPROGRESS) return errno;
    if (!WaitFor(s.get(), POLLOUT, d)) return ETIMEDOUT;
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(s.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) return errno;
    if (err != 0) return err;
  }
  const int one = 1;
  setsockopt(s.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  *out = std::move(s);
  return 0;
}

}  // namespace

Deadline DeadlineAfter(int seconds) {
  if (seconds <= 0) return Deadline::max();
  return Clock::now() + std::chrono::seconds(seconds);
}

Deadline Earlier(Deadline d, int seconds) {
  return std::min(d, DeadlineAfter(seconds));
}

Fd &Fd::operator=(Fd &&o) noexcept {
  if (this != &o) {
    reset(o.fd_);
    o.fd_ = -1;
  }
  return *this;
}

void Fd::reset(int fd) {
  if (fd_ >= 0) close(fd_);
  fd_ = fd;
}

std::string AddressText(const sockaddr_in &a) {
  char ip[INET_ADDRSTRLEN] = "?";
  inet_ntop(AF_INET, &a.sin_addr, ip, sizeof ip);
  return std::string(ip) + ":" + std::to_string(ntohs(a.sin_port));
}

Status Listen(sockaddr_in *addr, Fd *out) {
  Fd s(NewSocket());
  if (!s.valid()) return Errno("socket");
  addr->sin_port = 0;
  if (bind(s.get(), reinterpret_cast<const sockaddr *>(addr), sizeof *addr) != 0) {
    return MakeStatus(infinicclSystemError, "bind to %s: %s", AddressText(*addr).c_str(),
                      std::strerror(errno));
  }
  if (listen(s.get(), SOMAXCONN) != 0) return Errno("listen");
  socklen_t len = sizeof *addr;
  if (getsockname(s.get(), reinterpret_cast<sockaddr *>(addr), &len) != 0) {
    return Errno("getsockname");
  }
  *out = std::move(s);
  return Status::Ok();
}

Status ConnectRetrying(const sockaddr_in &addr, Deadline d, Fd *out) {
  auto pause = std::chrono::milliseconds(10);
  for (;;) {
    const int err = TryConnect(addr, d, out);
    if (err == 0) return Status::Ok();
    const bool again = err == ECONNREFUSED || err == ETIMEDOUT || err == ENETUNREACH ||
                       err == EHOSTUNREACH || err == ECONNRESET || err == EAGAIN;
    if (!again) {
      return MakeStatus(infinicclSystemError, "connect to %s: %s",
                        AddressText(addr).c_str(), std::strerror(err));
    }
    if (Clock::now() + pause >= d) {
      return MakeStatus(infinicclRemoteError,
                        "the root at %s (the process that called infinicclGetUniqueId) "
                        "did not accept a connection before the timeout (last error: %s)",
                        AddressText(addr).c_str(), std::strerror(err));
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(200));
  }
}

Status AcceptUntil(int listener, Deadline d, Fd *out) {
  for (;;) {
    if (!WaitFor(listener, POLLIN, d)) return Status::Ok();
    const int fd = accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      const int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      out->reset(fd);
      return Status::Ok();
    }
    if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
      return Errno("accept");
  }
}

Status SendAll(int fd, const std::string &bytes, Deadline d) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n > 0) {
      done += static_cast<size_t>(n);
    } else if (errno == EAGAIN || errno == EINTR) {
      if (!WaitFor(fd, POLLOUT, d)) {
        return Status(infinicclRemoteError, "the peer took no data before the timeout");
      }
    } else {
      return Errno("send");
    }
  }
  return Status::Ok();
}

Status RecvAll(int fd, void *p, size_t n, Deadline d) {
  auto *at = static_cast<char *>(p);
  size_t done = 0;
  while (done < n) {
    const ssize_t got = recv(fd, at + done, n - done, 0);
    if (got > 0) {
      done += static_cast<size_t>(got);
    } else if (got == 0) {
      return Status(infinicclRemoteError, "the peer closed the connection");
    } else if (errno == EAGAIN || errno == EINTR) {
      if (!WaitFor(fd, POLLIN, d)) {
        return Status(infinicclRemoteError, "the peer sent nothing before the timeout");
      }
    } else {
      return Errno("recv");
    }
  }
  return Status::Ok();
}

void PutU32(std::string *out, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) out->push_back(static_cast<char>((v >> s) & 0xff));
}

void PutU64(std::string *out, uint64_t v) {
  PutU32(out, static_cast<uint32_t>(v >> 32));
  PutU32(out, static_cast<uint32_t>(v));
}

void PutBytes(std::string *out, const std::string &bytes) {
  PutU64(out, bytes.size());
  out->append(bytes);
}

uint32_t GetU32(const unsigned char *p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

uint64_t GetU64(const unsigned char *p) {
  return (uint64_t{GetU32(p)} << 32) | GetU32(p + 4);
}

Status RecvBytes(int fd, size_t limit, Deadline d, std::string *out) {
  unsigned char len[8];
  INFINICCL_RETURN_IF_ERROR(RecvAll(fd, len, sizeof len, d));
  const uint64_t n = GetU64(len);
  if (n > limit) {
    return MakeStatus(infinicclRemoteError,
                      "a message of %llu bytes, more than the %zu the bootstrap accepts",
                      static_cast<unsigned long long>(n), limit);
  }
  out->resize(n);
  return RecvAll(fd, out->data(), n, d);
}

}  // namespace infiniccl::bootstrap
