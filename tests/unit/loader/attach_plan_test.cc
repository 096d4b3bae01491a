// Resolving the runtime profiles' shapes against fixture binaries (no root, no BPF):
// function pointers stored in data, thunks left out of globs, optional probes, `requires`
// marks and auto-detection's explanations.
#include "loader/plan/profile_choice.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "looptrace/symbols/data_pointer.h"
#include "looptrace/symbols/elf_file.h"

namespace looptrace::loader {
namespace {

std::string Fixture(const std::string& name) { return std::string(LOOPTRACE_FIXTURE_DIR) + "/" + name; }

TargetBinaries Exe(const std::string& name) {
  TargetBinaries t;
  t.exe_path = Fixture(name);
  return t;
}

Result<AttachPlan> Resolve(const std::string& text, const TargetBinaries& target) {
  auto profile = ParseProfile(text, "t.profile");
  if (!profile) return std::unexpected(profile.error());
  return ResolveProfile(*profile, target);
}

TEST(AttachPlan, PointerPointsProbeTheFunctionATableStores) {
  for (const char* exe : {"loop_shapes_pie", "loop_shapes_nopie"}) {
    SCOPED_TRACE(exe);
    auto elf = symbols::ElfFile::Open(Fixture(exe));
    ASSERT_TRUE(elf) << elf.error().message;
    auto dispatch = elf->FindFunctions("lt_table_dispatch");
    ASSERT_EQ(dispatch.size(), 1u);
    auto stored = symbols::ReadStoredPointer(*elf, "lt_exported_funcs", 16);
    ASSERT_TRUE(stored) << stored.error().message;
    EXPECT_EQ(*stored, dispatch[0]->address);
    // The null `check` slot, past the end, and no such symbol: errors naming it.
    auto null = symbols::ReadStoredPointer(*elf, "lt_exported_funcs", 8);
    ASSERT_FALSE(null);
    EXPECT_NE(null.error().message.find("null pointer"), std::string::npos) << null.error().message;
    EXPECT_FALSE(symbols::ReadStoredPointer(*elf, "lt_exported_funcs", 32));
    auto missing = symbols::ReadStoredPointer(*elf, "no_such_table", 0);
    ASSERT_FALSE(missing);
    EXPECT_NE(missing.error().message.find("'no_such_table' not found"), std::string::npos);

    auto plan = Resolve(
        "probe dispatch.begin uprobe exe *(lt_exported_funcs+16) name=arg1:sym\n"
        "probe dispatch.end uretprobe exe *(lt_exported_funcs+16)\n",
        Exe(exe));
    ASSERT_TRUE(plan) << plan.error().message;
    ASSERT_EQ(plan->probes.size(), 2u);
    EXPECT_EQ(plan->probes[0].address, dispatch[0]->address);
    EXPECT_EQ(plan->probes[0].file_offset, dispatch[0]->file_offset);
    EXPECT_EQ(plan->probes[0].symbol, "*(lt_exported_funcs+16) = lt_table_dispatch");
  }
}

TEST(AttachPlan, GlobsSkipThunksAndOptionalProbesAreLeftOutWithANote) {
  auto plan = Resolve(R"P(probe dispatch.begin uprobe exe "*::handleEvent(int)" name=func
probe dispatch.end uretprobe exe "*::handleEvent(int)"
optional probe idle.begin uprobe exe no_such_function
optional probe idle.end uprobe exe "*::no_such_glob*"
)P",
                      Exe("loop_shapes_pie"));
  ASSERT_TRUE(plan) << plan.error().message;
  // Both::handleEvent(int) only, not "non-virtual thunk to Both::handleEvent(int)".
  ASSERT_EQ(plan->probes.size(), 2u);
  EXPECT_EQ(plan->probes[0].symbol, "Both::handleEvent(int)");
  auto elf = symbols::ElfFile::Open(Fixture("loop_shapes_pie"));
  ASSERT_TRUE(elf);
  EXPECT_EQ(elf->FindFunctions("*::handleEvent(int)").size(), 2u);  // the thunk exists
  ASSERT_EQ(plan->left_out.size(), 2u);
  EXPECT_NE(plan->left_out[0].find("t.profile:3: optional idle.begin no_such_function left out"), std::string::npos)
      << plan->left_out[0];

