#include "format.h"

#include <cstdio>

namespace info {

namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0 if invalid
// (overlong forms, surrogates and code points above U+10FFFF are invalid).
size_t Utf8Length(const std::string &s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  size_t n = 0;
  unsigned int cp = 0, min = 0;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2, cp = c & 0x1F, min = 0x80;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3, cp = c & 0x0F, min = 0x800;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4, cp = c & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

std::string Bool(bool b) {
  return b ? "true" : "false";
}

std::string StringArray(const std::vector<std::string> &v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + JsonString(v[i]);
  return out + "]";
}

// Fixed-width label column for the human output.
std::string Line(const char *label, const std::string &value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "  %-22s ", label);
  return buf + value + "\n";
}

std::string Join(const std::vector<std::string> &v, const char *sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

}  // namespace

std::string JsonString(const std::string &s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else if (c < 0x80) {
      out += static_cast<char>(c);
    } else if (const size_t n = Utf8Length(s, i)) {
      out.append(s, i, n);
      i += n;
      continue;
    } else {
      out += "\\ufffd";
    }
    ++i;
  }
  return out + "\"";
}

std::string FormatJson(const RankReport &r) {
  std::string j = "{";
  auto key = [&](const char *k) {
    if (j.size() > 1) j += ",";
    j += JsonString(k) + ":";
  };
  key("version"), j += JsonString(r.version);
  key("version_code"), j += std::to_string(r.version_code);
  key("backends"), j += StringArray(r.backends);
  key("devices_built"), j += StringArray(r.devices_built);
  key("large_count"), j += JsonString(r.large_count);
  key("mpi_flavor"), j += JsonString(r.mpi_flavor);
  key("mpi_version"), j += JsonString(r.mpi_version);
  key("mpi_library"), j += JsonString(r.mpi_library);
  key("mpi_standard"), j += JsonString(r.mpi_standard);
  key("mpi_standard_headers"), j += JsonString(r.mpi_standard_headers);
  key("mpi_gpu_aware"), j += Bool(r.mpi_gpu_aware);
  key("mpi_gpu_aware_how"), j += JsonString(r.mpi_gpu_aware_how);
  key("rank"), j += std::to_string(r.rank);
  key("nranks"), j += std::to_string(r.nranks);
  key("host"), j += JsonString(r.host);
  key("pid"), j += std::to_string(r.pid);
  key("devices"), j += "[";
  for (size_t i = 0; i < r.devices.size(); ++i) {
    const DeviceSummary &d = r.devices[i];
    j += std::string(i ? "," : "") + "{\"kind\":" + JsonString(d.kind) +
         ",\"description\":" + JsonString(d.description) +
         ",\"count\":" + std::to_string(d.count) + ",\"emulated\":" + Bool(d.emulated) +
         "}";
  }
  j += "]";
  key("local_rank"), j += std::to_string(r.local_rank);
  key("local_rank_source"), j += JsonString(r.local_rank_source);
  key("device_kind"), j += JsonString(r.device_kind);
  key("device_id"), j += std::to_string(r.device_id);
  key("device_emulated"), j += Bool(r.device_emulated);
  key("settings"), j += "{";
  for (size_t i = 0; i < r.settings.size(); ++i) {
    j += (i ? "," : "") + JsonString(r.settings[i].name) + ":" +
         JsonString(r.settings[i].value);
  }
  j += "}";
  key("setting_defaults"), j += "{";
  for (size_t i = 0; i < r.settings.size(); ++i) {
    j += (i ? "," : "") + JsonString(r.settings[i].name) + ":" +
         JsonString(r.settings[i].default_value);
  }
  j += "}";
  key("warnings"), j += StringArray(r.warnings);
  return j + "}";
}

std::string FormatHumanHeader(const RankReport &r) {
  std::string s = "InfiniCCL " + r.version + " (version code " +
                  std::to_string(r.version_code) + ")\n\nBuild\n";
  s += Line("device runtimes built:", Join(r.devices_built, ", "));
  s += Line("backends:", "MPI");
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
  } else {
    std::vector<std::string> found;
    for (const DeviceSummary &d : r.devices) {
      found.push_back(d.kind + " x" + std::to_string(d.count) + " [" + d.description +
                      "]" + (d.emulated ? " EMULATED" : ""));
    }
    s += Line("devices found:", Join(found, "; "));
  }
  s += Line("local rank:",
            std::to_string(r.local_rank) + " (from " + r.local_rank_source + ")");
  if (r.device_id < 0) {
    s += Line("binds to:", "no device (host memory only)");
  } else {
    s += Line("binds to:", r.device_kind + " device " + std::to_string(r.device_id) +
                               (r.device_emulated ? " (EMULATED)" : ""));
  }
  s += Line("GPU-aware MPI (CUDA):", std::string(r.mpi_gpu_aware ? "yes" : "no") + " (" +
                                         r.mpi_gpu_aware_how + ")");
  std::vector<std::string> changed;
  for (const Setting &st : r.settings) {
    if (!st.at_default) changed.push_back(st.name + "=" + st.value);
  }
  s += Line("settings changed:",
            changed.empty() ? "none (all defaults)" : Join(changed, " "));
  for (const std::string &w : r.warnings) s += Line("warning:", w);
  return s;
}

std::string FormatHumanSettings(const RankReport &r) {
  std::string s = "\nSettings (value in effect on rank " + std::to_string(r.rank) +
                  ", default, meaning)\n";
  for (const Setting &st : r.settings) {
    s += "  " + st.name + "=" + st.value + "   (default '" + st.default_value + "')\n";
    s += "      " + st.doc + "\n";
  }
  return s;
}

}  // namespace info
