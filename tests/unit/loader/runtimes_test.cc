#include "loader/runtimes/runtimes.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "loader/plan/attach_plan.h"
#include "loader/plan/binaries.h"
#include "loader/plan/runtime_checks.h"
#include "loader/runtimes/jvm/jvm.h"
#include "loader/runtimes/jvm/method_namer.h"
#include "loader/runtimes/python/python.h"

namespace looptrace::loader {
namespace {

namespace fs = std::filesystem;

std::string Fixture(const std::string& name) { return std::string(LOOPTRACE_FIXTURE_DIR) + "/" + name; }

TargetCommand Command(std::vector<std::string> argv, std::vector<std::string> env = {}) {
  TargetCommand c;
  c.argv = std::move(argv);
  c.environ = std::move(env);
  c.known = true;
  return c;
}

TEST(JvmProbeFlags, ComeFromTheCommandLineAndTheEnvironmentInHotSpotsOrder) {
  auto flags =
      jvm::ParseProbeFlags(Command({"java", "-XX:+DTraceMethodProbes", "-cp", "-XX:+DTraceMonitorProbes", "Main"}));
  EXPECT_TRUE(flags.method);
  EXPECT_FALSE(flags.monitor);  // it was -cp's value
  EXPECT_TRUE(flags.certain);

  // After the main class, words are the program's.
  flags = jvm::ParseProbeFlags(Command({"java", "Main", "-XX:+DTraceMethodProbes"}));
  EXPECT_FALSE(flags.method);
  flags = jvm::ParseProbeFlags(Command({"java", "-jar", "app.jar", "-XX:+DTraceMethodProbes"}));
  EXPECT_FALSE(flags.method);

  // JAVA_TOOL_OPTIONS first, the command line over it, _JAVA_OPTIONS last.
  flags = jvm::ParseProbeFlags(
      Command({"java", "-XX:-DTraceMethodProbes", "Main"}, {"JAVA_TOOL_OPTIONS=-XX:+DTraceMethodProbes"}));
  EXPECT_FALSE(flags.method);
  flags = jvm::ParseProbeFlags(
      Command({"java", "-XX:-DTraceMethodProbes", "Main"}, {"_JAVA_OPTIONS=-Xmx1g -XX:+DTraceMethodProbes"}));
  EXPECT_TRUE(flags.method);
  // JDK_JAVA_OPTIONS is the java launcher's only.
  flags = jvm::ParseProbeFlags(Command({"java", "Main"}, {"JDK_JAVA_OPTIONS=-XX:+DTraceMethodProbes"}));
  EXPECT_TRUE(flags.method);
  flags =
      jvm::ParseProbeFlags(Command({"/opt/app/bin/launcher", "Main"}, {"JDK_JAVA_OPTIONS=-XX:+DTraceMethodProbes"}));
  EXPECT_FALSE(flags.method);

  // ExtendedDTraceProbes turns on both.
  flags = jvm::ParseProbeFlags(Command({"java", "-XX:+ExtendedDTraceProbes", "Main"}));
  EXPECT_TRUE(flags.method);
  EXPECT_TRUE(flags.monitor);

  // Options from files cannot be seen: the verdict is not certain.
  EXPECT_FALSE(jvm::ParseProbeFlags(Command({"java", "@options.txt", "Main"})).certain);
  EXPECT_FALSE(jvm::ParseProbeFlags(Command({"java", "-XX:Flags=.hotspotrc", "Main"})).certain);
  TargetCommand unknown;
  EXPECT_FALSE(jvm::ParseProbeFlags(unknown).certain);
}

class FakeJdk : public ::testing::Test {
 protected:
  void SetUp() override {
    char templ[] = "/tmp/looptrace-jdk-XXXXXX";
    home_ = mkdtemp(templ);
    fs::create_directories(home_ / "bin");
    fs::create_directories(home_ / "lib" / "server");
    fs::create_directories(home_ / "lib" / "zero");
    std::ofstream(home_ / "bin" / "java") << "";
    std::ofstream(home_ / "lib" / "server" / "libjvm.so") << "";
    std::ofstream(home_ / "lib" / "zero" / "libjvm.so") << "";
    fs::create_symlink(home_ / "bin" / "java", home_ / "java-link");
  }
  void TearDown() override { fs::remove_all(home_); }
  fs::path home_;
};

TEST_F(FakeJdk, TheJavaLauncherLoadsLibjvmFromItsHomeAsJvmCfgSays) {
  EXPECT_EQ(DlopenedRuntimeLibrary("libjvm.so", home_ / "bin" / "java"), (home_ / "lib/server/libjvm.so").string());
  // Through a symlink (Debian's /usr/bin/java -> /etc/alternatives/java -> .../bin/java).
  EXPECT_EQ(DlopenedRuntimeLibrary("libjvm.so", home_ / "java-link"), (home_ / "lib/server/libjvm.so").string());
  std::ofstream(home_ / "lib" / "jvm.cfg") << "# comment\n-zero KNOWN\n-server KNOWN\n";
  EXPECT_EQ(DlopenedRuntimeLibrary("libjvm.so", home_ / "bin" / "java"), (home_ / "lib/zero/libjvm.so").string());
  // Other libraries, and programs outside a JDK's bin/, are not the launcher's business.
  EXPECT_EQ(DlopenedRuntimeLibrary("libglib-2.0.so", home_ / "bin" / "java"), std::nullopt);
  EXPECT_EQ(DlopenedRuntimeLibrary("libjvm.so", home_ / "java-elsewhere"), std::nullopt);
}

TEST_F(FakeJdk, AJvmProfileResolvesLibjvmForARunWithoutMappingsAndAPythonOneSaysWhatRuns) {
  TargetBinaries target;
  target.exe_path = home_ / "bin" / "java";
  target.require_linked = true;
  auto path = ResolveBinary("libjvm.so", target);
  ASSERT_TRUE(path) << path.error().message;
  EXPECT_EQ(*path, (home_ / "lib/server/libjvm.so").string());

  RuntimeInfo info = IdentifyRuntime(target);
  EXPECT_EQ(info.name, "jvm");
  EXPECT_TRUE(info.binary.empty());  // the fake libjvm.so has no hotspot probes

  auto python = LoadProfile("python");
  ASSERT_TRUE(python) << python.error().message;
  auto present = CheckRuntimePresent(*python, target);
  ASSERT_FALSE(present);
  EXPECT_NE(present.error().message.find("profile python is for CPython, but"), std::string::npos)
      << present.error().message;
  EXPECT_NE(present.error().message.find("runs a HotSpot JVM"), std::string::npos) << present.error().message;
  EXPECT_EQ(present.error().code, ExitCode::kProfile);
}

// One registry: each runtime once, by the name profiles declare, with a title for messages.
TEST(Runtimes, EveryRuntimeIsRegisteredOnceByItsProfileName) {
  std::vector<std::string_view> names;
  for (const Runtime* runtime : AllRuntimes()) {
    ASSERT_NE(runtime, nullptr);
    EXPECT_FALSE(runtime->title().empty()) << runtime->name();
    EXPECT_EQ(FindRuntime(runtime->name()), runtime);
    EXPECT_EQ(std::count(names.begin(), names.end(), runtime->name()), 0) << runtime->name();
    names.push_back(runtime->name());
  }
  EXPECT_EQ(names, (std::vector<std::string_view>{"jvm", "python", "node"}));  // detection order
  EXPECT_EQ(FindRuntime("ruby"), nullptr);
  // A runtime's point syntax resolves through the registry, and only there.
  auto elf = symbols::ElfFile::Open(Fixture("fake_cpython_type_pie"));
  ASSERT_TRUE(elf) << elf.error().message;
  EXPECT_EQ(ResolveRuntimePoint(*elf, "PyContext_Type.run"), python::ResolveTypeMethod(*elf, "PyContext_Type.run"));
  EXPECT_EQ(ResolveRuntimePoint(*elf, "no_such_point"), std::nullopt);
}

// A runtime's check sees the plan as plain data: the profile's name and its resolved points.
TEST(Runtimes, ChecksSeeTheResolvedPointsOnly) {
  TargetBinaries target;
  target.exe_path = "/usr/bin/java";
  RuntimeCheck check;
  check.profile_name = "jvm";
  check.points = {"hotspot:gc__begin", "hotspot:gc__end"};  // no method or monitor probes
  EXPECT_TRUE(FindRuntime("jvm")->Check(check, target, Command({"java", "Main"})));
  check.points.push_back("hotspot:method__entry");
  // Method probes off: attached all the same (Java frames need no flag); a warning says what
  // the session lacks (runtime_jvm_test.cc checks its text).
  EXPECT_TRUE(FindRuntime("jvm")->Check(check, target, Command({"java", "Main"})));
  EXPECT_TRUE(FindRuntime("jvm")->Check(check, target, Command({"java", "-XX:+DTraceMethodProbes", "Main"})));
}

// A JVM without method probes gets jvm-edt instead of the detected jvm (its messages bounded
// by the event dispatch thread's waits); with them, jvm stays.
TEST(Runtimes, AJvmWithoutMethodProbesGetsTheWaitBoundedProfile) {
  TargetBinaries target;
  const Runtime* jvm = FindRuntime("jvm");
  ASSERT_NE(jvm, nullptr);
  auto other = jvm->ProfileInstead("jvm", target, Command({"java", "Main"}));
  ASSERT_TRUE(other);
  EXPECT_EQ(other->profile, "jvm-edt");
  EXPECT_NE(other->why.find("-XX:+DTraceMethodProbes"), std::string::npos) << other->why;
  EXPECT_FALSE(jvm->ProfileInstead("jvm", target, Command({"java", "-XX:+DTraceMethodProbes", "Main"})));
  EXPECT_FALSE(jvm->ProfileInstead("epoll", target, Command({"java", "Main"})));

  auto edt = LoadProfile("jvm-edt");
  ASSERT_TRUE(edt) << edt.error().message;
  EXPECT_EQ(edt->message_definition,
            "wait-bounded java.awt.EventQueue.getNextEvent jdk.internal.misc.Unsafe.park sun.misc.Unsafe.park");
  EXPECT_EQ(edt->thread.Describe(), "loop:AWT-EventQueue-*");
  EXPECT_FALSE(edt->HasRole(Role::kDispatchBegin));
  // A service's thread pool (picked by record -p when the JVM has a pool-* thread and no
  // event dispatch thread): its worker's tasks bounded by its waits for the next one.
  auto executor = LoadProfile("jvm-executor");
  ASSERT_TRUE(executor) << executor.error().message;
  EXPECT_EQ(executor->message_definition,
            "wait-bounded java.util.concurrent.ThreadPoolExecutor.getTask jdk.internal.misc.Unsafe.park "
            "sun.misc.Unsafe.park");
  EXPECT_EQ(executor->thread.Describe(), "loop:pool-*");
  EXPECT_FALSE(executor->HasRole(Role::kDispatchBegin));
  // A wait-bounded line names the wait frame and at least one park frame.
  EXPECT_FALSE(ParseProfile("profile x\nmessages wait-bounded app.Queue.next\n", "test"));
}

// The frames that name an event's message: the program's classes, not the JDK's nor a
// lambda's generated proxy.
TEST(Runtimes, JavaProgramClassesAreNotTheJdksNorLambdaProxies) {
  EXPECT_TRUE(jvm::IsProgramClass("EdtApp"));
  EXPECT_TRUE(jvm::IsProgramClass("com.example.ui.MainWindow$1"));
  EXPECT_FALSE(jvm::IsProgramClass("java.awt.EventQueue"));
  EXPECT_FALSE(jvm::IsProgramClass("javax.swing.JButton"));
  EXPECT_FALSE(jvm::IsProgramClass("jdk.internal.misc.Unsafe"));
  EXPECT_FALSE(jvm::IsProgramClass("sun.awt.SunToolkit"));
  EXPECT_FALSE(jvm::IsProgramClass("EdtApp$$Lambda$14/0x0000000800c0b000"));
}

TEST(Runtimes, ANativeProgramIsNoRuntime) {
  TargetBinaries target;
  target.exe_path = "/bin/true";
  EXPECT_EQ(IdentifyRuntime(target).name, "");
  auto jvm = LoadProfile("jvm");
  ASSERT_TRUE(jvm) << jvm.error().message;
  auto present = CheckRuntimePresent(*jvm, target);
  ASSERT_FALSE(present);
  EXPECT_NE(present.error().message.find("profile jvm is for a HotSpot JVM, but /bin/true runs no runtime"),
            std::string::npos)
      << present.error().message;
}

TEST(Runtimes, BuiltInRuntimeProfilesDeclareTheirRuntimeAndThread) {
  auto python = LoadProfile("python");
  ASSERT_TRUE(python) << python.error().message;
  EXPECT_EQ(python->runtimes, std::vector<std::string>{"python"});
  EXPECT_EQ(python->thread.mode, ThreadChoice::Mode::kLoop);
  EXPECT_TRUE(python->HasRole(Role::kMethodEnter));
  EXPECT_TRUE(python->HasRole(Role::kGcBegin));
  auto lite = LoadProfile("python-asyncio");
  ASSERT_TRUE(lite);
  EXPECT_FALSE(lite->HasRole(Role::kMethodEnter));

  auto jvm = LoadProfile("jvm");
  ASSERT_TRUE(jvm) << jvm.error().message;
  EXPECT_EQ(jvm->thread.Describe(), "loop:AWT-EventQueue-*");
  for (Role role : {Role::kDispatchBegin, Role::kMethodEnter, Role::kGcBegin, Role::kLockWaitBegin, Role::kLockRelease})
    EXPECT_TRUE(jvm->HasRole(role)) << RoleName(role);
  // The dispatch predicate reads length-delimited strings: class and method.
  const ProbeSpec& dispatch = jvm->probes.front();
  ASSERT_EQ(dispatch.conditions.size(), 2u);
  EXPECT_EQ(dispatch.conditions[0].arg.source, 3);
  EXPECT_EQ(dispatch.conditions[0].arg.length_source, 4);
  EXPECT_EQ(dispatch.conditions[0].pattern, "dispatchEvent");

  // Composed with a loop profile, the thread choices must agree.
  auto composed = LoadProfile("glib,python");
  ASSERT_TRUE(composed) << composed.error().message;
  EXPECT_EQ(composed->thread.mode, ThreadChoice::Mode::kLoop);
  auto clash = LoadProfile("python,jvm");
  ASSERT_FALSE(clash);
  EXPECT_NE(clash.error().message.find("thread loop:AWT-EventQueue-* conflicts with thread loop"), std::string::npos)
      << clash.error().message;
}

TEST(PythonTypeMethods, ACMethodIsFoundThroughItsTypesMethodTableInPieAndNonPieBinaries) {
  for (const char* name : {"fake_cpython_type_pie", "fake_cpython_type_nopie"}) {
    SCOPED_TRACE(name);
    auto elf = symbols::ElfFile::Open(Fixture(name));
    ASSERT_TRUE(elf) << elf.error().message;
    auto run = elf->FindFunctions("context_run");
    ASSERT_EQ(run.size(), 1u);
    EXPECT_EQ(python::ResolveTypeMethod(*elf, "PyContext_Type.run"), run.front()->address);
    EXPECT_EQ(python::ResolveTypeMethod(*elf, "PyContext_Type.copy"),
              elf->FindFunctions("context_copy").front()->address);
    EXPECT_EQ(python::ResolveTypeMethod(*elf, "PyContext_Type.missing"), std::nullopt);
    EXPECT_EQ(python::ResolveTypeMethod(*elf, "NoSuchType.run"), std::nullopt);
    EXPECT_EQ(python::ResolveTypeMethod(*elf, "context_run"), std::nullopt);
  }
}

TEST(PythonTypeMethods, AProfileLineNamesTheMethodAsItsPoint) {
  auto profile = ParseProfile(
      "probe dispatch.begin uprobe exe PyContext_Type.run\n"
      "probe dispatch.end uretprobe exe PyContext_Type.run\n",
      "t.profile");
  ASSERT_TRUE(profile) << profile.error().message;
  TargetBinaries target;
  target.exe_path = Fixture("fake_cpython_type_pie");
  auto plan = ResolveProfile(*profile, target);
  ASSERT_TRUE(plan) << plan.error().message;
  ASSERT_EQ(plan->probes.size(), 2u);
  auto elf = symbols::ElfFile::Open(target.exe_path);
  ASSERT_TRUE(elf);
  const symbols::Symbol* run = elf->FindFunctions("context_run").front();
  EXPECT_EQ(plan->probes[0].symbol, "PyContext_Type.run");
  EXPECT_EQ(plan->probes[0].file_offset, run->file_offset);
  EXPECT_EQ(plan->probes[1].spec.kind, ProbeKind::kUretprobe);
}

TEST(UsdtArguments, ConditionsAndArgumentsMustNameArgumentsTheProbeHasWithTheRightSize) {
  TargetBinaries target;
  target.exe_path = Fixture("probe_shapes_pie");  // looptrace_test:tick has two int arguments
  auto resolve = [&](const std::string& line) {
    auto profile = ParseProfile(line + "\nprobe dispatch.end usdt exe looptrace_test:twice\n", "u.profile");
    EXPECT_TRUE(profile) << profile.error().message;
    return ResolveProfile(*profile, target);
  };
  EXPECT_TRUE(resolve("probe dispatch.begin usdt exe looptrace_test:tick id=arg2 if arg1 > 0"));
  auto missing = resolve("probe dispatch.begin usdt exe looptrace_test:tick if arg3 == 1");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("condition 'arg3 == 1' reads arg3, but usdt looptrace_test:tick in"),
            std::string::npos)
      << missing.error().message;
  EXPECT_NE(missing.error().message.find("has 2 arguments"), std::string::npos) << missing.error().message;
  EXPECT_EQ(missing.error().code, ExitCode::kProfile);
  auto bound = resolve("probe dispatch.begin usdt exe looptrace_test:tick id=arg5");
  ASSERT_FALSE(bound);
  EXPECT_NE(bound.error().message.find("argument 'id' reads arg5"), std::string::npos) << bound.error().message;
  auto as_string = resolve("probe dispatch.begin usdt exe looptrace_test:tick if arg1:str == \"x\"");
  ASSERT_FALSE(as_string);
  EXPECT_NE(as_string.error().message.find("reads arg1 as a string, but it is a 4-byte integer"), std::string::npos)
      << as_string.error().message;
}

}  // namespace
}  // namespace looptrace::loader
