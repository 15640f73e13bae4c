// CclBackend<Api>: the Backend over a native collective library, written
// once against the generic names of a vendor mapping (vendor_nccl.h,
// vendor_mccl.h, vendor_rccl.h, vendor_hccl.h, vendor_cncl.h), as
// device/cuda_like/ does for the runtimes.
//
// Optional members of `Api`, used when present (CCLs off NCCL's pattern):
//   const char *Unsupported(const CollArgs &)  what this CCL cannot run beyond
//                                             CclUnsupportedReason (a type or
//                                             op it lacks); the route then
//                                             takes MPI;
//   infinicclResult_t ResultCode(Result)      its result codes in ours (else
//                                             NCCL's numbering, CclResultCode);
//   kBootstrapOverMpi = true                  its unique id does not fit in
//                                             infinicclUniqueId (HCCL's root
//                                             info is 4108 bytes): the id is
//                                             broadcast over the
//                                             communicator's MPI instead.
//
// Calls are stream-ordered and asynchronous, as in NCCL: Run returns once the
// work is enqueued on the caller's stream. Before each call the
// communicator's asynchronous error is polled, so a failure of earlier work
// surfaces as a status rather than as a hang or a crash later.
#pragma once

#include <atomic>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "backend/backend.h"
#include "backend/ccl/ccl_known_bugs.h"
#include "backend/ccl/ccl_mapping.h"
#include "backend/ccl/ccl_provider.h"
#include "core/dtype.h"
#include "core/log.h"

namespace infiniccl::ccl {

// A status from a CCL result: our code (same numbering) and the library's
// text, plus its last-error detail when it has one.
template <typename Api>
infinicclResult_t ResultCodeOf(typename Api::Result r) {
  if constexpr (requires { Api::ResultCode(r); }) {
    return Api::ResultCode(r);
  } else {
    return CclResultCode(static_cast<int>(r));
  }
}

template <typename Api>
Status CclStatus(const char *call, typename Api::Result r, typename Api::Comm comm) {
  const char *detail = Api::GetLastError(comm);
  return MakeStatus(ResultCodeOf<Api>(r), "%s%s failed: %s%s%s",
                    Api::kPrefix, call, Api::GetErrorString(r),
                    (detail && *detail) ? ": " : "", detail ? detail : "");
}

template <typename Api>
class CclBackend final : public Backend {
 public:
  using Comm = typename Api::Comm;
  using Result = typename Api::Result;

  // `version`: the CCL's version code (its GetVersion), -1 when unknown; the
  // known-bug table is keyed on it.
  CclBackend(Comm comm, int rank, int size, int version = -1)
      : comm_(comm), rank_(rank), size_(size), version_(version) {}
  ~CclBackend() override {
    // Waits for the communicator's outstanding work, as ncclCommDestroy does
    // (a revoked one was aborted already).
    if (comm_ != nullptr && !revoked_.load()) Api::CommDestroy(comm_);
  }
  CclBackend(const CclBackend &) = delete;
  CclBackend &operator=(const CclBackend &) = delete;

  const char *Name() const override { return Api::kName; }
  const char *Unsupported(const CollArgs &a) const override {
    if (const char *why = CclUnsupportedReason(a)) return why;
    if constexpr (requires { Api::Unsupported(a); }) {
      if (const char *why = Api::Unsupported(a)) return why;
    }
    return CclKnownBugReason(Api::kName, version_, size_, a);
  }

  Status AsyncError() const override {
    if (revoked_.load()) return RevokedStatus();
    return CheckAsync();
  }

  void Abort() override {
    // ncclCommAbort: frees the communicator without waiting for queued or
    // hung work (which CommDestroy would wait for).
    if (comm_ != nullptr && !revoked_.load()) Api::CommAbort(comm_);
    comm_ = nullptr;
  }

  // infinicclCommRevoke and INFINICCL_SHRINK_ABORT (another thread may be in
  // a call): the CCL communicator is aborted as by Abort, so its queued and
  // hung work ends and releases the streams (NCCL_SHRINK_ABORT's abort of
  // the parent's operations), and every later call, asynchronous error and
  // split here returns RemoteError "revoked" without touching it.
  void Revoke() override {
    if (revoked_.exchange(true)) return;
    if (comm_ != nullptr) Api::CommAbort(comm_);
  }

