// infiniccl-info's two output forms: one JSON object per rank on one line
// (--json), and human-readable text (a build section once, one block per
// rank, then the settings table).
#pragma once

#include <string>

#include "report.h"

namespace info {

// The whole report as one JSON object with no newline inside it (bytes
// that are not valid UTF-8 become U+FFFD, so the line always parses).
std::string FormatJson(const RankReport &r);

// Printed once, from rank 0's report: version, build, MPI.
std::string FormatHumanHeader(const RankReport &r);
// This rank's block: host, devices, local rank, binding, GPU-awareness, and
// the settings that are not at their default on this rank.
std::string FormatHumanRank(const RankReport &r);
// The settings table with defaults and meanings, values as on rank 0.
std::string FormatHumanSettings(const RankReport &r);

}  // namespace info
