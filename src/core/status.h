// Status: the result of every internal operation. A code from the public
// enum plus a message; the API layer turns it into infinicclResult_t and keeps
// the message for infinicclGetLastError. OK statuses carry an empty string, so
// the success path never allocates.
#pragma once

#include <infiniccl/infiniccl.h>

#include <string>
#include <utility>

namespace infiniccl {

class Status {
 public:
  Status() = default;
  Status(infinicclResult_t code, std::string message)
      : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == infinicclSuccess; }
  infinicclResult_t code() const { return code_; }
  const std::string &message() const { return message_; }

 private:
  infinicclResult_t code_ = infinicclSuccess;
  std::string message_;
};

// printf-style message builders for the error paths (they allocate; only
// called when something is wrong).
Status MakeStatus(infinicclResult_t code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define INFINICCL_RETURN_IF_ERROR(expr)     \
  do {                                      \
    ::infiniccl::Status _st = (expr);       \
    if (!_st.ok()) return _st;              \
  } while (0)

}  // namespace infiniccl
