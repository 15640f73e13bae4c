// How many cores this process may use: the fewest of the CPUs online, the
// CPUs in its affinity mask (sched_getaffinity: taskset, a launcher's
// binding, a container's cpuset) and its cgroup's CPU quota (cgroup v2
// `cpu.max` of its own cgroup and every parent; v1 `cpu.cfs_quota_us` /
// `cpu.cfs_period_us`), a quota of 1.5 CPUs counting as 2. What decides
// whether the ranks of a node are oversubscribed, and so whether their
// waits spin or yield.
#pragma once

#include <string>

namespace infiniccl {

// The usable cores, at least 1; `why` (if given) says which limit set it
// ("online CPUs", "affinity mask", "cgroup cpu.max").
unsigned UsableCores(std::string *why = nullptr);

// The parts, for tests. Cores a cgroup v2 `cpu.max` line allows ("max
// 100000": 0, meaning no limit; "150000 100000": 2; unreadable: 0).
unsigned CoresOfCpuMax(const std::string &line);
// The tightest quota along the cgroup v2 path `cgroup` (as /proc/self/cgroup
// gives it, "/a/b") under the mount `root`, or of the v1 cpu controller at
// `root`/cpu; 0: no limit found.
unsigned CgroupCores(const std::string &root, const std::string &cgroup);

}  // namespace infiniccl
