#include "report.h"

#include <mpi.h>
#include <unistd.h>

#include <cctype>
#include <cstring>
#include <memory>

#include "backend/ccl/ccl_provider.h"
#include "backend/mpi/gpu_aware.h"
#include "comm/communicator.h"
#include "core/config.h"
#include "core/reduce.h"
#include "comm/runtime.h"
#include "comm/comm_init.h"
#include "device/registry.h"

namespace info {

namespace {

using infiniccl::DeviceKind;
using infiniccl::DeviceKindName;

std::string FirstLine(const std::string &s) {
  return s.substr(0, s.find('\n'));
}

std::string Trim(const std::string &s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

void CollectBuild(RankReport *r) {
  int code = 0;
  infinicclGetVersion(&code);
  r->version_code = code;
  r->version = std::to_string(code / 10000) + "." + std::to_string((code / 100) % 100) +
               "." + std::to_string(code % 100);
  for (DeviceKind k : infiniccl::DeviceRegistry::Built()) {
    r->devices_built.push_back(DeviceKindName(k));
  }
  // Every backend compiled in: MPI always, each CCL whose provider exists.
  // A CCL's version comes from its library (ncclGetVersion needs no GPU).
  r->backends = {"mpi"};
  r->backend_versions = {""};  // filled by CollectMpi
  for (DeviceKind k : {DeviceKind::kCuda, DeviceKind::kMaca, DeviceKind::kHip,
                       DeviceKind::kAscend, DeviceKind::kCambricon}) {
    if (infiniccl::CclProvider *p = infiniccl::CclForKind(k)) {
      std::string name = p->Name();
      for (char &c : name)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      r->backends.push_back(name);
      r->backend_versions.push_back(p->Version());
    }
  }
#if MPI_VERSION >= 4
  r->large_count = "MPI-4 large-count calls (MPI_*_c) above INT_MAX";
#else
  r->large_count =
      "MPI-3: chunked element-wise calls and derived datatypes above INT_MAX";
#endif
}

void CollectMpi(RankReport *r) {
  char lib[MPI_MAX_LIBRARY_VERSION_STRING] = "";
  int len = 0;
  MPI_Get_library_version(lib, &len);
  r->mpi_library = Trim(FirstLine(lib));
  r->mpi_flavor = MpiFlavorFromLibraryVersion(lib);
  r->mpi_version = MpiVersionFromLibraryVersion(lib);
  const char *flavor = r->mpi_flavor == "openmpi" ? "Open MPI"
                       : r->mpi_flavor == "mpich" ? "MPICH"
                                                  : "MPI";
  if (!r->backend_versions.empty())
    r->backend_versions[0] = std::string(flavor) + " " + r->mpi_version;
  int major = 0, minor = 0;
  MPI_Get_version(&major, &minor);
  r->mpi_standard = std::to_string(major) + "." + std::to_string(minor);
  r->mpi_standard_headers =
      std::to_string(MPI_VERSION) + "." + std::to_string(MPI_SUBVERSION);
  const infiniccl::GpuAwareness g = infiniccl::QueryMpiGpuAware(DeviceKind::kCuda);
  r->mpi_gpu_aware = g.supported;
  r->mpi_gpu_aware_how = g.how;
}

void CollectProcess(RankReport *r) {
  MPI_Comm_rank(MPI_COMM_WORLD, &r->rank);
  MPI_Comm_size(MPI_COMM_WORLD, &r->nranks);
  char host[MPI_MAX_PROCESSOR_NAME] = "";
  int len = 0;
  MPI_Get_processor_name(host, &len);
  r->host = host;
  r->pid = static_cast<long>(getpid());
  for (infiniccl::DeviceRuntime *rt : infiniccl::DeviceRegistry::Active()) {
    DeviceSummary d;
    d.kind = DeviceKindName(rt->kind());
    d.description = rt->description();
    d.count = rt->DeviceCount();
    d.emulated = rt->emulated();
    const char *wait = rt->DeviceCount() > 0 ? rt->GateMechanism() : nullptr;
    d.device_wait = wait != nullptr ? wait : "none (calls on its memory stay synchronous)";
    r->devices.push_back(d);
  }
  std::string why;
  r->async_calls = infiniccl::AsyncAllowed(&why)
                       ? "queued to each communicator's progress engine; the call returns "
                         "at once, ordered on the caller's stream"
                       : "synchronous: " + why;
  // Why a vendor runtime built in has no device: its own words (the CUDA
  // runtime's error string), which the library otherwise logs only at INFO.
  const infiniccl::Config &config = infiniccl::GlobalConfig();
  bool any_vendor = false;
  for (DeviceKind k : infiniccl::DeviceRegistry::Built()) {
    if (k == DeviceKind::kCpu || k == DeviceKind::kSim) continue;
    any_vendor = true;
    infiniccl::DeviceRuntime *rt = infiniccl::DeviceRegistry::Get(k);
    if (rt == nullptr || rt->DeviceCount() > 0) continue;
    int device = -1;
    const infiniccl::Status st = rt->GetDevice(&device);
    r->no_device_reasons.push_back(std::string(DeviceKindName(k)) + ": " +
                                   (st.ok() ? "no device" : st.message()));
  }
  if (config.device == "cpu") {
    r->no_device_reasons.push_back("INFINICCL_DEVICE=cpu: no device runtime is used");
  } else if (!any_vendor) {
    r->no_device_reasons.push_back(
        "no vendor device runtime is built in (configure with WITH_NVIDIA, WITH_METAX, "
        "WITH_HIP, WITH_ASCEND, WITH_CAMBRICON, ...); INFINICCL_DEVICE=sim enables the "
        "emulated device");
  }
}

void CollectSettings(RankReport *r) {
  const infiniccl::Config &config = infiniccl::GlobalConfig();
  const infiniccl::Config defaults;
  for (const infiniccl::Config::Entry &e : infiniccl::Config::Table()) {
    r->settings.push_back({e.name, e.Value(config), e.default_value, e.doc,
                           e.Value(config) == e.Value(defaults)});
  }
  r->warnings = config.warnings;
  r->unknown_variables = config.unknown_variables;
}

// Why this rank's communicator has no CCL communicator, in the order the
// library decides it (comm/comm_groups.cpp: AttachCcl); the last reason is that
// of another rank, since the decision is collective.
std::string WhyNoCcl(const RankReport &r, const infiniccl::Communicator::Binding &b) {
  if (r.backends.size() == 1)
    return "no native CCL is built in (configure WITH_NCCL, WITH_MCCL, WITH_RCCL, WITH_HCCL "
           "or WITH_CNCL)";
  if (infiniccl::GlobalConfig().backend == infiniccl::BackendChoice::kMpi)
    return "INFINICCL_BACKEND=mpi";
  if (b.device < 0) return "this rank is bound to no device (host memory only)";
  if (infiniccl::CclForKind(b.kind) == nullptr)
    return std::string("no CCL for ") + DeviceKindName(b.kind) + " devices";
  if (b.shared)
    return "this rank shares device " + std::to_string(b.device) +
           " with another local rank (a CCL needs one device per rank)";
  return "another rank cannot join, or the CCL failed (INFINICCL_DEBUG=INFO "
         "says which)";
}

}  // namespace

std::string MpiFlavorFromLibraryVersion(const std::string &library_version) {
  const std::string first = FirstLine(library_version);
  if (first.find("Open MPI") != std::string::npos) return "openmpi";
  // MPICH and its derivatives (Intel MPI, MVAPICH) share the Hydra launcher
  // and the MPI_LOCALRANKID convention.
  if (first.find("MPICH") != std::string::npos ||
      first.find("Intel(R) MPI") != std::string::npos ||
      first.find("MVAPICH") != std::string::npos) {
    return "mpich";
  }
  return "unknown";
}

std::string MpiVersionFromLibraryVersion(const std::string &library_version) {
  const std::string first = FirstLine(library_version);
  for (size_t i = 0; i < first.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(first[i]))) continue;
    if (i > 0 && std::isalnum(static_cast<unsigned char>(first[i - 1])) &&
        first[i - 1] != 'v') {
      continue;  // part of a word such as "MVAPICH2"
    }
    size_t j = i;
    bool dotted = false;
    while (j < first.size() &&
           (std::isdigit(static_cast<unsigned char>(first[j])) || first[j] == '.')) {
      dotted = dotted || first[j] == '.';
      ++j;
    }
    while (j > i && first[j - 1] == '.') --j;
    if (dotted) return first.substr(i, j - i);
    i = j;
  }
  return "";
}

