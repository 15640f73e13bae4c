#include "format.h"

#include <cctype>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

namespace info {

namespace {

// Fixed-width label column for the human output.
std::string Line(const char *label, const std::string &value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "  %-22s ", label);
  return buf + value + "\n";
}

// `text` in lines of at most 80 columns, each indented by `indent` spaces.
std::string Wrap(const std::string &text, size_t indent) {
  std::string out, line;
  std::istringstream words(text);
  for (std::string w; words >> w; line += (line.empty() ? "" : " ") + w) {
    if (!line.empty() && indent + line.size() + 1 + w.size() > 80) {
      out += std::string(indent, ' ') + line + "\n";
      line.clear();
    }
  }
  return out + std::string(indent, ' ') + line + "\n";
}

std::string Join(const std::vector<std::string> &v, const char *sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

}  // namespace

std::string FormatJson(const RankReport &r) {
  using nlohmann::ordered_json;
  ordered_json devices = ordered_json::array();
  for (const DeviceSummary &d : r.devices) {
    devices.push_back({{"kind", d.kind},
                       {"description", d.description},
                       {"count", d.count},
                       {"emulated", d.emulated},
                       {"device_wait", d.device_wait}});
  }
  ordered_json versions = ordered_json::object();
  for (size_t i = 0; i < r.backends.size() && i < r.backend_versions.size(); ++i)
    versions[r.backends[i]] = r.backend_versions[i];
  ordered_json settings = ordered_json::object(), defaults = ordered_json::object();
  for (const Setting &s : r.settings) {
    settings[s.name] = s.value;
    defaults[s.name] = s.default_value;
  }
  const ordered_json j = {
      {"version", r.version},
      {"version_code", r.version_code},
      {"backends", r.backends},
      {"backend_versions", versions},
      {"devices_built", r.devices_built},
      {"large_count", r.large_count},
      {"mpi_flavor", r.mpi_flavor},
      {"mpi_version", r.mpi_version},
      {"mpi_library", r.mpi_library},
      {"mpi_standard", r.mpi_standard},
      {"mpi_standard_headers", r.mpi_standard_headers},
      {"mpi_gpu_aware", r.mpi_gpu_aware},
      {"mpi_gpu_aware_how", r.mpi_gpu_aware_how},
      {"rank", r.rank},
      {"nranks", r.nranks},
      {"host", r.host},
      {"pid", r.pid},
      {"devices", devices},
      {"no_device_reasons", r.no_device_reasons},
      {"async_calls", r.async_calls},
      {"local_rank", r.local_rank},
      {"local_rank_source", r.local_rank_source},
      {"device_kind", r.device_kind},
      {"device_id", r.device_id},
      {"device_emulated", r.device_emulated},
      {"ccl_formed", r.ccl_formed},
      {"ccl", r.ccl},
      {"ccl_why_not", r.ccl_why_not},
      {"topology", r.topology},
      {"shm", r.shm},
      {"reduce_simd", r.reduce_simd},
      {"settings", settings},
      {"setting_defaults", defaults},
      {"warnings", r.warnings},
      {"unknown_variables", r.unknown_variables},
  };
  // Invalid UTF-8 (a setting's raw value) becomes U+FFFD instead of an
  // exception: the report must always be printed.
  return j.dump(-1, ' ', false, ordered_json::error_handler_t::replace);
}

std::string FormatHumanHeader(const RankReport &r) {
  std::string s = "InfiniCCL " + r.version + " (version code " +
                  std::to_string(r.version_code) + ")\n\nBuild\n";
  s += Line("device runtimes built:", Join(r.devices_built, ", "));
  std::vector<std::string> backends;
  for (size_t i = 0; i < r.backends.size(); ++i) {
    std::string b = r.backends[i];
    for (char &c : b) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    if (i < r.backend_versions.size() && !r.backend_versions[i].empty())
      b += " (" + r.backend_versions[i] + ")";
    backends.push_back(b);
  }
  s += Line("backends built:", Join(backends, ", "));
  s += Line("MPI:", r.mpi_flavor + " " + r.mpi_version + " (" + r.mpi_library + ")");
  s += Line("MPI standard:", r.mpi_standard + " (compiled against " +
                                 r.mpi_standard_headers + " headers)");
  s += Line("large counts:", r.large_count);
  s += "\n" + std::to_string(r.nranks) + (r.nranks == 1 ? " rank\n" : " ranks\n");
  return s;
}

std::string FormatHumanRank(const RankReport &r) {
  std::string s = "\nRank " + std::to_string(r.rank) + " of " + std::to_string(r.nranks) +
                  " on " + r.host + " (pid " + std::to_string(r.pid) + ")\n";
  if (r.devices.empty()) {
    s += Line("devices found:", "none (host memory only)");
    for (const std::string &why : r.no_device_reasons) s += Line("  why:", why);
  } else {
    std::vector<std::string> found;
    for (const DeviceSummary &d : r.devices) {
      found.push_back(d.kind + " x" + std::to_string(d.count) + " [" + d.description +
                      "]" + (d.emulated ? " EMULATED" : ""));
    }
    s += Line("devices found:", Join(found, "; "));
    for (const DeviceSummary &d : r.devices) {
      s += Line(("  " + d.kind + " waits by:").c_str(), d.device_wait);
    }
  }
  s += Line("device calls via MPI:", r.async_calls);
  s += Line("local rank:",
            std::to_string(r.local_rank) + " (from " + r.local_rank_source + ")");
  if (r.device_id < 0) {
    s += Line("binds to:", "no device (host memory only)");
  } else {
    s += Line("binds to:", r.device_kind + " device " + std::to_string(r.device_id) +
                               (r.device_emulated ? " (EMULATED)" : ""));
  }
  s += Line("CCL communicator:",
            r.ccl_formed ? "yes (" + r.ccl + ": device buffers go to it)"
                         : "no: " + r.ccl_why_not + " (device buffers go to MPI)");
  for (const std::string &line : r.topology) s += Line("groups:", line);
  s += Line("shared memory:", r.shm);
  s += Line("host reductions:", r.reduce_simd);
  s += Line("GPU-aware MPI (CUDA):", std::string(r.mpi_gpu_aware ? "yes" : "no") + " (" +
                                         r.mpi_gpu_aware_how + ")");
  std::vector<std::string> changed;
  for (const Setting &st : r.settings) {
    if (!st.at_default) changed.push_back(st.name + "=" + st.value);
  }
  s += Line("settings changed:",
            changed.empty() ? "none (all defaults)" : Join(changed, " "));
  for (const std::string &w : r.warnings) s += Line("warning:", w);
  for (const std::string &w : r.unknown_variables) s += Line("warning:", w);
  return s;
}

std::string FormatHumanSettings(const RankReport &r) {
  std::string s = "\nSettings (value in effect on rank " + std::to_string(r.rank) +
                  ", default, meaning)\n";
  for (const Setting &st : r.settings) {
    s += "  " + st.name + "=" + st.value + "   (default '" + st.default_value + "')\n";
    s += Wrap(st.doc, 6);
  }
  return s;
}

}  // namespace info
