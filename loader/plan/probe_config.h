// What BPF is told per probe (events.h): the attach cookie, the probe's configuration
// (arguments to record, conditions, flags) and whether its method beats take the fast path.
#pragma once

#include <cstdint>
#include <vector>

#include "loader/plan/attach_plan.h"
#include "looptrace/events.h"

namespace looptrace::loader {

// The attach cookie (probe id and role) and the probe's configuration for BPF (events.h).
uint64_t MakeCookie(const ResolvedProbe& probe);
lt_probe_config MakeProbeConfig(const ResolvedProbe& probe);
// Every probe's configuration, by probe id (which probes may claim the loop thread depends on
// the whole plan).
std::vector<lt_probe_config> MakeProbeConfigs(const AttachPlan& plan);

// Method probes whose identity is their first argument use the cookie-less fast path
// (uprobe_multi kernels only): the group attach keeps them apart.
bool UsesFastBeats(const ResolvedProbe& probe);

}  // namespace looptrace::loader