// "AllReduce to any size, ..." with the limits of INFINICCL_SHM=auto.
static std::string ShmLine(infiniccl::Communicator *c) {
  using infiniccl::CollKind;
  const infiniccl::Config &cfg = infiniccl::GlobalConfig();
  if (cfg.shm == infiniccl::Tristate::kOff) return "no (INFINICCL_SHM=0): MPI";
  if (c->shm_backend() == nullptr) {
    return c->size() < 2 ? "no (one rank)" : "no (the ranks span nodes, or no segment): MPI";
  }
  const infiniccl::Topology *topo = c->topology();
  if (cfg.shm == infiniccl::Tristate::kOn ||
      (cfg.shm_max_bytes == SIZE_MAX && topo != nullptr && topo->DevicesWithoutCcl())) {
    return std::string("AllReduce, ReduceScatter, Reduce, AllGather, Broadcast, Gather, Scatter, "
                       "AllToAll at every size (") +
           (cfg.shm == infiniccl::Tristate::kOn ? "INFINICCL_SHM=1"
                                                : "every rank drives a device without a CCL") +
           ")";
  }
  const auto mib = [](size_t b) {
    if (b == SIZE_MAX) return std::string("any size");
    return b >= (size_t{1} << 20) ? std::to_string(b >> 20) + " MiB"
                                  : std::to_string(b >> 10) + " KiB";
  };
  using S = infiniccl::ShmBackend;
  return "AllReduce to " + mib(S::MaxBytes(CollKind::kAllReduce)) + ", ReduceScatter to " +
         mib(S::MaxBytes(CollKind::kReduceScatter)) + ", Reduce to " +
         mib(S::MaxBytes(CollKind::kReduce)) + ", AllGather to " +
         mib(S::MaxBytes(CollKind::kAllGather)) + ", Broadcast to " +
         mib(S::MaxBytes(CollKind::kBroadcast)) + ", Gather to " +
         mib(S::MaxBytes(CollKind::kGather)) + ", Scatter to " +
         mib(S::MaxBytes(CollKind::kScatter)) + ", AllToAll to " +
         mib(S::MaxBytes(CollKind::kAllToAll)) + " per rank (AllToAll: per block); MPI above";
}

