// The bootstrap's TCP helpers: IPv4 stream sockets whose every wait ends at
// a deadline, and the byte encoding of its messages (big-endian integers,
// length-prefixed strings).
#pragma once

#include <netinet/in.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/status.h"

namespace infiniccl::bootstrap {

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;  // Deadline::max(): none

// `seconds` from now; 0 (INFINICCL_TIMEOUT_SEC=0) is no deadline.
Deadline DeadlineAfter(int seconds);
// The earlier of `d` and `seconds` from now.
Deadline Earlier(Deadline d, int seconds);

// A file descriptor closed by its destructor.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(Fd &&o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Fd &operator=(Fd &&o) noexcept;
  Fd(const Fd &) = delete;
  Fd &operator=(const Fd &) = delete;
  ~Fd() { reset(); }
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void reset(int fd = -1);
  // Gives the descriptor up without closing it.
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_;
};

// "10.1.2.3:40123".
std::string AddressText(const sockaddr_in &a);

// A listening socket on `addr`'s address, on a port the kernel picks; the
// port is written back into `addr`.
Status Listen(sockaddr_in *addr, Fd *out);
// A connection to `addr`, retried while it is refused or unreachable, until
// `d` (then RemoteError).
Status ConnectRetrying(const sockaddr_in &addr, Deadline d, Fd *out);
// The next connection on `listener`; `out` stays invalid when `d` passed.
Status AcceptUntil(int listener, Deadline d, Fd *out);
Status SendAll(int fd, const std::string &bytes, Deadline d);
Status RecvAll(int fd, void *p, size_t n, Deadline d);

// Message encoding.
void PutU32(std::string *out, uint32_t v);
void PutU64(std::string *out, uint64_t v);
void PutBytes(std::string *out, const std::string &bytes);  // length, then bytes
uint32_t GetU32(const unsigned char *p);
uint64_t GetU64(const unsigned char *p);
// A u64 length, then that many bytes (at most `limit`), from the socket.
Status RecvBytes(int fd, size_t limit, Deadline d, std::string *out);

}  // namespace infiniccl::bootstrap