  Status SplitNative(int color, int key, int *rank, int *size,
                     std::unique_ptr<Backend> *out) override {
    if (revoked_.load()) return RevokedStatus();
    if constexpr (Api::kHasSplit) {
      Comm child = nullptr;
      const Result r = Api::CommSplit(comm_, color, key, &child);
      if (r != Api::kSuccess) return CclStatus<Api>("CommSplit", r, comm_);
      if (color < 0 || child == nullptr) return Status::Ok();
      auto backend = std::make_unique<CclBackend<Api>>(child, *rank, *size, version_);
      if (*rank < 0) {
        Result q = Api::CommUserRank(child, rank);
        if (q == Api::kSuccess) q = Api::CommCount(child, size);
        if (q != Api::kSuccess) return CclStatus<Api>("CommUserRank/CommCount", q, child);
        backend->rank_ = *rank;
        backend->size_ = *size;
      }
      *out = std::move(backend);
      return Status::Ok();
    } else {
      return Backend::SplitNative(color, key, rank, size, out);  // not supported
    }
  }

  Status Run(const CollArgs &a) override {
    if (revoked_.load()) return RevokedStatus();
    INFINICCL_RETURN_IF_ERROR(CheckAsync());
    const auto s = static_cast<typename Api::Stream>(a.stream);
    const CclElements e = MapElements(a.dtype, a.count);
    const auto t = Api::Type(e.type);
    const auto op = Api::Op(MapRedOp(a.op));
    switch (a.kind) {
      case CollKind::kAllReduce:
        return Check("AllReduce",
                     Api::AllReduce(a.sendbuff, a.recvbuff, e.count, t, op, comm_, s));
      case CollKind::kBroadcast:
        return Check("Broadcast", Api::Broadcast(a.sendbuff, a.recvbuff, e.count, t,
                                                 a.root, comm_, s));
      case CollKind::kReduce:
        return Check("Reduce", Api::Reduce(a.sendbuff, a.recvbuff, e.count, t, op, a.root,
                                           comm_, s));
      case CollKind::kAllGather:
        return Check("AllGather",
                     Api::AllGather(a.sendbuff, a.recvbuff, e.count, t, comm_, s));
      case CollKind::kReduceScatter:
        return Check("ReduceScatter", Api::ReduceScatter(a.sendbuff, a.recvbuff, e.count,
                                                         t, op, comm_, s));
      case CollKind::kSend:
        return Check("Send", Api::Send(a.sendbuff, e.count, t, a.root, comm_, s));
      case CollKind::kRecv:
        return Check("Recv", Api::Recv(a.recvbuff, e.count, t, a.root, comm_, s));
      case CollKind::kAllToAll:
        if constexpr (Api::kNativeAllToAllGatherScatter) {
          if (Api::NativeAllToAllGatherScatterLoaded()) {
            return Check("AlltoAll",
                         Api::AlltoAll(a.sendbuff, a.recvbuff, e.count, t, comm_, s));
          }
        }
        return Grouped(a, s);
      case CollKind::kGather:
        if constexpr (Api::kNativeAllToAllGatherScatter) {
          if (Api::NativeAllToAllGatherScatterLoaded()) {
            return Check("Gather", Api::Gather(a.sendbuff, a.recvbuff, e.count, t, a.root,
                                               comm_, s));
          }
        }
        return Grouped(a, s);
      case CollKind::kScatter:
        if constexpr (Api::kNativeAllToAllGatherScatter) {
          if (Api::NativeAllToAllGatherScatterLoaded()) {
            return Check("Scatter", Api::Scatter(a.sendbuff, a.recvbuff, e.count, t,
                                                 a.root, comm_, s));
          }
        }
        return Grouped(a, s);
    }
    return MakeStatus(infinicclInternalError, "%s: unknown collective kind %d",
                      Api::kName, static_cast<int>(a.kind));
  }

 private:
  Status Check(const char *call, Result r) const {
    if (r == Api::kSuccess || r == Api::kInProgress) return Status::Ok();
    return CclStatus<Api>(call, r, comm_);
  }

  static Status RevokedStatus() {
    return MakeStatus(infinicclRemoteError,
                      "the communicator was revoked (infinicclCommRevoke, or a shrink that "
                      "aborted it): its %s communicator was aborted",
                      Api::kName);
  }

