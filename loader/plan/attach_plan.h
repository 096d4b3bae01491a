// Profile + target -> the concrete probe points to attach (no libbpf here, no root): the plan's
// types and point resolution. The rest of plan/ by job: binaries.h (a profile's BINARY names),
// marks.h (`requires` lines), probe_config.h (what BPF is told per probe), profile_choice.h
// (auto-detection and --profile), runtime_checks.h (the runtimes' checks of a chosen profile).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "loader/plan/profile.h"
#include "loader/target/target_binaries.h"
#include "looptrace/symbols/probe_cost.h"
#include "looptrace/util/result.h"

namespace looptrace::loader {

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

// Why a profile does not resolve for a target. kDoesNotFit: the target is not one the profile
// is for (a library it does not map or link, a `requires` mark it lacks): another profile may
// fit. kNoSuchPoint: a line's point is not in its binary (an optional line is left out).
// kOther: the rest (a USDT argument the probe lacks, a file that cannot be read).
enum class PlanErrorKind : uint8_t { kOther, kDoesNotFit, kNoSuchPoint };

struct PlanError : Error {
  PlanErrorKind kind = PlanErrorKind::kOther;

  PlanError() = default;
  // Implicit: any Error is a PlanError of kind kOther.
  PlanError(Error error, PlanErrorKind error_kind = PlanErrorKind::kOther)
      : Error(std::move(error)), kind(error_kind) {}
};

template <typename T>
using PlanResult = std::expected<T, PlanError>;

// A kDoesNotFit error (exit code kProfile).
inline std::unexpected<PlanError> DoesNotFit(std::string message, std::string hint = {}) {
  return std::unexpected(
      PlanError(Error{std::move(message), std::move(hint), ExitCode::kProfile}, PlanErrorKind::kDoesNotFit));
}

// Resolves every probe of the profile; the first failure is returned, naming the
// binary and point, with the closest symbol names as a hint.
PlanResult<AttachPlan> ResolveProfile(const Profile& profile, const TargetBinaries& target);

}  // namespace looptrace::loader
