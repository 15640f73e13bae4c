// infinicclGetUniqueId and infinicclCommInitRank: the ranks meet through
// the bootstrap (bootstrap/rendezvous.h), each with a blob saying what it
// can do, and every rank reaches the same decision from the same blobs:
// - every rank under MPI with infinicclInit: the MPI communicator of their
//   MPI_COMM_WORLD ranks in CommInitRank's order, then InitUnderMpi's steps,
//   each rank on its calling thread's current device;
// - no rank under MPI, all on this node: a communicator of the node's
//   shared memory, its segments made over the bootstrap's session
//   (CommFactory::FinishOnNode), with the CCL's communicator beside it
//   where every rank has a usable one (rank 0's CCL id in its blob);
// - no rank under MPI, on several nodes, every one with a usable native
//   CCL: the communicator is the CCL's alone;
// - anything else: infinicclInvalidUsage on every rank, naming the ranks.
#include <unistd.h>

#include <fstream>

#include <string>
#include <utility>
#include <vector>

#include "backend/ccl/ccl_provider.h"
#include "bootstrap/rendezvous.h"
#include "bootstrap/socket.h"
#include "comm/comm_attach.h"
#include "comm/comm_init.h"
#include "comm/runtime.h"
#include "core/log.h"
#include "core/rank_list.h"
#include "device/registry.h"
#include "mpi/mpi_thread.h"

