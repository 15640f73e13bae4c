#include "bootstrap/unique_id.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace infiniccl::bootstrap {

namespace {

constexpr unsigned char kMagic[4] = {'I', 'C', 'B', 'T'};
constexpr unsigned char kVersion = 1;

struct Interface {
  std::string name;
  sockaddr_in addr;
  bool loopback;
};

std::vector<Interface> UpIpv4Interfaces() {
  std::vector<Interface> out;
  ifaddrs *list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (ifaddrs *i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    if ((i->ifa_flags & IFF_UP) == 0) continue;
    Interface f;
    f.name = i->ifa_name;
    std::memcpy(&f.addr, i->ifa_addr, sizeof f.addr);
    f.loopback = (i->ifa_flags & IFF_LOOPBACK) != 0;
    out.push_back(f);
  }
  freeifaddrs(list);
  return out;
}

}  // namespace

void EncodeId(const IdFields &f, infinicclUniqueId *id) {
  std::memset(id->internal, 0, sizeof id->internal);
  auto *b = reinterpret_cast<unsigned char *>(id->internal);
  std::memcpy(b, kMagic, 4);
  b[7] = kVersion;
  std::memcpy(b + 8, &f.root.sin_addr.s_addr, 4);
  std::memcpy(b + 12, &f.root.sin_port, 2);
  std::memcpy(b + 16, f.secret.data(), f.secret.size());
}

Status DecodeId(const infinicclUniqueId &id, IdFields *f) {
  const auto *b = reinterpret_cast<const unsigned char *>(id.internal);
  if (std::memcmp(b, kMagic, 4) != 0) {
    return Status(
        infinicclInvalidArgument,
        "the id was not made by infinicclGetUniqueId (its first bytes are not the "
        "bootstrap's mark; pass the 128 bytes unchanged)");
  }
  if (b[4] != 0 || b[5] != 0 || b[6] != 0 || b[7] != kVersion) {
    return MakeStatus(infinicclInvalidArgument,
                      "the id is of bootstrap version %u; this library reads version %u",
                      static_cast<unsigned>(b[7]), static_cast<unsigned>(kVersion));
  }
  *f = IdFields{};
  f->root.sin_family = AF_INET;
  std::memcpy(&f->root.sin_addr.s_addr, b + 8, 4);
  std::memcpy(&f->root.sin_port, b + 12, 2);
  std::memcpy(f->secret.data(), b + 16, f->secret.size());
  return Status::Ok();
}

Status RandomBytes(void *p, size_t bytes) {
  auto *at = static_cast<char *>(p);
  size_t done = 0;
  while (done < bytes) {
    const ssize_t n = getrandom(at + done, bytes - done, 0);
    if (n > 0) {
      done += static_cast<size_t>(n);
    } else if (errno != EINTR) {
      break;
    }
  }
  if (done == bytes) return Status::Ok();
  const int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return MakeStatus(infinicclSystemError,
                      "no random source: getrandom and /dev/urandom: %s",
                      std::strerror(errno));
  }
  while (done < bytes) {
    const ssize_t n = read(fd, at + done, bytes - done);
    if (n <= 0 && errno != EINTR) break;
    if (n > 0) done += static_cast<size_t>(n);
  }
  close(fd);
  if (done == bytes) return Status::Ok();
  return Status(infinicclSystemError, "/dev/urandom gave fewer bytes than asked");
}

bool InterfaceMatches(const std::string &spec, const std::string &name) {
  size_t at = 0;
  const bool exclude = !spec.empty() && spec[0] == '^';
  if (exclude) ++at;
  const bool exact = at < spec.size() && spec[at] == '=';
  if (exact) ++at;
  bool listed = false;
  while (at <= spec.size() && !listed) {
    size_t comma = spec.find(',', at);
    if (comma == std::string::npos) comma = spec.size();
    const std::string item = spec.substr(at, comma - at);
    if (!item.empty())
      listed = exact ? name == item : name.compare(0, item.size(), item) == 0;
    at = comma + 1;
  }
  return listed != exclude;
}

Status ChooseAddress(const std::string &ifname, sockaddr_in *addr, std::string *name) {
  const std::vector<Interface> all = UpIpv4Interfaces();
  const Interface *pick = nullptr;
  for (const Interface &f : all) {
    const bool ok = ifname.empty() ? !f.loopback && f.name.compare(0, 6, "docker") != 0
                                   : InterfaceMatches(ifname, f.name);
    if (ok) {
      pick = &f;
      break;
    }
  }
  if (pick == nullptr && ifname.empty()) {
    for (const Interface &f : all)
      if (f.loopback && pick == nullptr) pick = &f;
  }
  if (pick == nullptr && !ifname.empty()) {
    std::string names;
    for (const Interface &f : all) names += (names.empty() ? "" : ", ") + f.name;
    return MakeStatus(
        infinicclInvalidUsage,
        "INFINICCL_SOCKET_IFNAME=%s names no up IPv4 interface (those up: %s)",
        ifname.c_str(), names.empty() ? "none" : names.c_str());
  }
  *addr = sockaddr_in{};
  addr->sin_family = AF_INET;
  if (pick == nullptr) {
    addr->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    *name = "lo";
  } else {
    addr->sin_addr = pick->addr.sin_addr;
    *name = pick->name;
  }
  return Status::Ok();
}

}  // namespace infiniccl::bootstrap
