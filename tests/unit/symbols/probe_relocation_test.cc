// Probe relocation on fixed machine code (tests/fixtures/testprogs/relocation_shapes.c),
// built PIE and non-PIE.
#include "looptrace/symbols/probe_relocation.h"

#include <gtest/gtest.h>

#include <map>

#include "symbols_test_util.h"

namespace looptrace::symbols {
namespace {

using test_util::FixturePath;

class ProbeRelocationTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    auto elf = ElfFile::Open(FixturePath("relocation_shapes_" + GetParam()));
    ASSERT_TRUE(elf) << elf.error().message;
    elf_.emplace(std::move(*elf));
    auto relocator = ProbeRelocator::Create(*elf_);
    ASSERT_TRUE(relocator) << relocator.error().message;
    std::vector<const Symbol*> functions;
    for (const Symbol& s : elf_->functions())
      if (s.name.starts_with("shape_")) functions.push_back(&s);
    auto analyses = (*relocator)->Analyze(functions);
    ASSERT_EQ(analyses.size(), functions.size());
    for (size_t i = 0; i < functions.size(); ++i) {
      symbols_[functions[i]->name] = functions[i];
      results_[functions[i]->name] = analyses[i];
    }
  }
  const RelocationAnalysis& Of(const std::string& name) {
    EXPECT_TRUE(results_.contains(name)) << name;
    return results_[name];
  }
  uint64_t Address(const std::string& name) { return symbols_.at(name)->address; }

  std::optional<ElfFile> elf_;
  std::map<std::string, const Symbol*> symbols_;
  std::map<std::string, RelocationAnalysis> results_;
};

TEST_P(ProbeRelocationTest, EntryBlockSkipsToTheFirstEmulatedInstruction) {
  const EntryBlockPoint& skip = Of("shape_skip").entry_block;
  ASSERT_TRUE(skip.point) << skip.why_not;
  EXPECT_EQ(skip.point->address, Address("shape_skip") + 3);
  EXPECT_EQ(skip.point->instruction.cost, ProbeCost::kEmulated);
  EXPECT_EQ(skip.point->instruction.mnemonic, "push %rbx");
  EXPECT_EQ(skip.skipped, "movq");        // AT&T, as objdump
  EXPECT_EQ(skip.written_arguments, 0u);  // mov %rdi, %rax writes %rax only
  EXPECT_FALSE(skip.writes_memory);
  EXPECT_EQ(*elf_->AddressToFileOffset(skip.point->address), skip.point->file_offset);

  // add %edi, %edi: the point exists, but arg1 is written before it.
  const EntryBlockPoint& writes = Of("shape_writes_arg1").entry_block;
  ASSERT_TRUE(writes.point) << writes.why_not;
  EXPECT_EQ(writes.point->address, Address("shape_writes_arg1") + 2);
  EXPECT_EQ(writes.written_arguments, 1u);
  EXPECT_STREQ(ArgumentRegisterName(0), "%rdi");
}

TEST_P(ProbeRelocationTest, EntryBlockRefusesWhatElseCouldReachTheSkippedInstructions) {
  const EntryBlockPoint& loop = Of("shape_loop_into_entry").entry_block;
  EXPECT_FALSE(loop.point);
  EXPECT_NE(loop.why_not.find("conditional jump"), std::string::npos) << loop.why_not;
  EXPECT_NE(loop.why_not.find("+0x3"), std::string::npos) << loop.why_not;

  const EntryBlockPoint& inner = Of("shape_symbol_inside").entry_block;
  EXPECT_FALSE(inner.point);
  EXPECT_NE(inner.why_not.find("shape_inner_entry"), std::string::npos) << inner.why_not;

  const EntryBlockPoint& table = Of("shape_jump_table").entry_block;
  EXPECT_FALSE(table.point);
  EXPECT_NE(table.why_not.find("indirect jump"), std::string::npos) << table.why_not;

  const EntryBlockPoint& ret = Of("shape_lone_ret").entry_block;
  EXPECT_FALSE(ret.point);
  EXPECT_NE(ret.why_not.find("'retq'"), std::string::npos) << ret.why_not;
}

TEST_P(ProbeRelocationTest, CallSitesOfAHookThatIsOnlyCalledDirectly) {
  const CallSites& hook = Of("shape_ret_hook").call_sites;
  ASSERT_TRUE(hook.complete) << hook.why_not;
  ASSERT_EQ(hook.sites.size(), 2u);
  for (const CallSite& s : hook.sites) {
    EXPECT_FALSE(s.tail_call);
    EXPECT_EQ(s.site.instruction.mnemonic, "call rel32");
    EXPECT_EQ(s.site.instruction.cost, ProbeCost::kEmulated);
    ASSERT_TRUE(s.after) << s.after_why_not;
    EXPECT_EQ(s.after->address, s.site.address + 5);
  }
  EXPECT_EQ(hook.sites[0].caller, "shape_caller_a");
  EXPECT_EQ(hook.sites[0].after->instruction.cost, ProbeCost::kSingleStep);  // mov %eax, %ebx
  EXPECT_EQ(hook.sites[1].caller, "shape_caller_b");
  EXPECT_EQ(hook.sites[1].after->instruction.cost, ProbeCost::kEmulated);  // nop

  // A tail call is an entry too, but the function then returns to its caller's caller.
  const CallSites& lone = Of("shape_lone_ret").call_sites;
  ASSERT_TRUE(lone.complete) << lone.why_not;
  ASSERT_EQ(lone.sites.size(), 3u);
  size_t tail_calls = 0;
  for (const CallSite& s : lone.sites) {
    tail_calls += s.tail_call;
    EXPECT_FALSE(s.after);
    EXPECT_NE(s.after_why_not.find("tail"), std::string::npos) << s.after_why_not;
  }
  EXPECT_EQ(tail_calls, 1u);

  // The instruction after the second call of shape_dispatch is also a loop's target.
  const CallSites& dispatch = Of("shape_dispatch").call_sites;
  ASSERT_TRUE(dispatch.complete) << dispatch.why_not;
  ASSERT_EQ(dispatch.sites.size(), 2u);
  EXPECT_TRUE(dispatch.sites[0].after) << dispatch.sites[0].after_why_not;
  EXPECT_FALSE(dispatch.sites[1].after);
  EXPECT_NE(dispatch.sites[1].after_why_not.find("conditional jump"), std::string::npos)
      << dispatch.sites[1].after_why_not;
}

TEST_P(ProbeRelocationTest, CallSitesAreRefusedWhenOtherEntriesMayExist) {
  auto expect_refused = [&](const std::string& name, const std::string& reason) {
    const CallSites& cs = Of(name).call_sites;
    EXPECT_FALSE(cs.complete) << name;
    EXPECT_TRUE(cs.sites.empty()) << name;
    EXPECT_NE(cs.why_not.find(reason), std::string::npos) << name << ": " << cs.why_not;
  };
  expect_refused("shape_address_taken", "address is taken: 'lea");
  expect_refused("shape_data_pointer", "address is taken");
  expect_refused("shape_conditional", "conditional jump");
  expect_refused("shape_exported", "exported (.dynsym)");
  expect_refused("shape_never_called", "no direct call site");
  expect_refused("shape_fallen_into", "fall through");
  if (GetParam() == "nopie") expect_refused("shape_abs_imm", "address is taken: 'mov");
}

INSTANTIATE_TEST_SUITE_P(PieAndNonPie, ProbeRelocationTest, ::testing::Values("pie", "nopie"));

}  // namespace
}  // namespace looptrace::symbols
