// Profile + target -> the concrete probe points to attach (no libbpf here, no root).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "looptrace/loader/profile.h"
#include "looptrace/symbols/probe_cost.h"
#include "looptrace/util/result.h"

namespace looptrace::loader {

// Where a profile's BINARY names are looked up.
struct TargetBinaries {
  int pid = 0;                  // live process (record): /proc/PID/maps and /proc/PID/exe
  std::string exe_path;         // run: the resolved command; record: /proc/PID/exe target
  std::string ld_library_path;  // run: the child's LD_LIBRARY_PATH
  // run + profile detection: a library must be one the executable links (DT_NEEDED,
  // transitively), not merely present on disk.
  bool require_linked = false;
};

struct ResolvedProbe {
  uint16_t probe_id = 0;
  ProbeSpec spec;
  std::string binary_path;  // file to attach to
  std::string symbol;       // resolved symbol (demangled) or provider:name
  uint64_t address = 0;     // virtual address in the ELF (USDT: first site)
  uint64_t file_offset = 0;
  size_t usdt_sites = 0;    // USDT: number of sites of provider:name
  symbols::InstructionInfo instruction{symbols::ProbeCost::kUnknown, "", 0};
  bool shadow_only = false;  // added for a uretprobe's shadow stack (shadow_probes.h): records nothing
};

struct AttachPlan {
  std::string profile_name;
  std::vector<ResolvedProbe> probes;
};

// The attach cookie (probe id and role) and the probe's configuration for BPF (events.h).
uint64_t MakeCookie(const ResolvedProbe& probe);
lt_probe_config MakeProbeConfig(const ResolvedProbe& probe);

// Resolves every probe of the profile; the first failure is returned, naming the
// binary and point, with the closest symbol names as a hint.
Result<AttachPlan> ResolveProfile(const Profile& profile, const TargetBinaries& target);

// The explicit profile, or the first built-in that resolves for the target (libraries must
// be ones the executable links).
Result<std::pair<Profile, AttachPlan>> ChooseProfile(const std::string& requested, const TargetBinaries& target);

// Path of a profile BINARY ("exe", absolute path, or library name) for the target.
Result<std::string> ResolveBinary(const std::string& binary, const TargetBinaries& target);

}  // namespace looptrace::loader
