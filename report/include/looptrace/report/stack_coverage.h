// How many of a session's sampled user stacks were walked whole (issue 32: the goal is that
// at least 99% reach main or a thread's start): the coverage counters of stats.h
// (StatSeverity::kCoverage) as a share, for the text report's data-quality block.
#pragma once

#include <optional>
#include <string>

#include "looptrace/report/stats.h"

namespace looptrace {

// The share (0..1) of sampled user stacks that reached their outermost frame; nullopt when
// none were counted (replayed events, --no-thread-tracking, --sample-rate 0).
std::optional<double> CompleteStackShare(const Stats& stats);

// "  user stacks: 99.4% whole (4812 of 4841 reach main or a thread's start)\n"; "" when
// none were counted.
std::string StackCoverageLine(const Stats& stats);

}  // namespace looptrace
