// Uretprobes and the shadow stack (events.h lt_shadow_stack): a uretprobe replaces its
// function's return address with the kernel's trampoline, which breaks stack walks through
// that frame. The function's entry probe remembers the real address, its uretprobe forgets
// it. Every uretprobe point gets an entry probe at the same address for this; when the
// profile has none there, one that only keeps the shadow stack is added. Only stacks BPF
// takes for samples use it (switch-out and cpu-clock samples, stack copies), and Linux 6.11+
// puts the real addresses back in frame-pointer stacks itself (get_perf_callchain), so most
// sessions need none: it costs two map lookups and a user read per message.
#pragma once

#include <vector>

#include "loader/plan/attach_plan.h"
#include "looptrace/events.h"

namespace looptrace::loader {

// Whether a session with these settings needs the shadow stack: with thread tracking, it
// copies raw stacks (DWARF unwinding), or it samples stacks by frame pointers on a kernel
// that does not put uretprobe return addresses back itself (`kernel_fixes_fp_stacks`).
bool NeedsShadowStack(bool thread_tracking, int sample_hz, bool dwarf_unwind, bool kernel_fixes_fp_stacks);
// Whether the running kernel puts back return addresses a uretprobe replaced in the stacks
// it walks (Linux 6.11: "perf,uprobes: fix user stack traces in the presence of pending
// uretprobes").
bool KernelFixesUretprobeStacks();

// Whether the plan has uretprobes, and whether each of them already has an entry probe that
// keeps the shadow stack at its point (so keeping one adds no probe hit).
bool HasReturnProbes(const AttachPlan& plan);
bool EntryProbesCoverReturns(const AttachPlan& plan);

// Adds a shadow-only entry probe (ResolvedProbe::shadow_only) for each uretprobe point that
// has no ordinary entry probe (fast-path method beats do not keep the shadow stack).
void AddShadowProbes(AttachPlan* plan);

// Sets LT_PROBE_SHADOW_PUSH / _POP / _ONLY in the probes' configurations (by probe id).
void MarkShadowProbes(const AttachPlan& plan, std::vector<lt_probe_config>* configs);

}  // namespace looptrace::loader