// "avx2 (INFINICCL_SIMD=auto; this CPU runs up to avx2)".
static std::string SimdLine() {
  return std::string(infiniccl::SimdLevelName(infiniccl::ReduceSimdLevel())) +
         " (INFINICCL_SIMD=" + infiniccl::GlobalConfig().simd + "; this CPU runs up to " +
         infiniccl::SimdLevelName(infiniccl::BestSimdLevel()) + ")";
}

bool CollectReport(infinicclComm_t comm, RankReport *out, std::string *error) {
  *out = RankReport{};
  CollectBuild(out);
  CollectMpi(out);
  CollectProcess(out);
  CollectSettings(out);

  std::shared_ptr<infiniccl::Communicator> c;
  const infiniccl::Status st = infiniccl::Runtime::Lookup(comm, &c);
  if (!st.ok()) {
    *error = "looking up the communicator: " + st.message();
    return false;
  }
  const infiniccl::Communicator::Binding &b = c->binding();
  out->local_rank = b.local_rank.rank;
  out->local_rank_source = b.local_rank.source;
  out->device_kind = DeviceKindName(b.kind);
  out->device_id = b.device;
  if (b.kind != DeviceKind::kCpu) {
    if (infiniccl::DeviceRuntime *rt = infiniccl::DeviceRegistry::Get(b.kind)) {
      out->device_description = rt->description();
      out->device_emulated = rt->emulated();
    }
  }
  out->ccl_formed = c->ccl_backend() != nullptr;
  if (out->ccl_formed) {
    if (infiniccl::CclProvider *p = infiniccl::CclForKind(b.kind)) out->ccl = p->Name();
  } else {
    out->ccl_why_not = WhyNoCcl(*out, b);
  }
  if (const infiniccl::Topology *t = c->topology()) out->topology = t->Describe();
  out->shm = ShmLine(c.get());
  out->reduce_simd = SimdLine();
  return true;
}

}  // namespace info
