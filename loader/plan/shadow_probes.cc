#include "loader/plan/shadow_probes.h"

#include <set>
#include <utility>

#include "loader/plan/probe_config.h"
#include "loader/target/kernel_release.h"

namespace looptrace::loader {
namespace {

using Point = std::pair<std::string, uint64_t>;  // (binary, file offset)

std::set<Point> ReturnPoints(const AttachPlan& plan) {
  std::set<Point> points;
  for (const ResolvedProbe& p : plan.probes)
    if (p.spec.kind == ProbeKind::kUretprobe) points.emplace(p.binary_path, p.file_offset);
  return points;
}

// An entry probe that runs the generic program (which keeps the shadow stack).
bool PushesShadow(const ResolvedProbe& p) { return p.spec.kind == ProbeKind::kUprobe && !UsesFastBeats(p); }

}  // namespace

bool NeedsShadowStack(bool thread_tracking, int sample_hz, bool dwarf_unwind, bool kernel_fixes_fp_stacks) {
  if (!thread_tracking) return false;  // no samples, no stack copies
  if (dwarf_unwind) return true;       // raw stack bytes: the trampoline's address is in them
  return sample_hz > 0 && !kernel_fixes_fp_stacks;
}

bool HasReturnProbes(const AttachPlan& plan) { return !ReturnPoints(plan).empty(); }

bool EntryProbesCoverReturns(const AttachPlan& plan) {
  std::set<Point> returns = ReturnPoints(plan);
  for (const ResolvedProbe& p : plan.probes)
    if (PushesShadow(p)) returns.erase({p.binary_path, p.file_offset});
  return returns.empty();
}

bool KernelFixesUretprobeStacks() { return KernelAtLeast(6, 11); }

void AddShadowProbes(AttachPlan* plan) {
  std::set<Point> covered;
  for (const ResolvedProbe& p : plan->probes)
    if (PushesShadow(p)) covered.emplace(p.binary_path, p.file_offset);
  const size_t count = plan->probes.size();
  for (size_t i = 0; i < count; ++i) {
    const ResolvedProbe& ret = plan->probes[i];
    if (ret.spec.kind != ProbeKind::kUretprobe || !covered.emplace(ret.binary_path, ret.file_offset).second) continue;
    ResolvedProbe entry = ret;
    entry.probe_id = static_cast<uint16_t>(plan->probes.size());
    entry.spec.kind = ProbeKind::kUprobe;
    entry.spec.args.clear();
    entry.spec.conditions.clear();
    entry.shadow_only = true;
    plan->probes.push_back(std::move(entry));
  }
}

void MarkShadowProbes(const AttachPlan& plan, std::vector<lt_probe_config>* configs) {
  const std::set<Point> returns = ReturnPoints(plan);
  for (const ResolvedProbe& p : plan.probes) {
    if (p.probe_id >= configs->size()) continue;
    lt_probe_config& c = (*configs)[p.probe_id];
    if (p.spec.kind == ProbeKind::kUretprobe) c.flags |= LT_PROBE_SHADOW_POP;
    if (PushesShadow(p) && returns.contains({p.binary_path, p.file_offset})) c.flags |= LT_PROBE_SHADOW_PUSH;
    if (p.shadow_only) c.flags |= LT_PROBE_SHADOW_ONLY;
  }
}

}  // namespace looptrace::loader
