#include "core/cpu_budget.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace infiniccl {

namespace {

// The first line of `path`, or "".
std::string FirstLine(const std::string &path) {
  std::ifstream f(path);
  std::string line;
  if (f) std::getline(f, line);
  return line;
}

unsigned Quota(long long quota, long long period) {
  if (quota <= 0 || period <= 0) return 0;
  return static_cast<unsigned>((quota + period - 1) / period);
}

// This process's cgroup v2 path ("0::/a/b" in /proc/self/cgroup), or "".
std::string OwnCgroupV2() {
  std::ifstream f("/proc/self/cgroup");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("0::", 0) == 0) return line.substr(3);
  }
  return "";
}

}  // namespace

unsigned CoresOfCpuMax(const std::string &line) {
  std::istringstream in(line);
  std::string quota;
  long long period = 0;
  if (!(in >> quota >> period) || quota == "max") return 0;
  char *end = nullptr;
  const long long q = std::strtoll(quota.c_str(), &end, 10);
  if (end == quota.c_str() || *end != '\0') return 0;
  return Quota(q, period);
}

unsigned CgroupCores(const std::string &root, const std::string &cgroup) {
  unsigned tightest = 0;
  auto take = [&](unsigned n) {
    if (n > 0 && (tightest == 0 || n < tightest)) tightest = n;
  };
  // v2: the cgroup's own cpu.max and each parent's, up to the root.
  std::string path = cgroup;
  while (!path.empty() && path.back() == '/') path.pop_back();
  for (;;) {
    take(CoresOfCpuMax(FirstLine(root + path + "/cpu.max")));
    if (path.empty()) break;
    path = path.substr(0, path.rfind('/'));
  }
  // v1: the cpu controller's quota.
  const std::string quota = FirstLine(root + "/cpu/cpu.cfs_quota_us");
  const std::string period = FirstLine(root + "/cpu/cpu.cfs_period_us");
  if (!quota.empty() && !period.empty()) {
    take(Quota(std::atoll(quota.c_str()), std::atoll(period.c_str())));
  }
  return tightest;
}

unsigned UsableCores(std::string *why) {
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  unsigned cores = online > 0 ? static_cast<unsigned>(online) : 1;
  const char *reason = "online CPUs";
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof mask, &mask) == 0) {
    const int n = CPU_COUNT(&mask);
    if (n > 0 && static_cast<unsigned>(n) < cores) {
      cores = static_cast<unsigned>(n);
      reason = "affinity mask";
    }
  }
  const unsigned quota = CgroupCores("/sys/fs/cgroup", OwnCgroupV2());
  if (quota > 0 && quota < cores) {
    cores = quota;
    reason = "cgroup CPU quota";
  }
  if (why != nullptr) *why = reason;
  return std::max(cores, 1u);
}

}  // namespace infiniccl