namespace infiniccl {

namespace {

// What a rank can do, in its blob's first byte.
enum Mode : char {
  kUnderMpi = 'M',        // MPI initialised and infinicclInit called
  kMpiWithoutInit = 'I',  // MPI initialised by the program, infinicclInit not called
  kCcl = 'C',             // no MPI; a native CCL usable
  kNeither = 'N',
};

const char *ModeText(char m) {
  switch (m) {
    case kUnderMpi: return "under MPI after infinicclInit";
    case kMpiWithoutInit: return "MPI initialised but no infinicclInit";
    case kCcl: return "no MPI, a native CCL";
    default: return "no MPI and no usable native CCL";
  }
}

struct Blob {
  char mode = kNeither;
  int world_rank = -1, world_size = 0;
  int device = -1;  // with a usable CCL: the calling thread's current device
  std::string host, ccl_id, node;  // node: the host's name and its kernel's boot id
};

// What tells this node from others: ranks with the same host name and boot
// id share a kernel, and so its shared memory. A host name alone would
// join two machines of one name; the boot id alone, the emulated nodes of
// one machine (tests/nodes: a host name each, one kernel).
std::string NodeKey(const std::string &host) {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string boot;
  std::getline(in, boot);
  return host + "/" + boot;
}

std::string Encode(const Blob &b) {
  std::string out(1, b.mode);
  bootstrap::PutU32(&out, static_cast<uint32_t>(b.world_rank));
  bootstrap::PutU32(&out, static_cast<uint32_t>(b.world_size));
  bootstrap::PutU32(&out, static_cast<uint32_t>(b.device));
  bootstrap::PutBytes(&out, b.host);
  bootstrap::PutBytes(&out, b.ccl_id);
  bootstrap::PutBytes(&out, b.node);
  return out;
}

// Reads what Encode wrote; false when the bytes are not one.
bool Decode(const std::string &in, Blob *b) {
  const auto *p = reinterpret_cast<const unsigned char *>(in.data());
  size_t at = 13;
  if (in.size() < at) return false;
  b->mode = in[0];
  b->world_rank = static_cast<int>(bootstrap::GetU32(p + 1));
  b->world_size = static_cast<int>(bootstrap::GetU32(p + 5));
  b->device = static_cast<int>(bootstrap::GetU32(p + 9));
  for (std::string *s : {&b->host, &b->ccl_id, &b->node}) {
    if (in.size() < at + 8) return false;
    const uint64_t n = bootstrap::GetU64(p + at);
    at += 8;
    if (n > in.size() - at) return false;
    s->assign(in, at, n);
    at += n;
  }
  return at == in.size();
}

Status MpiCommunicator(const std::vector<Blob> &all, int rank,
                       std::unique_ptr<Communicator> *out) {
  std::vector<int> members, seen(static_cast<size_t>(all[0].world_size), 0);
  for (const Blob &b : all) {
    if (b.world_size != all[0].world_size || b.world_rank < 0 ||
        b.world_rank >= b.world_size || seen[static_cast<size_t>(b.world_rank)]++ > 0) {
      std::vector<std::string> labels;
      for (const Blob &x : all) {
        labels.push_back("world rank " + std::to_string(x.world_rank) + " of " +
                         std::to_string(x.world_size) + " on " + x.host);
      }
      return Status(
          infinicclInvalidUsage,
          "the ranks are not distinct processes of one MPI job: " + RanksByValue(labels));
    }
    members.push_back(b.world_rank);
  }
  MPI_Comm sub = MPI_COMM_NULL;
  INFINICCL_RETURN_IF_ERROR(CommOfMembers(MPI_COMM_WORLD, members, &sub));
  BindAs as;
  as.current_device = true;
  Status s = InitUnderMpiAs(sub, 0, nullptr, as, out);
  if (s.ok() && (*out)->rank() != rank) {
    s = MakeStatus(infinicclInternalError, "rank %d of the MPI communicator, not %d",
                   (*out)->rank(), rank);
  }
  mpi::SerialLock lock;
  MPI_Comm_free(&sub);  // InitUnderMpi keeps a duplicate
  return s;
}

// The CCL's communicator of rank 0's id, on `c`.
Status AttachCcl(CclProvider *ccl, const std::string &ccl_id, int nranks, int rank,
                 Communicator &c) {
  infinicclUniqueId id;
  if (ccl_id.size() != sizeof id.internal) {
    return MakeStatus(infinicclInternalError, "rank 0 sent a CCL id of %zu bytes",
                      ccl_id.size());
  }
  ccl_id.copy(id.internal, sizeof id.internal);
  std::unique_ptr<Backend> backend;
  INFINICCL_RETURN_IF_ERROR(ccl->CreateComm(nranks, id, rank, &backend));
  c.set_ccl_backend(std::move(backend));
  return Status::Ok();
}

// The calling thread's current device of `kind`'s runtime, as
// ncclCommInitRank takes it; kCpu: host memory only.
Status BindCurrent(DeviceKind kind, int local_rank, Communicator &c) {
  Communicator::Binding b;
  b.local_rank.rank = local_rank;
  b.local_rank.source = "the bootstrap";
  if (kind != DeviceKind::kCpu) {
    b.kind = kind;
    INFINICCL_RETURN_IF_ERROR(DeviceRegistry::Get(kind)->GetDevice(&b.device));
    INFINICCL_INFO("bound to %s device %d, the calling thread's current device",
                   DeviceKindName(kind), b.device);
  }
  c.set_binding(b);
  return Status::Ok();
}

Status CclCommunicator(CclProvider *ccl, const std::string &ccl_id, int nranks, int rank,
                       std::unique_ptr<Communicator> *out) {
  std::unique_ptr<Communicator> c = CommFactory::New();
  CommFactory::SetPlace(*c, rank, nranks);
  INFINICCL_RETURN_IF_ERROR(BindCurrent(ccl->kind(), -1, *c));
  INFINICCL_RETURN_IF_ERROR(AttachCcl(ccl, ccl_id, nranks, rank, *c));
  *out = std::move(c);
  return Status::Ok();
}

// Every rank on this node, none under MPI: shared memory for every call,
// and the CCL beside it when every rank has one (`ccl` non-null).
Status NodeCommunicator(Exchange &session, CclProvider *ccl, const std::string &ccl_id,
                        std::unique_ptr<Communicator> *out) {
  std::unique_ptr<Communicator> c = CommFactory::New();
  const int rank = session.rank(), nranks = session.size();
  CommFactory::SetPlace(*c, rank, nranks);
  const std::vector<DeviceRuntime *> active = DeviceRegistry::Active();
  const DeviceKind kind =
      ccl != nullptr ? ccl->kind() : active.empty() ? DeviceKind::kCpu : active.front()->kind();
  INFINICCL_RETURN_IF_ERROR(BindCurrent(kind, rank, *c));
  if (ccl != nullptr) INFINICCL_RETURN_IF_ERROR(AttachCcl(ccl, ccl_id, nranks, rank, *c));
  INFINICCL_RETURN_IF_ERROR(CommFactory::FinishOnNode(*c, session));
  PageLockShm(*c);
  *out = std::move(c);
  return Status::Ok();
}

}  // namespace

Status NewUniqueId(infinicclUniqueId *id) {
  return bootstrap::Rendezvous::Create(id);
}

Status InitWithUniqueId(int nranks, const infinicclUniqueId &id, int rank,
                        std::unique_ptr<Communicator> *out) {
  Blob mine;
  int initialised = 0, finalised = 0;
  MPI_Initialized(&initialised);
  MPI_Finalized(&finalised);
  std::string why;
  CclProvider *ccl = nullptr;
  if (initialised && !finalised) {
    mine.mode = Runtime::CheckActive().ok() ? kUnderMpi : kMpiWithoutInit;
    MPI_Comm_rank(MPI_COMM_WORLD, &mine.world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &mine.world_size);
  } else if ((ccl = FirstUsableCcl(&why)) != nullptr) {
    mine.mode = kCcl;
    (void)DeviceRegistry::Get(ccl->kind())->GetDevice(&mine.device);
    infinicclUniqueId ccl_id;
    // A failure still joins, so that no rank waits for this one.
    const Status made = rank == 0 ? ccl->GetUniqueId(&ccl_id) : Status::Ok();
    if (!made.ok()) {
      mine.mode = kNeither;
      why = made.message();
    } else if (rank == 0) {
      mine.ccl_id.assign(ccl_id.internal, sizeof ccl_id.internal);
    }
  }
  char host[256] = "?";
  gethostname(host, sizeof host - 1);
  mine.host = host;
  mine.node = NodeKey(mine.host);

  std::vector<std::string> blobs;
  std::unique_ptr<Exchange> session;
  INFINICCL_RETURN_IF_ERROR(
      bootstrap::Rendezvous::Join(id, nranks, rank, Encode(mine), &blobs, &session));
  std::vector<Blob> all(blobs.size());
  std::vector<std::string> modes;
  std::vector<int> on_node;
  for (size_t r = 0; r < blobs.size(); ++r) {
    if (!Decode(blobs[r], &all[r])) {
      return MakeStatus(infinicclInternalError, "rank %zu's bootstrap blob is malformed",
                        r);
    }
    modes.push_back(ModeText(all[r].mode));
    if (all[r].host == mine.host) on_node.push_back(static_cast<int>(r));
  }
  INFINICCL_INFO("bootstrap: rank %d of %d; ranks %s share host %s", rank, nranks,
                 RankList(on_node).c_str(), mine.host.c_str());
  bool all_mpi = true, all_ccl = true, none_mpi = true, one_node = true;
  for (const Blob &b : all) {
    all_mpi = all_mpi && b.mode == kUnderMpi;
    all_ccl = all_ccl && b.mode == kCcl;
    none_mpi = none_mpi && (b.mode == kCcl || b.mode == kNeither);
    one_node = one_node && b.node == all[0].node;
  }
  if (all_mpi) return MpiCommunicator(all, rank, out);
  if (none_mpi && one_node) {
    // The CCL beside shared memory only where every rank drives a device
    // of its own, as under MPI (a CCL refuses two ranks on one device).
    bool own_devices = all_ccl;
    for (size_t r = 0; r < all.size() && own_devices; ++r)
      for (size_t q = 0; q < r; ++q) own_devices = own_devices && all[q].device != all[r].device;
    if (all_ccl && !own_devices) {
      INFINICCL_INFO("ranks of this node share a device: their device buffers go through the "
                     "node's shared memory, not %s", ccl->Name());
    }
    return NodeCommunicator(*session, own_devices ? ccl : nullptr, all[0].ccl_id, out);
  }
  if (all_ccl) return CclCommunicator(ccl, all[0].ccl_id, nranks, rank, out);
  std::string text;
  if (none_mpi) {
    std::vector<std::string> hosts;
    for (const Blob &b : all) hosts.push_back(b.host);
    text = "the ranks are on more than one node (" + RanksByValue(hosts) +
           ") and not every one has a usable native CCL; across nodes host buffers need "
           "MPI: launch under icclrun, mpirun or srun and call infinicclInit first; here: " +
           RanksByValue(modes);
  } else {
    text = "every rank needs MPI (launch with icclrun, mpirun or srun, and call "
           "infinicclInit first), or else none may run under MPI; here: " +
           RanksByValue(modes);
  }
  if (mine.mode == kNeither && !why.empty()) text += " (this rank: " + why + ")";
  return Status(infinicclInvalidUsage, text);
}

}  // namespace infiniccl
