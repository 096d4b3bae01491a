// Profile + target -> the concrete probe points to attach (no libbpf here, no root).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "loader/plan/profile.h"
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
  // Auto-detection: `requires-loaded` marks must be present (else only a warning).
  bool detecting = false;
  // --exact-entry: every probe stays on its symbol, even where the kernel single-steps
  // the first instruction (no relocation, probe_placement.h).
  bool exact_entry = false;
};

// Where a uprobe/uretprobe fires (probe_placement.h).
enum class Placement {
  kEntry,       // the symbol's address (a uretprobe: its return, through the entry)
  kEntryBlock,  // a later, emulated instruction of the function's entry block
  kCallSites,   // every direct call (or tail-call jmp) of the function, instead of its entry
  kAfterCalls,  // every instruction after a call of it, instead of a uretprobe
};

std::string_view PlacementName(Placement placement);

// One attach point of a relocated probe.
struct ProbeLocation {
  uint64_t address = 0;  // virtual address in the ELF
  uint64_t file_offset = 0;
  symbols::InstructionInfo instruction{symbols::ProbeCost::kUnknown, "", 0};
  std::string where;  // "call in main", "after call in run_loop"
};

struct ResolvedProbe {
  uint16_t probe_id = 0;
  ProbeSpec spec;
  std::string binary_path;  // file to attach to
  std::string symbol;       // resolved symbol (demangled) or provider:name
  uint64_t address = 0;     // virtual address in the ELF (USDT: first site)
  uint64_t file_offset = 0;
  size_t usdt_sites = 0;           // USDT: number of sites of provider:name
  uint64_t semaphore_address = 0;  // USDT: its semaphore's virtual address (0 = none)
  // What the probe costs per hit: the first instruction at `address` or, when
  // relocated, the most expensive of `locations`.
  symbols::InstructionInfo instruction{symbols::ProbeCost::kUnknown, "", 0};
  Placement placement = Placement::kEntry;
  std::vector<ProbeLocation> locations;  // when placement != kEntry: where it is attached
  std::string placement_note;            // why it moved, or why a single-stepped entry stayed
  symbols::InstructionInfo entry_instruction{symbols::ProbeCost::kUnknown, "", 0};  // at `address`
  bool shadow_only = false;  // added for a uretprobe's shadow stack (shadow_probes.h): records nothing
};

// The file offsets the probe is attached at (its own, or its relocated locations).
std::vector<uint64_t> AttachOffsets(const ResolvedProbe& probe);
// Whether those offsets are attached as return probes (a uretprobe not moved to the
// instructions after its calls).
bool AttachAsReturnProbe(const ResolvedProbe& probe);
// How many uprobes the probe takes (locations, or 1).
size_t AttachPointCount(const ResolvedProbe& probe);

struct AttachPlan {
  std::string profile_name;
  std::vector<ResolvedProbe> probes;
  std::vector<std::string> left_out;  // optional probes that resolved to nothing, and why
  std::vector<std::string> marks;     // the runtime marks found (requires, requires-call, requires-loaded)
  // `requires-loaded` marks that could not be checked (a command not started yet), or that an
  // explicitly chosen profile lacks: said to the user, who may want another profile.
  std::vector<std::string> assumptions;
};

// The attach cookie (probe id and role) and the probe's configuration for BPF (events.h).
uint64_t MakeCookie(const ResolvedProbe& probe);
lt_probe_config MakeProbeConfig(const ResolvedProbe& probe);
// Every probe's configuration, by probe id (which probes may claim the loop thread depends on
// the whole plan).
std::vector<lt_probe_config> MakeProbeConfigs(const AttachPlan& plan);

// Resolves every probe of the profile; the first failure is returned, naming the
// binary and point, with the closest symbol names as a hint.
Result<AttachPlan> ResolveProfile(const Profile& profile, const TargetBinaries& target);

// One built-in profile as auto-detection judged it.
struct ProfileCandidate {
  std::string name;
  bool matches = false;
  std::string reason;  // what it matched on, or why it does not fit
};

struct Detection {
  std::vector<ProfileCandidate> candidates;  // in detection order
  std::optional<size_t> picked;              // index of the first that matches
  Profile profile;                           // the picked one and its plan
  AttachPlan plan;
};

// Auto-detection: the built-ins (not fragments) in LOOPTRACE_PROFILE_FILES order; the first
// whose `requires` / `requires-call` marks are present and whose probes all resolve is picked. Libraries must
// be ones the executable links (run) or has mapped (record). With `stop_at_first`, those
// after the pick are not tried.
Detection DetectProfile(const TargetBinaries& target, bool stop_at_first);

// The explicit profile (a clear error naming what the target lacks when it does not fit),
// or the auto-detected one.
Result<std::pair<Profile, AttachPlan>> ChooseProfile(const std::string& requested, const TargetBinaries& target);

// Path of a profile BINARY ("exe", absolute path, or library name) for the target.
Result<std::string> ResolveBinary(const std::string& binary, const TargetBinaries& target);

}  // namespace looptrace::loader
