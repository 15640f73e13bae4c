// What a bootstrap id holds (infinicclUniqueId, 128 bytes): a magic word
// and version, the root's IPv4 address and port, and a random secret that
// a joining rank presents. Bytes: 0-3 magic "ICBT", 4-7 version, 8-11 the
// address, 12-13 the port (both in network order), 16-47 the secret; the
// rest is zero.
#pragma once

#include <infiniccl/infiniccl.h>
#include <netinet/in.h>

#include <array>
#include <cstdint>
#include <string>

#include "core/status.h"

namespace infiniccl::bootstrap {

using Secret = std::array<uint8_t, 32>;

struct IdFields {
  sockaddr_in root{};
  Secret secret{};
};

void EncodeId(const IdFields &f, infinicclUniqueId *id);
// InvalidArgument when `id` is not a bootstrap id of this version.
Status DecodeId(const infinicclUniqueId &id, IdFields *f);

// `bytes` from the kernel's random source (getrandom, else /dev/urandom).
Status RandomBytes(void *p, size_t bytes);

// The address the root listens on, chosen as NCCL chooses its bootstrap
// interface: the first up IPv4 interface that INFINICCL_SOCKET_IFNAME names
// when it is set (a comma-separated list of name prefixes; `^` first
// excludes them, `=` first asks for exact names); otherwise the first up
// one that is neither loopback nor `docker*`, else loopback. `name` receives
// the interface's name.
Status ChooseAddress(const std::string &ifname, sockaddr_in *addr, std::string *name);

// Whether `spec` (INFINICCL_SOCKET_IFNAME's syntax) selects interface `name`.
bool InterfaceMatches(const std::string &spec, const std::string &name);

}  // namespace infiniccl::bootstrap