  Status CheckAsync() const {
    Result async = Api::kSuccess;
    const Result r = Api::CommGetAsyncError(comm_, &async);
    if (r != Api::kSuccess) return Check("CommGetAsyncError", r);
    if (async == Api::kSuccess || async == Api::kInProgress) return Status::Ok();
    const char *detail = Api::GetLastError(comm_);
    return MakeStatus(ResultCodeOf<Api>(async),
                      "%s reports an asynchronous error on this communicator: %s%s%s "
                      "(earlier work failed; destroy the communicator)",
                      Api::kName, Api::GetErrorString(async),
                      (detail && *detail) ? ": " : "", detail ? detail : "");
  }

  // AllToAll, Gather and Scatter as Send/Recv of bytes fused in one group,
  // for CCLs without the native calls. A rank's own block is a send to
  // itself (the CCL copies it), skipped where the layout is in place.
  Status Grouped(const CollArgs &a, typename Api::Stream s) {
    const size_t bytes = a.count * DataTypeSize(a.dtype);
    const auto u8 = Api::Type(CclType::kUint8);
    const auto *src = static_cast<const char *>(a.sendbuff);
    auto *dst = static_cast<char *>(a.recvbuff);
    INFINICCL_RETURN_IF_ERROR(Check("GroupStart", Api::GroupStart()));
    // After a failed call nothing more is issued; the group is still closed.
    Status st;
    auto send = [&](const char *buf, int peer) {
      if (st.ok()) st = Check("Send", Api::Send(buf, bytes, u8, peer, comm_, s));
    };
    auto recv = [&](char *buf, int peer) {
      if (st.ok()) st = Check("Recv", Api::Recv(buf, bytes, u8, peer, comm_, s));
    };
    switch (a.kind) {
      case CollKind::kAllToAll:
        for (int r = 0; r < size_; ++r) {
          send(src + r * bytes, r);
          recv(dst + r * bytes, r);
        }
        break;
      case CollKind::kGather:
      case CollKind::kScatter: {
        // The root exchanges a block with every rank, its own too unless in
        // place (receives for Gather, sends for Scatter); every other rank
        // makes the mirror call with the root.
        const bool gather = a.kind == CollKind::kGather;
        if (rank_ == a.root) {
          for (int r = 0; r < size_; ++r) {
            if (r == rank_ && a.in_place) continue;
            gather ? recv(dst + r * bytes, r) : send(src + r * bytes, r);
          }
        }
        if (!(rank_ == a.root && a.in_place))
          gather ? send(src, a.root) : recv(dst, a.root);
        break;
      }
      default: break;
    }
    const Status end = Check("GroupEnd", Api::GroupEnd());
    return st.ok() ? end : st;
  }

  Comm comm_;
  int rank_;
  int size_;
  int version_;
  std::atomic<bool> revoked_{false};  // Revoke ran: comm_ was aborted
};

template <typename Api>
class CclProviderImpl final : public CclProvider {
 public:
  const char *Name() const override { return Api::kName; }
  DeviceKind kind() const override { return Api::kDeviceKind; }
  bool used() const override { return used_.load(); }

  std::string Version() const override {
    const int v = VersionCode();
    if (v < 0) return "unknown";
    char buf[32];
    if constexpr (requires { Api::FormatVersion(v, buf, sizeof buf); }) {
      Api::FormatVersion(v, buf, sizeof buf);
    } else {
      // An encoding we could not read documented: the raw integer, not a guess.
      std::snprintf(buf, sizeof buf, "%d", v);
    }
    return buf;
  }
  // The library's own version code, as it reports it at run time (the
  // loaded library, not the header built against); -1 when it cannot say.
  static int VersionCode() {
    int v = 0;
    return Api::GetVersion(&v) == Api::kSuccess ? v : -1;
  }

  static constexpr bool kOverMpi = [] {
    if constexpr (requires { Api::kBootstrapOverMpi; }) {
      return Api::kBootstrapOverMpi;
    } else {
      return false;
    }
  }();

