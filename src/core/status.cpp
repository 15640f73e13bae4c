#include "core/status.h"

#include <cstdarg>
#include <cstdio>

namespace infiniccl {

Status MakeStatus(infinicclResult_t code, const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  return Status(code, buf);
}

}  // namespace infiniccl
