#include "output.h"

#include <algorithm>
#include <cmath>
#include <fstream>

#include "collective.h"

namespace bench {
namespace {

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
  if (row.measured) {
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

std::string JsonString(const std::string &s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
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

}  // namespace

void PrintHeader(std::FILE *out, const Env &env) {
  const Options &o = *env.opt;
  int code = 0;
  infinicclGetVersion(&code);
  char lib[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  MPI_Get_library_version(lib, &len);
  std::string mpi(lib, static_cast<size_t>(len));
  mpi = mpi.substr(0, mpi.find('\n'));
  while (!mpi.empty() && (mpi.back() == '\r' || mpi.back() == ' ')) mpi.pop_back();
  std::fprintf(out,
               "# infiniccl-bench, InfiniCCL %d.%d.%d (library code %d, header %d)\n",
               code / 10000, code / 100 % 100, code % 100, code, INFINICCL_VERSION_CODE);
  std::fprintf(out, "# MPI library: %s\n", mpi.c_str());
  std::fprintf(out, "# device: %s\n", env.device->Description().c_str());
  if (!env.device->IsHostMemory())
    std::fprintf(out,
                 "# stage_* copies: MemcpyAsync + StreamSynchronize on one stream; "
                 "stage_reuse_* host buffers: %s; stage_alloc_* host buffers: malloc "
                 "per call\n",
                 env.device->StagingHostMemory().c_str());
  std::fprintf(out,
               "# ranks=%d warmup=%d iters=%d repeat=%d dtype=%s op=%s root=%d "
               "inplace=%s validate=%s\n",
               env.nranks, o.warmup, o.iters, o.repeat, o.dtype->name, o.op->name, o.root,
               Yes(o.inplace), Yes(o.validate));
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
      "# Avg on raw MPI modes is MPI_SUM followed by a local division\n");
  std::fflush(out);
}

void PrintResults(std::FILE *out, const Env &env, const std::vector<Result> &rows) {
  const Options &o = *env.opt;
  const Mode *current = nullptr;
  std::string na;
  uint64_t wrong = 0;
  StagingTotals staging;
  auto end_block = [&] {
    if (current && !na.empty()) std::fprintf(out, "#  N/A: %s\n", na.c_str());
    if (current && staging.measured) PrintStaging(out, staging);
    na.clear();
    staging = StagingTotals{};
  };
  for (const Result &r : rows) {
    if (r.mode != current) {
      end_block();
      current = r.mode;
      std::fprintf(out, "#\n# %s: %s%s\n", r.mode->name.c_str(),
                   r.mode->description.c_str(),
                   o.inplace && !SupportsInplace(*r.mode) ? " (--inplace does not apply)"
                   : o.inplace                            ? " (in place)"
                                                          : "");
      std::fprintf(out, "#%14s %16s %9s %6s %5s %12s %12s %12s %8s\n", "size(B)",
                   "count(elements)", "type", "redop", "root", "time(us)", "algbw(GB/s)",
                   "busbw(GB/s)", "#wrong");
    }
    const Row row = MakeRow(env, r);
    if (!row.measured) na = r.unavailable;
    wrong += r.wrong;
    staging.Add(r);
    const std::string wrong_text =
        r.validated ? std::to_string(r.wrong) : std::string("N/A");
    std::fprintf(out, "%15zu %16zu %9s %6s %5d %12s %12s %12s %8s\n", r.layout.bytes,
                 r.layout.total_count, o.dtype->name, row.redop, row.root,
                 row.measured ? Fixed(row.time_us, 2).c_str() : "N/A",
                 row.measured ? Fixed(row.algbw, 3).c_str() : "N/A",
                 row.measured ? Fixed(row.busbw, 3).c_str() : "N/A", wrong_text.c_str());
  }
  end_block();
  std::fprintf(out, "#\n");
  PrintComparisons(out, rows);
  if (o.validate)
    std::fprintf(out, "# Wrong elements, all modes and ranks: %llu %s\n",
                 static_cast<unsigned long long>(wrong), wrong ? "FAILED" : "OK");
  std::fflush(out);
}

void PrintModeList(std::FILE *out) {
  for (const Mode &m : AllModes())
    std::fprintf(out, "%-28s %s\n", m.name.c_str(), m.description.c_str());
  std::fprintf(out, "%-28s %s\n%-28s %s\n", "stage_alloc", "= stage_alloc_allreduce",
               "stage_reuse", "= stage_reuse_allreduce");
}

bool WriteJson(const std::string &path, const Env &env, const std::vector<Result> &rows,
               std::string *error) {
  std::ofstream f(path);
  if (!f) {
    *error = "cannot write " + path;
    return false;
  }
  f << "[\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const Result &r = rows[i];
    const Row row = MakeRow(env, r);
    f << "  {\"mode\": " << JsonString(r.mode->name)
      << ", \"collective\": " << JsonString(Info(r.mode->coll).name)
      << ", \"device\": " << JsonString(env.device->Name())
      << ", \"bytes\": " << r.layout.bytes << ", \"count\": " << r.layout.total_count
      << ", \"dtype\": " << JsonString(env.opt->dtype->name)
      << ", \"op\": " << JsonString(row.redop) << ", \"root\": " << row.root
      << ", \"inplace\": "
      << (env.opt->inplace && SupportsInplace(*r.mode) ? "true" : "false")
      << ", \"nranks\": " << env.nranks
      << ", \"time_us\": " << (row.measured ? Fixed(row.time_us, 3) : "null")
      << ", \"algbw_gbps\": " << (row.measured ? Fixed(row.algbw, 6) : "null")
      << ", \"busbw_gbps\": " << (row.measured ? Fixed(row.busbw, 6) : "null")
      << ", \"wrong\": " << (r.validated ? std::to_string(r.wrong) : "null")
      << ", \"staging_allocs\": "
      << (r.staging_measured ? std::to_string(r.staging_allocs) : "null")
      << ", \"unavailable\": " << (row.measured ? "null" : JsonString(r.unavailable))
      << "}" << (i + 1 < rows.size() ? "," : "") << "\n";
  }
  f << "]\n";
  f.close();
  if (!f) {
    *error = "error writing " + path;
    return false;
  }
  return true;
}

bool WriteCsv(const std::string &path, const Env &env, const std::vector<Result> &rows,
              std::string *error) {
  std::ofstream f(path);
  if (!f) {
    *error = "cannot write " + path;
    return false;
  }
  f << "mode,collective,device,bytes,count,dtype,op,root,inplace,nranks,time_us,"
       "algbw_gbps,busbw_gbps,wrong,staging_allocs\n";
  for (const Result &r : rows) {
    const Row row = MakeRow(env, r);
    f << r.mode->name << ',' << Info(r.mode->coll).name << ',' << env.device->Name()
      << ',' << r.layout.bytes << ',' << r.layout.total_count << ','
      << env.opt->dtype->name << ',' << row.redop << ',' << row.root << ','
      << (env.opt->inplace && SupportsInplace(*r.mode) ? 1 : 0) << ',' << env.nranks
      << ',' << (row.measured ? Fixed(row.time_us, 3) : "") << ','
      << (row.measured ? Fixed(row.algbw, 6) : "") << ','
      << (row.measured ? Fixed(row.busbw, 6) : "") << ','
      << (r.validated ? std::to_string(r.wrong) : "") << ','
      << (r.staging_measured ? std::to_string(r.staging_allocs) : "") << '\n';
  }
  f.close();
  if (!f) {
    *error = "error writing " + path;
    return false;
  }
  return true;
}

}  // namespace bench
