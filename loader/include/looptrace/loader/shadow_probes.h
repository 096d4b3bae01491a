// Uretprobes and the shadow stack (events.h lt_shadow_stack): a uretprobe replaces its
// function's return address with the kernel's trampoline, which breaks stack walks through
// that frame. The function's entry probe remembers the real address, its uretprobe forgets
// it. Every uretprobe point gets an entry probe at the same address for this; when the
// profile has none there, one that only keeps the shadow stack is added.
#pragma once

#include <vector>

#include "looptrace/events.h"
#include "looptrace/loader/attach_plan.h"

namespace looptrace::loader {

// Adds a shadow-only entry probe (ResolvedProbe::shadow_only) for each uretprobe point that
// has no ordinary entry probe (fast-path method beats do not keep the shadow stack).
void AddShadowProbes(AttachPlan* plan);

// Sets LT_PROBE_SHADOW_PUSH / _POP / _ONLY in the probes' configurations (by probe id).
void MarkShadowProbes(const AttachPlan& plan, std::vector<lt_probe_config>* configs);

}  // namespace looptrace::loader
