#include "output.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <ctime>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

#include "collective.h"

namespace bench {
namespace {

// A return_allreduce row: whether switches were counted (Linux), and
// whether some calls were not switched out.
bool Counted(const Result &r) {
  return r.return_switched != std::numeric_limits<int>::max();
}
bool HasUnswitched(const Result &r) {
  return std::isfinite(r.return_unswitched_us);
}

struct Row {
  const Result *r;
  const char *redop;  // "none" where the collective has no operator
  int root;           // -1 where it has no root
  bool measured;
  double time_us, algbw, busbw;  // GB = 1e9 bytes
};

Row MakeRow(const Env &env, const Result &r) {
  const CollectiveInfo &info = Info(r.mode->coll);
  Row row{&r,
          info.has_op ? env.opt->op->name : "none",
          info.has_root ? env.opt->root : -1,
          r.unavailable.empty(),
          0,
          0,
          0};
  if (row.measured && r.mode->family == Family::kOverlap) {
    row.time_us = r.time_us;  // both_us; no bandwidth for a loop of kernels and calls
  } else if (row.measured) {
    row.time_us = r.time_us;
    row.algbw = r.time_us > 0 ? static_cast<double>(r.layout.bytes) / r.time_us / 1e3 : 0;
    row.busbw = row.algbw * BusFactor(r.mode->coll, env.nranks);
  }
  return row;
}

std::string Fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

const char *Yes(bool b) {
  return b ? "yes" : "no";
}

// The staging line under an infiniccl_ block: totals over its sizes.
struct StagingTotals {
  bool measured = false;
  uint64_t allocs = 0, staged = 0, pipelined = 0, held = 0, peak = 0;
  bool pinned = true;
  void Add(const Result &r) {
    if (!r.staging_measured) return;
    measured = true;
    allocs += r.staging_allocs;
    staged += r.staged_calls;
    pipelined += r.pipelined_calls;
    held = std::max(held, r.staging_held_bytes);
    peak = std::max(peak, r.staging_peak_bytes);
    if (r.staging_held_bytes > 0 && !r.staging_pinned) pinned = false;
  }
};

void PrintStaging(std::FILE *out, const StagingTotals &s) {
  std::fprintf(out,
               "#  staging (timed iterations, all sizes, largest rank): %llu "
               "allocations, %llu staged calls of which %llu pipelined; held %llu B "
               "after, peak %llu B since start, pinned %s\n",
               static_cast<unsigned long long>(s.allocs),
               static_cast<unsigned long long>(s.staged),
               static_cast<unsigned long long>(s.pipelined),
               static_cast<unsigned long long>(s.held),
               static_cast<unsigned long long>(s.peak),
               s.held == 0 ? "n/a (nothing held)" : Yes(s.pinned));
}

void PrintComparisons(std::FILE *out, const std::vector<Result> &rows) {
  // infiniccl_C next to host_C, for every C measured both ways.
  for (const Result &inf : rows) {
    if (inf.mode->family != Family::kInfiniccl || !inf.unavailable.empty()) continue;
    for (const Result &host : rows) {
      if (host.mode->family != Family::kHost || host.mode->coll != inf.mode->coll ||
          host.elements != inf.elements || !host.unavailable.empty())
        continue;
      std::fprintf(out,
                   "# %-22s %15zu B: infiniccl %12.2f us, host %12.2f us, ratio %.3f\n",
                   Info(inf.mode->coll).label, inf.layout.bytes, inf.time_us,
                   host.time_us, host.time_us > 0 ? inf.time_us / host.time_us : 0.0);
    }
  }
}

// return_allreduce: the call alone next to call + synchronize, per size.
void PrintReturnTimes(std::FILE *out, const std::vector<Result> &rows, int iters) {
  bool first = true;
  for (const Result &r : rows) {
    if (r.mode->family != Family::kReturnTime || !r.unavailable.empty()) continue;
    if (first)
      std::fprintf(
          out,
          "# return time: host time of one infinicclAllReduce call until it "
          "returns (before any synchronize): the slowest rank's mean, median "
          "and largest; call + synchronize (mean, median); mean return / call+sync;\n"
          "#   switched: calls during which the scheduler switched the calling thread "
          "out (the most on any rank), unswitched: the slowest rank's mean over the "
          "others\n"
          "# %15s %14s %12s %12s %18s %12s %8s %9s %15s\n",
          "size(B)", "return(us)", "median(us)", "max(us)", "call+sync(us)", "median(us)",
          "ratio", "switched", "unswitched(us)");
    first = false;
    char switched[32] = "-", unswitched[32] = "-";
    if (Counted(r))
      std::snprintf(switched, sizeof switched, "%d/%d", r.return_switched, iters);
    if (HasUnswitched(r))
      std::snprintf(unswitched, sizeof unswitched, "%.2f", r.return_unswitched_us);
    std::fprintf(out, "# %15zu %14.2f %12.2f %12.2f %18.2f %12.2f %8.3f %9s %15s\n",
                 r.layout.bytes, r.return_us, r.return_median_us, r.return_max_us,
                 r.time_us, r.sync_median_us,
                 r.time_us > 0 ? r.return_us / r.time_us : 0.0, switched, unswitched);
  }
  if (!first) std::fprintf(out, "#\n");
}

std::string MpiLibrary() {
  char lib[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  MPI_Get_library_version(lib, &len);
  std::string mpi(lib, static_cast<size_t>(len));
  mpi = mpi.substr(0, mpi.find('\n'));
  while (!mpi.empty() && (mpi.back() == '\r' || mpi.back() == ' ' || mpi.back() == '\0'))
    mpi.pop_back();
  return mpi;
}

std::string Version() {
  int code = 0;
  infinicclGetVersion(&code);
  return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." +
         std::to_string(code % 100);
}

// RFC 4180: a field with a comma, quote or line break is quoted, quotes doubled.
std::string CsvField(const std::string &s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace

void PrintVersion(std::FILE *out) {
  int code = 0;
  infinicclGetVersion(&code);
  std::fprintf(out,
               "infiniccl-bench (InfiniCCL) %s (library code %d, header %d)\nMPI: %s\n",
               Version().c_str(), code, INFINICCL_VERSION_CODE, MpiLibrary().c_str());
}

void PrintHeader(std::FILE *out, const Env &env, const std::vector<const Mode *> &modes) {
  const Options &o = *env.opt;
  int code = 0;
  infinicclGetVersion(&code);
  std::fprintf(out, "# infiniccl-bench, InfiniCCL %s (library code %d, header %d)\n",
               Version().c_str(), code, INFINICCL_VERSION_CODE);
  std::fprintf(out, "# MPI library: %s\n", MpiLibrary().c_str());
  std::fprintf(out, "# device: %s\n", env.device->Description().c_str());
  if (!env.device->IsHostMemory())
    std::fprintf(out,
                 "# stage_* copies: MemcpyAsync + StreamSynchronize on one stream; "
                 "stage_reuse_* host buffers: %s; stage_alloc_* host buffers: malloc "
                 "per call\n",
                 env.device->StagingHostMemory().c_str());
  std::fprintf(out,
               "# ranks=%d warmup=%d iters=%d repeat=%d dtype=%s op=%s root=%d "
               "inplace=%s check=%s\n",
               env.nranks, o.warmup, o.iters, o.repeat, o.dtype->name, o.op->name, o.root,
               Yes(o.inplace), o.validate ? "1" : "0");
  for (const std::string &n : o.notes) std::fprintf(out, "# note: %s\n", n.c_str());
  std::fprintf(out, "# time(us): the slowest rank's mean per call over %d iterations",
               o.iters);
  if (o.repeat > 1)
    std::fprintf(
        out, "; the minimum of that over %d interleaved repeats of the whole mode list",
        o.repeat);
  std::fprintf(
      out,
      "\n# size(B), count(elements) as nccl-tests: count*typesize for AllReduce, "
      "Broadcast, Reduce, SendRecv, copies;\n"
      "#   the total over ranks, nranks*(count/nranks)*typesize, for AllGather, "
      "ReduceScatter, AllToAll, Gather, Scatter\n"
      "# algbw = size/time, GB = 1e9 B; busbw = algbw * factor: AllReduce 2(n-1)/n; "
      "ReduceScatter, AllGather, AllToAll, Gather, Scatter (n-1)/n; others 1\n"
      "# Avg on raw MPI modes is MPI_SUM followed by a local division\n"
      "#\n# modes:\n");
  for (const Mode *m : modes) {
    std::fprintf(out, "#   %-24s %s%s\n", m->name.c_str(), m->description.c_str(),
                 o.inplace && !SupportsInplace(*m) ? " (--inplace does not apply)"
                 : o.inplace                       ? " (in place)"
                                                   : "");
  }
  std::fprintf(out, "#\n#%14s %16s %9s %6s %5s %12s %12s %12s %8s  %s\n", "size(B)",
               "count(elements)", "type", "redop", "root", "time(us)", "algbw(GB/s)",
               "busbw(GB/s)", "#wrong", "mode");
  std::fflush(out);
}

// The overlap mode's lines: comments, so that nccl-tests' scrapers, which
// read rows as lines starting with a number, skip them.
void PrintOverlap(std::FILE *out, const Env &env, const Result &r) {
  const Options &o = *env.opt;
  std::fprintf(out,
               "# overlap: %d buckets of %zu B (%s %s infinicclAllReduce on a second "
               "stream), each after a %d us kernel on the compute stream%s\n",
               o.buckets, r.layout.bytes, o.dtype->name, o.op->name, o.kernel_us,
               !env.device->OverlapUnsupported().empty() || env.device->IsHostMemory()
                   ? ""
               : std::string(env.device->Name()) == "sim"
                   ? " (EMULATED kernels: infinicclSimKernel)"
                   : " (busy kernels on the GPU)");
  if (!r.unavailable.empty()) {
    std::fprintf(out, "#  N/A overlap: %s\n", r.unavailable.c_str());
    return;
  }
  const double mx = std::max(r.compute_us, r.comm_us);
  const double sum = r.compute_us + r.comm_us;
  std::fprintf(out,
               "#  %12s %12s %12s %12s %12s %9s %10s %8s\n", "compute(us)", "comm(us)",
               "both(us)", "max(us)", "sum(us)", "both/max", "efficiency", "#wrong");
  std::fprintf(out, "#  %12.1f %12.1f %12.1f %12.1f %12.1f %9.3f %10.3f %8s\n",
               r.compute_us, r.comm_us, r.both_us, mx, sum, mx > 0 ? r.both_us / mx : 0.0,
               OverlapEfficiency(r),
               r.validated ? std::to_string(r.wrong).c_str() : "N/A");
  std::fprintf(out,
               "#  (one loop each: the median over %d loops of the slowest rank's time%s; "
               "efficiency = "
               "(compute + comm - both) / min(compute, comm): 1 = fully hidden, 0 = "
               "serial)\n",
               o.iters, o.repeat > 1 ? ", minimum over repeats" : "");
}

void PrintRow(std::FILE *out, const Env &env, const Result &r) {
  const Options &o = *env.opt;
  if (r.mode->family == Family::kOverlap) {
    PrintOverlap(out, env, r);
    std::fflush(out);
    return;
  }
  const Row row = MakeRow(env, r);
  const std::string wrong_text =
      r.validated ? std::to_string(r.wrong) : std::string("N/A");
  std::fprintf(out, "%15zu %16zu %9s %6s %5d %12s %12s %12s %8s  %s\n", r.layout.bytes,
               r.layout.total_count, o.dtype->name, row.redop, row.root,
               row.measured ? Fixed(row.time_us, 2).c_str() : "N/A",
               row.measured ? Fixed(row.algbw, 3).c_str() : "N/A",
               row.measured ? Fixed(row.busbw, 3).c_str() : "N/A", wrong_text.c_str(),
               r.mode->name.c_str());
  // Why a mode cannot run, once per mode (the reason is the same at every size).
  static std::vector<const Mode *> explained;
  if (!row.measured &&
      std::find(explained.begin(), explained.end(), r.mode) == explained.end()) {
    explained.push_back(r.mode);
    std::fprintf(out, "#  N/A %s: %s\n", r.mode->name.c_str(), r.unavailable.c_str());
  }
  std::fflush(out);
}

void PrintSummary(std::FILE *out, const Env &env, const std::vector<Result> &rows) {
  const Options &o = *env.opt;
  uint64_t wrong = 0;
  double busbw_sum = 0;
  size_t measured = 0;
  std::fprintf(out, "#\n");
  // Per mode, in the order of --modes: staging totals and average busbw.
  std::vector<const Mode *> order;
  for (const Result &r : rows)
    if (std::find(order.begin(), order.end(), r.mode) == order.end())
      order.push_back(r.mode);
  for (const Mode *m : order) {
    StagingTotals staging;
    double sum = 0;
    size_t n = 0;
    for (const Result &r : rows) {
      if (r.mode != m) continue;
      const Row row = MakeRow(env, r);
      wrong += r.wrong;
      staging.Add(r);
      if (!row.measured || m->family == Family::kOverlap) continue;
      sum += row.busbw, ++n;
    }
    busbw_sum += sum, measured += n;
    if (n > 0)
      std::fprintf(out, "# %-26s avg busbw %10.3f GB/s over %zu sizes\n", m->name.c_str(),
                   sum / static_cast<double>(n), n);
    if (staging.measured) PrintStaging(out, staging);
  }
  std::fprintf(out, "#\n");
  PrintComparisons(out, rows);
  PrintReturnTimes(out, rows, o.iters);
  // nccl-tests' footers, spelled as it does, for the scripts that scrape them.
  if (o.validate)
    std::fprintf(out, "# %-20s : %llu %s\n", "Out of bounds values",
                 static_cast<unsigned long long>(wrong), wrong ? "FAILED" : "OK");
  else
    std::fprintf(out, "# %-20s : N/A (not checked: -c 0)\n", "Out of bounds values");
  std::fprintf(out, "# %-20s : %g \n#\n", "Avg bus bandwidth",
               measured ? busbw_sum / static_cast<double>(measured) : 0.0);
  std::fflush(out);
}

void PrintModeList(std::FILE *out) {
  for (const Mode &m : AllModes())
    std::fprintf(out, "%-28s %s\n", m.name.c_str(), m.description.c_str());
  std::fprintf(out, "%-28s %s\n%-28s %s\n", "stage_alloc", "= stage_alloc_allreduce",
               "stage_reuse", "= stage_reuse_allreduce");
}

bool OutputFiles::Open(const Options &opt, std::string *error) {
  json_path_ = opt.json_path;
  csv_path_ = opt.csv_path;
  if (!json_path_.empty()) {
    json_.open(json_path_);
    if (!json_) {
      *error = "cannot write --json file " + json_path_ + ": " + std::strerror(errno);
      return false;
    }
  }
  if (!csv_path_.empty()) {
    csv_.open(csv_path_);
    if (!csv_) {
      *error = "cannot write --csv file " + csv_path_ + ": " + std::strerror(errno);
      return false;
    }
  }
  return true;
}

bool OutputFiles::Write(const Env &env, const std::vector<Result> &rows,
                        std::string *error) {
  const Options &o = *env.opt;
  if (json_.is_open()) {
    using nlohmann::ordered_json;
    int code = 0;
    infinicclGetVersion(&code);
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    char date[32] = "";
    const std::time_t now = std::time(nullptr);
    std::tm utc{};
    gmtime_r(&now, &utc);
    std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &utc);
    ordered_json meta = {
        {"tool", "infiniccl-bench"},
        {"version", Version()},
        {"version_code", code},
        {"mpi_library", MpiLibrary()},
        {"nranks", env.nranks},
        {"device", env.device->Name()},
        {"device_description", env.device->Description()},
        {"dtype", o.dtype->name},
        {"op", o.op->name},
        {"root", o.root},
        {"inplace", o.inplace},
        {"warmup", o.warmup},
        {"iters", o.iters},
        {"repeat", o.repeat},
        {"check", o.validate},
        {"command_line", o.command_line},
        {"date", date},
        {"host", host},
    };
    ordered_json array = ordered_json::array();
    for (const Result &r : rows) {
      const Row row = MakeRow(env, r);
      ordered_json j = {
          {"mode", r.mode->name},
          {"collective", Info(r.mode->coll).name},
          {"device", env.device->Name()},
          {"bytes", r.layout.bytes},
          {"count", r.layout.total_count},
          {"dtype", o.dtype->name},
          {"op", row.redop},
          {"root", row.root},
          {"inplace", o.inplace && SupportsInplace(*r.mode)},
          {"nranks", env.nranks},
      };
      j["time_us"] = row.measured ? ordered_json(row.time_us) : ordered_json(nullptr);
      j["algbw_gbps"] = row.measured ? ordered_json(row.algbw) : ordered_json(nullptr);
      j["busbw_gbps"] = row.measured ? ordered_json(row.busbw) : ordered_json(nullptr);
      j["wrong"] = r.validated ? ordered_json(r.wrong) : ordered_json(nullptr);
      j["staging_allocs"] =
          r.staging_measured ? ordered_json(r.staging_allocs) : ordered_json(nullptr);
      if (r.mode->family == Family::kOverlap) {
        j["algbw_gbps"] = nullptr;
        j["busbw_gbps"] = nullptr;
        j["buckets"] = o.buckets;
        j["bucket_bytes"] = r.layout.bytes;
        j["kernel_us"] = o.kernel_us;
        j["compute_us"] = row.measured ? ordered_json(r.compute_us) : ordered_json(nullptr);
        j["comm_us"] = row.measured ? ordered_json(r.comm_us) : ordered_json(nullptr);
        j["both_us"] = row.measured ? ordered_json(r.both_us) : ordered_json(nullptr);
        j["overlap_efficiency"] =
            row.measured ? ordered_json(OverlapEfficiency(r)) : ordered_json(nullptr);
      }
      if (r.mode->family == Family::kReturnTime) {
        j["return_us"] = row.measured ? ordered_json(r.return_us) : ordered_json(nullptr);
        j["return_median_us"] =
            row.measured ? ordered_json(r.return_median_us) : ordered_json(nullptr);
        j["return_max_us"] = row.measured ? ordered_json(r.return_max_us) : ordered_json(nullptr);
        j["sync_median_us"] =
            row.measured ? ordered_json(r.sync_median_us) : ordered_json(nullptr);
        j["sync_p90_us"] = row.measured ? ordered_json(r.sync_p90_us) : ordered_json(nullptr);
        j["return_switched"] = row.measured && Counted(r)
                                   ? ordered_json(r.return_switched)
                                   : ordered_json(nullptr);
        j["return_unswitched_us"] = row.measured && HasUnswitched(r)
                                        ? ordered_json(r.return_unswitched_us)
                                        : ordered_json(nullptr);
      }
      j["unavailable"] =
          row.measured ? ordered_json(nullptr) : ordered_json(r.unavailable);
      array.push_back(std::move(j));
    }
    const ordered_json doc = {{"metadata", std::move(meta)}, {"rows", std::move(array)}};
    json_ << doc.dump(1) << "\n";
    json_.close();
    if (!json_) {
      *error = "error writing " + json_path_;
      return false;
    }
  }
  if (csv_.is_open()) {
    csv_ << "mode,collective,device,bytes,count,dtype,op,root,inplace,nranks,time_us,"
            "algbw_gbps,busbw_gbps,wrong,staging_allocs,unavailable,return_us,compute_us,"
            "comm_us,both_us,overlap_efficiency,return_median_us,return_max_us,"
            "sync_median_us,return_switched,return_unswitched_us,sync_p90_us\n";
    for (const Result &r : rows) {
      const Row row = MakeRow(env, r);
      const bool loop = r.mode->family == Family::kOverlap;  // no bandwidth
      csv_ << CsvField(r.mode->name) << ',' << Info(r.mode->coll).name << ','
           << env.device->Name() << ',' << r.layout.bytes << ',' << r.layout.total_count
           << ',' << o.dtype->name << ',' << row.redop << ',' << row.root << ','
           << (o.inplace && SupportsInplace(*r.mode) ? 1 : 0) << ',' << env.nranks << ','
           << (row.measured ? Fixed(row.time_us, 3) : "") << ','
           << (row.measured && !loop ? Fixed(row.algbw, 6) : "") << ','
           << (row.measured && !loop ? Fixed(row.busbw, 6) : "") << ','
           << (r.validated ? std::to_string(r.wrong) : "") << ','
           << (r.staging_measured ? std::to_string(r.staging_allocs) : "") << ','
           << (row.measured ? "" : CsvField(r.unavailable)) << ',';
      const bool ret = row.measured && r.mode->family == Family::kReturnTime;
      const bool ovl = row.measured && r.mode->family == Family::kOverlap;
      csv_ << (ret ? Fixed(r.return_us, 3) : "") << ','
           << (ovl ? Fixed(r.compute_us, 3) : "") << ','
           << (ovl ? Fixed(r.comm_us, 3) : "") << ',' << (ovl ? Fixed(r.both_us, 3) : "")
           << ',' << (ovl ? Fixed(OverlapEfficiency(r), 6) : "") << ','
           << (ret ? Fixed(r.return_median_us, 3) : "") << ','
           << (ret ? Fixed(r.return_max_us, 3) : "") << ','
           << (ret ? Fixed(r.sync_median_us, 3) : "") << ','
           << (ret && Counted(r) ? std::to_string(r.return_switched) : "") << ','
           << (ret && HasUnswitched(r) ? Fixed(r.return_unswitched_us, 3) : "") << ','
           << (ret ? Fixed(r.sync_p90_us, 3) : "") << '\n';
    }
    csv_.close();
    if (!csv_) {
      *error = "error writing " + csv_path_;
      return false;
    }
  }
  return true;
}

}  // namespace bench
