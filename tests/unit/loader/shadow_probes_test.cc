#include "loader/plan/shadow_probes.h"

#include <gtest/gtest.h>

namespace looptrace::loader {
namespace {

// The shadow stack costs every uretprobe'd message two map lookups and a user read; it is
// kept only where a stack BPF takes would otherwise stop at the uretprobe trampoline.
TEST(ShadowStack, KeptOnlyForStacksTheKernelDoesNotPutBack) {
  // Raw stack copies (--dwarf-unwind) hold the trampoline's address whatever the kernel.
  EXPECT_TRUE(NeedsShadowStack(/*thread_tracking=*/true, 997, /*dwarf_unwind=*/true, /*kernel_fixes=*/true));
  EXPECT_TRUE(NeedsShadowStack(true, 0, true, true));
  // Frame-pointer samples: only on kernels before 6.11.
  EXPECT_TRUE(NeedsShadowStack(true, 997, false, /*kernel_fixes=*/false));
  EXPECT_FALSE(NeedsShadowStack(true, 997, false, /*kernel_fixes=*/true));
  // No samples: nothing reads it.
  EXPECT_FALSE(NeedsShadowStack(true, 0, false, false));
  // --no-thread-tracking: no sample or switch programs at all.
  EXPECT_FALSE(NeedsShadowStack(false, 997, true, false));
}

TEST(ShadowStack, ShadowOnlyEntryProbeForAUretprobeWithoutOne) {
  AttachPlan plan;
  ResolvedProbe ret;
  ret.probe_id = 0;
  ret.binary_path = "/bin/app";
  ret.file_offset = 0x1234;
  ret.spec.kind = ProbeKind::kUretprobe;
  ret.spec.role = Role::kDispatchEnd;
  plan.probes.push_back(ret);
  AddShadowProbes(&plan);
  ASSERT_EQ(plan.probes.size(), 2u);
  EXPECT_TRUE(plan.probes[1].shadow_only);
  EXPECT_EQ(plan.probes[1].spec.kind, ProbeKind::kUprobe);
  EXPECT_EQ(plan.probes[1].file_offset, 0x1234u);

  std::vector<lt_probe_config> configs(plan.probes.size());
  MarkShadowProbes(plan, &configs);
  EXPECT_EQ(configs[0].flags & LT_PROBE_SHADOW_POP, LT_PROBE_SHADOW_POP);
  EXPECT_EQ(configs[1].flags & (LT_PROBE_SHADOW_PUSH | LT_PROBE_SHADOW_ONLY),
            LT_PROBE_SHADOW_PUSH | LT_PROBE_SHADOW_ONLY);
}

// Early waits leave the loop thread's unwind to a snapshot, which needs the shadow stack
// under a pending uretprobe: free only where an ordinary entry probe is at every uretprobe's
// point (python-asyncio's Context.run), not where a shadow-only probe would add a hit.
TEST(ShadowStack, EntryProbesCoverReturnsOnlyWithAnOrdinaryEntryAtEveryReturnPoint) {
  AttachPlan plan;
  EXPECT_FALSE(HasReturnProbes(plan));
  EXPECT_TRUE(EntryProbesCoverReturns(plan));

  ResolvedProbe ret;
  ret.binary_path = "/bin/app";
  ret.file_offset = 0x1234;
  ret.spec.kind = ProbeKind::kUretprobe;
  ret.spec.role = Role::kDispatchEnd;
  plan.probes.push_back(ret);
  EXPECT_TRUE(HasReturnProbes(plan));
  EXPECT_FALSE(EntryProbesCoverReturns(plan));

  ResolvedProbe elsewhere = ret;  // an entry probe at another function
  elsewhere.file_offset = 0x5678;
  elsewhere.spec.kind = ProbeKind::kUprobe;
  elsewhere.spec.role = Role::kDispatchBegin;
  plan.probes.push_back(elsewhere);
  EXPECT_FALSE(EntryProbesCoverReturns(plan));

  ResolvedProbe beat = ret;  // a fast-path method beat keeps no shadow stack
  beat.spec.kind = ProbeKind::kUprobe;
  beat.spec.role = Role::kMethodEnter;
  beat.spec.args.push_back(ArgSpec{});
  plan.probes.push_back(beat);
  EXPECT_FALSE(EntryProbesCoverReturns(plan));

  ResolvedProbe entry = ret;
  entry.spec.kind = ProbeKind::kUprobe;
  entry.spec.role = Role::kDispatchBegin;
  plan.probes.push_back(entry);
  EXPECT_TRUE(EntryProbesCoverReturns(plan));
}

}  // namespace
}  // namespace looptrace::loader