  // A CCL whose id does not fit in infinicclUniqueId: made over the
  // communicator's MPI (rank 0 makes the id, MPI broadcasts it).
  bool MadeOverMpi() const override { return kOverMpi; }
  Status CreateCommOverMpi(MPI_Comm mpi, std::unique_ptr<Backend> *out) override {
    if constexpr (!kOverMpi) {
      return CclProvider::CreateCommOverMpi(mpi, out);
    } else {
      int rank = 0, size = 1;
      MPI_Comm_rank(mpi, &rank);
      MPI_Comm_size(mpi, &size);
      auto uid = std::make_unique<typename Api::UniqueId>();
      int ok = 1;
      Status st;
      if (rank == 0) {
        const typename Api::Result r = Api::GetUniqueId(uid.get());
        if (r != Api::kSuccess) {
          st = CclStatus<Api>("GetUniqueId", r, nullptr);
          ok = 0;
        }
      }
      if (MPI_Bcast(&ok, 1, MPI_INT, 0, mpi) != MPI_SUCCESS) {
        return Status(infinicclSystemError, "MPI_Bcast of the CCL's id failed");
      }
      if (!ok) {
        return st.ok() ? Status(infinicclSystemError,
                                "the first rank could not make the CCL's id (see its log)")
                       : st;
      }
      if (MPI_Bcast(uid.get(), static_cast<int>(sizeof(typename Api::UniqueId)), MPI_BYTE,
                    0, mpi) != MPI_SUCCESS) {
        return Status(infinicclSystemError, "MPI_Bcast of the CCL's id failed");
      }
      return Init(size, *uid, rank, out);
    }
  }

  Status GetUniqueId(infinicclUniqueId *id) override {
    if constexpr (kOverMpi) {
      (void)id;
      return MakeStatus(infinicclNotSupported,
                        "%s's id (%zu bytes) does not fit in infinicclUniqueId (%zu bytes): "
                        "create communicators under MPI (infinicclCommInitAll)",
                        Api::kName, sizeof(typename Api::UniqueId), sizeof(id->internal));
    } else {
      return GetUniqueIdImpl(id);
    }
  }

  Status CreateComm(int nranks, const infinicclUniqueId &id, int rank,
                    std::unique_ptr<Backend> *out) override {
    if constexpr (kOverMpi) {
      (void)nranks, (void)id, (void)rank, (void)out;
      return MakeStatus(infinicclNotSupported,
                        "%s communicators are made under MPI only (its id does not fit in "
                        "infinicclUniqueId)",
                        Api::kName);
    } else {
      typename Api::UniqueId uid;
      std::memcpy(&uid, id.internal, sizeof(uid));
      return Init(nranks, uid, rank, out);
    }
  }

  Status GroupStart() override {
    const typename Api::Result r = Api::GroupStart();
    return r == Api::kSuccess ? Status::Ok() : CclStatus<Api>("GroupStart", r, nullptr);
  }
  Status GroupEnd() override {
    const typename Api::Result r = Api::GroupEnd();
    return r == Api::kSuccess || r == Api::kInProgress
               ? Status::Ok()
               : CclStatus<Api>("GroupEnd", r, nullptr);
  }

 private:
  Status GetUniqueIdImpl(infinicclUniqueId *id) {
    static_assert(kOverMpi || sizeof(typename Api::UniqueId) <= sizeof(id->internal),
                  "the CCL's unique id must fit in infinicclUniqueId");
    typename Api::UniqueId uid;
    const typename Api::Result r = Api::GetUniqueId(&uid);
    if (r != Api::kSuccess) return CclStatus<Api>("GetUniqueId", r, nullptr);
    std::memset(id->internal, 0, sizeof(id->internal));
    std::memcpy(id->internal, &uid, sizeof(uid));
    return Status::Ok();
  }

  Status Init(int nranks, const typename Api::UniqueId &uid, int rank,
              std::unique_ptr<Backend> *out) {
    typename Api::Comm comm = nullptr;
    used_.store(true);
    const typename Api::Result r = Api::CommInitRank(&comm, nranks, uid, rank);
    if (r != Api::kSuccess) return CclStatus<Api>("CommInitRank", r, nullptr);
    *out = std::make_unique<CclBackend<Api>>(comm, rank, nranks, VersionCode());
    INFINICCL_INFO("%s %s communicator: rank %d of %d", Api::kName, Version().c_str(),
                   rank, nranks);
    if constexpr (Api::kNativeAllToAllGatherScatter) {
      if (!Api::NativeAllToAllGatherScatterLoaded()) {
        INFINICCL_INFO("%s %s lacks AlltoAll, Gather and Scatter (built against a newer "
                       "one): they go as grouped Send/Recv",
                       Api::kName, Version().c_str());
      }
    }
    return Status::Ok();
  }

  std::atomic<bool> used_{false};
};

// The process's one provider of `Api` (NcclProvider(), McclProvider()).
template <typename Api>
CclProvider *Provider() {
  static auto *provider = new CclProviderImpl<Api>();  // lives to exit
  return provider;
}

}  // namespace infiniccl::ccl
