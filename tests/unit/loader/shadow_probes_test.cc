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

}  // namespace
}  // namespace looptrace::loader
