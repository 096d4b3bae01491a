// Where ResolveProfile places probes on the fixed machine code of relocation_shapes.c
// (probe_placement.h): the entry block, call sites, after calls, and the rules that keep
// an entry.
#include "loader/plan/probe_placement.h"

#include <gtest/gtest.h>

#include "loader/plan/attach_plan.h"
#include "loader/plan/profile.h"

namespace looptrace::loader {
namespace {

std::string Shapes() { return std::string(LOOPTRACE_FIXTURE_DIR) + "/relocation_shapes_pie"; }

AttachPlan Resolve(const std::string& body, bool exact = false) {
  auto profile = ParseProfile("profile shapes\n" + body, "shapes.profile");
  EXPECT_TRUE(profile) << profile.error().message;
  TargetBinaries target;
  target.exe_path = Shapes();
  target.exact_entry = exact;
  auto plan = ResolveProfile(*profile, target);
  EXPECT_TRUE(plan) << plan.error().message;
  return *plan;
}

const ResolvedProbe& Probe(const AttachPlan& plan, Role role) {
  for (const auto& p : plan.probes)
    if (p.spec.role == role) return p;
  ADD_FAILURE() << "no probe for " << RoleName(role);
  return plan.probes.front();
}

bool Contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(ProbePlacement, EntryBlockCallSitesAndAfterCalls) {
  const std::string bin = Shapes();
  AttachPlan plan =
      Resolve("probe vsync uprobe " + bin + " shape_skip vsync_ns=arg1\n" + "probe method.enter uprobe " + bin +
              " shape_ret_hook addr=arg1\n" + "probe method.exit uretprobe " + bin + " shape_ret_hook addr=ret\n");
  const ResolvedProbe& vsync = Probe(plan, Role::kVsync);
  EXPECT_EQ(vsync.placement, Placement::kEntryBlock) << vsync.placement_note;
  ASSERT_EQ(vsync.locations.size(), 1u);
  EXPECT_EQ(vsync.locations[0].address, vsync.address + 3);
  EXPECT_EQ(AttachOffsets(vsync), std::vector<uint64_t>{vsync.file_offset + 3});
  EXPECT_EQ(vsync.instruction.cost, symbols::ProbeCost::kEmulated);
  EXPECT_EQ(vsync.entry_instruction.cost, symbols::ProbeCost::kSingleStep);

  const ResolvedProbe& enter = Probe(plan, Role::kMethodEnter);
  EXPECT_EQ(enter.placement, Placement::kCallSites) << enter.placement_note;
  EXPECT_EQ(enter.locations.size(), 2u);
  EXPECT_FALSE(AttachAsReturnProbe(enter));

  const ResolvedProbe& exit = Probe(plan, Role::kMethodExit);
  EXPECT_EQ(exit.placement, Placement::kAfterCalls) << exit.placement_note;
  ASSERT_EQ(exit.locations.size(), 2u);
  EXPECT_FALSE(AttachAsReturnProbe(exit));  // plain uprobes after the calls
  // The first call returns to 'mov %eax, %ebx' (single-stepped, writes no %rax): the
  // probe goes to the next, emulated instruction. The second returns to a nop.
  EXPECT_EQ(exit.locations[0].address, enter.locations[0].address + 5 + 2);
  EXPECT_EQ(exit.locations[1].address, enter.locations[1].address + 5);
  for (const auto& l : exit.locations) EXPECT_EQ(l.instruction.cost, symbols::ProbeCost::kEmulated);
}

TEST(ProbePlacement, ArgumentWrittenBeforeTheEntryBlockPointKeepsTheEntry) {
  const std::string bin = Shapes();
  AttachPlan plan = Resolve("probe vsync uprobe " + bin + " shape_writes_arg1 vsync_ns=arg1\n");
  const ResolvedProbe& p = Probe(plan, Role::kVsync);
  EXPECT_EQ(p.placement, Placement::kEntry);
  EXPECT_TRUE(Contains(p.placement_note, "write %rdi (arg1)")) << p.placement_note;
  EXPECT_TRUE(Contains(p.placement_note, "no direct call site")) << p.placement_note;
  EXPECT_EQ(p.instruction.cost, symbols::ProbeCost::kSingleStep);
  EXPECT_EQ(AttachOffsets(p), std::vector<uint64_t>{p.file_offset});

  // A probe that reads no argument can skip the add.
  AttachPlan no_args = Resolve("probe vsync uprobe " + bin + " shape_writes_arg1\n");
  EXPECT_EQ(Probe(no_args, Role::kVsync).placement, Placement::kEntryBlock);
}

TEST(ProbePlacement, ConditionsCountAsReadsAndStackArgumentsStay) {
  const std::string bin = Shapes();
  // The condition reads arg1, which the skipped add writes; there is no call site.
  AttachPlan cond = Resolve("probe vsync uprobe " + bin + " shape_writes_arg1 if arg1 > 3\n");
  const ResolvedProbe& c = Probe(cond, Role::kVsync);
  EXPECT_EQ(c.placement, Placement::kEntry);
  EXPECT_TRUE(Contains(c.placement_note, "write %rdi (arg1)")) << c.placement_note;
  // Arguments 7..12 are read at the entry's %rsp: such a probe never moves.
  AttachPlan stack = Resolve("probe vsync uprobe " + bin + " shape_skip vsync_ns=arg7\n");
  const ResolvedProbe& st = Probe(stack, Role::kVsync);
  EXPECT_EQ(st.placement, Placement::kEntry);
  EXPECT_TRUE(Contains(st.placement_note, "arg7, a stack argument")) << st.placement_note;
}

TEST(ProbePlacement, AnEntryThatMustStayKeepsTheOtherProbesOfTheFunction) {
  // shape_dispatch's second call returns to a loop target: its uretprobe must stay, so
  // its entry keeps a breakpoint and the uprobe stays there too (moving it would add a trap).
  const std::string bin = Shapes();
  AttachPlan plan = Resolve("probe dispatch.begin uprobe " + bin + " shape_dispatch id=arg1\n" +
                            "probe dispatch.end uretprobe " + bin + " shape_dispatch id=ret\n");
  const ResolvedProbe& begin = Probe(plan, Role::kDispatchBegin);
  const ResolvedProbe& end = Probe(plan, Role::kDispatchEnd);
  EXPECT_EQ(end.placement, Placement::kEntry);
  EXPECT_TRUE(Contains(end.placement_note, "conditional jump")) << end.placement_note;
  EXPECT_TRUE(AttachAsReturnProbe(end));
  EXPECT_EQ(begin.placement, Placement::kEntry);
  EXPECT_TRUE(Contains(begin.placement_note, "its dispatch.end uretprobe stays at the entry")) << begin.placement_note;
}

TEST(ProbePlacement, AfterCallThatIsAnotherProbesLocationKeepsTheUretprobe) {
  // The first call of shape_ret_hook returns to 'mov; call shape_dispatch': that call is
  // where the vsync probe (moved to shape_dispatch's call sites) fires. Two probes on one
  // instruction fire in no defined order, so the uretprobe stays (and so does the entry
  // probe of shape_ret_hook, which would only add a trap).
  const std::string bin = Shapes();
  AttachPlan plan =
      Resolve("probe vsync uprobe " + bin + " shape_dispatch vsync_ns=arg1\n" + "probe method.enter uprobe " + bin +
              " shape_ret_hook addr=arg1\n" + "probe method.exit uretprobe " + bin + " shape_ret_hook addr=ret\n");
  EXPECT_EQ(Probe(plan, Role::kVsync).placement, Placement::kCallSites);
  const ResolvedProbe& exit = Probe(plan, Role::kMethodExit);
  EXPECT_EQ(exit.placement, Placement::kEntry);
  EXPECT_TRUE(Contains(exit.placement_note, "fire in no defined order")) << exit.placement_note;
  EXPECT_EQ(Probe(plan, Role::kMethodEnter).placement, Placement::kEntry);
}

TEST(ProbePlacement, ExactEntryMovesNothing) {
  const std::string bin = Shapes();
  AttachPlan plan =
      Resolve("probe vsync uprobe " + bin + " shape_skip vsync_ns=arg1\n" + "probe method.enter uprobe " + bin +
                  " shape_ret_hook addr=arg1\n" + "probe method.exit uprobe " + bin + " shape_ret_hook addr=arg1\n",
              /*exact=*/true);
  for (const auto& p : plan.probes) {
    EXPECT_EQ(p.placement, Placement::kEntry);
    EXPECT_EQ(p.placement_note, "entry kept (single-stepped): --exact-entry");
    EXPECT_EQ(p.instruction.cost, symbols::ProbeCost::kSingleStep);
  }
}

}  // namespace
}  // namespace looptrace::loader