  auto required =
      Resolve("probe idle.begin uprobe exe no_such_function\nprobe idle.end uprobe exe main\n", Exe("loop_shapes_pie"));
  ASSERT_FALSE(required);
  EXPECT_NE(required.error().message.find("symbol 'no_such_function' not found"), std::string::npos);
}

TEST(AttachPlan, RequirementsMarkTheRuntime) {
  auto fits =
      Resolve("requires exe lt_table_dispatch\nprobe idle.begin uprobe exe main\nprobe idle.end uprobe exe main\n",
              Exe("loop_shapes_pie"));
  EXPECT_TRUE(fits) << fits.error().message;
  auto lacks = Resolve(
      "requires exe g_main_context_iteration\nprobe idle.begin uprobe exe main\n"
      "probe idle.end uprobe exe main\n",
      Exe("loop_shapes_pie"));
  ASSERT_FALSE(lacks);
  EXPECT_NE(lacks.error().message.find("t.profile line 1: needs g_main_context_iteration in exe"), std::string::npos)
      << lacks.error().message;
  EXPECT_EQ(lacks.error().code, ExitCode::kProfile);
}

// Errors carry what kind of misfit they are (not words of their message): a target that is
// not the profile's (another profile may fit), a point not in its binary (an optional line
// is left out), or anything else.
TEST(AttachPlan, ErrorsSayWhetherTheTargetOrTheProfileIsAtFault) {
  auto resolve = [](const std::string& text, const TargetBinaries& target) {
    auto profile = ParseProfile(text, "t.profile");
    EXPECT_TRUE(profile) << profile.error().message;
    return ResolveProfile(*profile, target);
  };
  const std::string pair = "probe idle.begin uprobe exe main\nprobe idle.end uprobe exe main\n";
  auto mark = resolve("requires exe g_main_context_iteration\n" + pair, Exe("loop_shapes_pie"));
  ASSERT_FALSE(mark);
  EXPECT_EQ(mark.error().kind, PlanErrorKind::kDoesNotFit);
  TargetBinaries running = Exe("loop_shapes_pie");
  running.pid = getpid();
  auto library =
      resolve("probe idle.begin uprobe libglib-2.0.so g_idle_add\nprobe idle.end uprobe exe main\n", running);
  ASSERT_FALSE(library);
  EXPECT_EQ(library.error().kind, PlanErrorKind::kDoesNotFit) << library.error().message;
  EXPECT_NE(library.error().message.find("has no library 'libglib-2.0.so' mapped"), std::string::npos);
  auto point =
      resolve("probe idle.begin uprobe exe no_such_function\nprobe idle.end uprobe exe main\n", Exe("loop_shapes_pie"));
  ASSERT_FALSE(point);
  EXPECT_EQ(point.error().kind, PlanErrorKind::kNoSuchPoint);
  // A USDT line reading an argument its probe lacks is the profile's fault, even if optional.
  auto usdt = resolve(
      "optional probe dispatch.begin usdt exe looptrace_test:tick if arg3 == 1\n"
      "probe dispatch.end usdt exe looptrace_test:twice\n",
      Exe("probe_shapes_pie"));
  ASSERT_FALSE(usdt);
  EXPECT_EQ(usdt.error().kind, PlanErrorKind::kOther);
  EXPECT_NE(usdt.error().message.find("reads arg3"), std::string::npos) << usdt.error().message;
}

TEST(AttachPlan, AutoDetectionSaysWhyEachBuiltinFitsOrNot) {
  // A C program that never polls: no built-in fits, and each says why. (A C++ program
  // links libstdc++, which imports poll: epoll fits any of them.)
  Detection none = DetectProfile(Exe("probe_shapes_pie"), /*stop_at_first=*/false);
  EXPECT_FALSE(none.picked);
  bool saw_glib = false, saw_android = false, saw_epoll = false;
  for (const auto& c : none.candidates) {
    EXPECT_FALSE(c.matches) << c.name;
    EXPECT_FALSE(c.reason.empty()) << c.name;
    if (c.name == "glib") {
      saw_glib = true;
      EXPECT_NE(c.reason.find("needs g_main_context_iteration in libglib-2.0.so"), std::string::npos) << c.reason;
    }
    if (c.name == "android-looper") {
      saw_android = true;
      EXPECT_NE(c.reason.find("needs android::Looper::pollOnce in libutils.so"), std::string::npos) << c.reason;
    }
    if (c.name == "epoll") {
      saw_epoll = true;
      EXPECT_NE(c.reason.find("needs a call to epoll_wait|epoll_pwait"), std::string::npos) << c.reason;
    }
  }
  EXPECT_TRUE(saw_glib && saw_android && saw_epoll);

  // The loop programs: each runtime's own profile, the generic one fitting too.
  auto program = [](const char* name) {
    TargetBinaries t;
    t.exe_path = std::string(LOOPTRACE_BINARY_DIR) + "/" + name;
    return t;
  };
  struct Expect {
    const char* program;
    const char* picked;
    const char* mark;
  };
  for (const Expect& e :
       {Expect{"looptrace-glib-loop", "glib", "g_main_context_iteration in libglib-2.0.so"},
        Expect{"looptrace-android-looper", "android-looper", "android::Looper::pollOnce in libutils.so"},
        Expect{"looptrace-epoll-loop", "epoll", "looptrace-epoll-loop calls "}}) {
    SCOPED_TRACE(e.program);
    Detection d = DetectProfile(program(e.program), /*stop_at_first=*/false);
    ASSERT_TRUE(d.picked);
    EXPECT_EQ(d.candidates[*d.picked].name, e.picked);
    EXPECT_NE(d.candidates[*d.picked].reason.find(e.mark), std::string::npos) << d.candidates[*d.picked].reason;
    EXPECT_EQ(d.profile.name, e.picked);
    EXPECT_TRUE(d.candidates.back().matches) << "epoll fits every loop: " << d.candidates.back().reason;
  }

  // An explicit profile for a runtime the program does not have says so.
  auto chosen = ChooseProfile("android-looper", Exe("loop_shapes_pie"));
  ASSERT_FALSE(chosen);
  EXPECT_NE(chosen.error().message.find("profile android-looper does not fit"), std::string::npos)
      << chosen.error().message;
  EXPECT_NE(chosen.error().hint.find("looptrace probes"), std::string::npos) << chosen.error().hint;
}

// `requires-loaded`: checked against what a running process maps (this test maps libc, not
// CPython's _asyncio); a program not started cannot be checked, and an explicit profile
// only warns.
TEST(AttachPlan, LoadedRequirementsNeedARunningTargetToMapTheModule) {
  const std::string probes =
      "probe dispatch.begin uprobe exe lt_table_dispatch\nprobe dispatch.end uretprobe exe lt_table_dispatch\n";
  const std::string text = "requires-loaded _asyncio.*|_no_such_module.*\n" + probes;
  TargetBinaries running;
  running.pid = getpid();
  running.exe_path = Fixture("loop_shapes_pie");
  running.detecting = true;
  auto detected = Resolve(text, running);
  ASSERT_FALSE(detected);
  EXPECT_NE(detected.error().message.find("t.profile line 1: needs _asyncio.*|_no_such_module.* loaded: pid "),
            std::string::npos)
      << detected.error().message;

  running.detecting = false;  // --profile: resolves, and says what it expects
  auto explicit_plan = Resolve(text, running);
  ASSERT_TRUE(explicit_plan) << explicit_plan.error().message;
  ASSERT_EQ(explicit_plan->assumptions.size(), 1u);
  EXPECT_NE(explicit_plan->assumptions[0].find("expects _asyncio.*|_no_such_module.* loaded (t.profile line 1)"),
            std::string::npos)
      << explicit_plan->assumptions[0];

  running.detecting = true;  // a module this process has mapped
  auto libc = Resolve("requires-loaded libc.so*\n" + probes, running);
  ASSERT_TRUE(libc) << libc.error().message;
  EXPECT_TRUE(libc->assumptions.empty());
  EXPECT_NE(std::find(libc->marks.begin(), libc->marks.end(), "libc.so.6 loaded"), libc->marks.end());

  TargetBinaries not_started = Exe("loop_shapes_pie");
  not_started.detecting = true;
  auto unchecked = Resolve(text, not_started);
  ASSERT_TRUE(unchecked) << unchecked.error().message;
  ASSERT_EQ(unchecked->assumptions.size(), 1u);
  EXPECT_EQ(unchecked->assumptions[0],
            "assumes the program loads _asyncio.*|_no_such_module.*, which cannot be checked before it runs");

  auto bad = ParseProfile("requires-loaded\n", "t.profile");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "t.profile:1: requires-loaded needs: requires-loaded GLOB[|GLOB...]");
}

}  // namespace
}  // namespace looptrace::loader
