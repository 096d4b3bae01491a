#include "loader/plan/profile.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "loader/plan/attach_plan.h"

namespace looptrace::loader {
namespace {

// The sample target's profiles: test files, passed with --profile (never built in).
std::string SampleProfile(const std::string& name) {
  return std::string(LOOPTRACE_SOURCE_DIR) + "/tests/sample_app/profiles/" + name + ".profile";
}

TEST(Profile, ParsesProbesArgumentsAndComments) {
  auto profile = ParseProfile(R"(
# comment
profile demo   # trailing comment
description  A demo profile
probe dispatch.begin uprobe exe my_begin id=arg1 name=arg2:str
probe dispatch.end   uretprobe /usr/lib/libx.so my_begin id=ret:int
probe poll.begin usdt libglib-2.0.so glib:poll__begin
probe poll.end usdt libglib-2.0.so glib:poll__end
)",
                              "demo.profile");
  ASSERT_TRUE(profile) << profile.error().message;
  EXPECT_EQ(profile->name, "demo");
  EXPECT_EQ(profile->description, "A demo profile");
  ASSERT_EQ(profile->probes.size(), 4u);
  const ProbeSpec& begin = profile->probes[0];
  EXPECT_EQ(begin.role, Role::kDispatchBegin);
  EXPECT_EQ(begin.kind, ProbeKind::kUprobe);
  EXPECT_EQ(begin.binary, "exe");
  EXPECT_EQ(begin.point, "my_begin");
  EXPECT_EQ(begin.line, 5);
  ASSERT_EQ(begin.args.size(), 2u);
  EXPECT_EQ(begin.args[1].name, "name");
  EXPECT_EQ(begin.args[1].source, 1);
  EXPECT_EQ(begin.args[1].type, ArgType::kStr);
  EXPECT_EQ(profile->probes[1].args[0].source, LT_SOURCE_RETVAL);
  EXPECT_EQ(profile->probes[1].args[0].type, ArgType::kInt);
  EXPECT_EQ(profile->probes[2].kind, ProbeKind::kUsdt);
}

struct BadCase {
  const char* text;
  const char* expected;  // substring of the error
};

TEST(Profile, ErrorsNameFileAndLine) {
  const BadCase cases[] = {
      {"probe dispatch.bgin uprobe exe f\n", "p.profile:1: unknown role 'dispatch.bgin'"},
      {"\nprobe dispatch.begin kprobe exe f\n", "p.profile:2: unknown probe kind 'kprobe'"},
      {"probe dispatch.begin uprobe exe\n", "p.profile:1: probe needs"},
      {"probe dispatch.begin uprobe exe f id=arg13\nprobe dispatch.end uprobe exe g\n",
       "p.profile:1: argument 'id': source 'arg13'"},
      {"probe dispatch.begin uprobe exe f colour=arg1\nprobe dispatch.end uprobe exe g\n",
       "role dispatch.begin has no argument 'colour'"},
      {"probe dispatch.begin uprobe exe f id=arg1:float\nprobe dispatch.end uprobe exe g\n", "unknown type 'float'"},
      {"probe dispatch.begin uprobe exe f id=ret\nprobe dispatch.end uprobe exe g\n", "'ret' needs a uretprobe"},
      {"probe dispatch.begin uprobe exe f id=arg1 id=arg2\nprobe dispatch.end uprobe exe g\n", "bound twice"},
      {"probe dispatch.begin usdt exe nocolon\n", "must be provider:name"},
      {"probe dispatch.begin uprobe exe f\n", "p.profile:1: maps dispatch.begin but no dispatch.end"},
      {"probe dispatch.begin usdt exe p:f if arg1 == 5x\nprobe dispatch.end uprobe exe g\n", "'5x' is not a number"},
      {"probe dispatch.begin usdt exe p:f if arg1:str == 5\nprobe dispatch.end uprobe exe g\n",
       "a string argument compared with a number"},
      {"probe dispatch.begin usdt exe p:f if arg1 < \"a\"\nprobe dispatch.end uprobe exe g\n",
       "strings compare with ==, != or ~"},
      {"probe dispatch.begin usdt exe p:f if arg1 == \"a\" || arg2 == 1\nprobe dispatch.end uprobe exe g\n",
       "expected && between conditions"},
      {"probe dispatch.begin usdt exe p:f if arg1 == \"unterminated\nprobe dispatch.end uprobe exe g\n",
       "unterminated string"},
      {"probe dispatch.begin usdt exe p:f if arg1 == 1 && arg2 == 2 && arg3 == 3 && arg4 == 4 && arg5 == 5\n"
       "probe dispatch.end uprobe exe g\n",
       "at most 4 conditions"},
      {"probe dispatch.begin usdt exe p:f name=arg2:str(arg13)\nprobe dispatch.end uprobe exe g\n",
       "argument 'name' length: source 'arg13'"},
      {"probe dispatch.begin uprobe exe f id=arg1\nprobe dispatch.begin uprobe exe f id=arg2\n"
       "probe dispatch.end uprobe exe g\n",
       "p.profile:2: dispatch.begin at exe f is already bound differently at p.profile:1"},
      {"include nosuchprofile\n", "p.profile:1: include nosuchprofile: no built-in profile named"},
      {"frobnicate\n", "p.profile:1: unknown directive 'frobnicate'"},
      {"# only a comment\n", "defines no probe"},
      {"probe dispatch.begin uprobe exe f id\nprobe dispatch.end uprobe exe g\n", "is not NAME=SOURCE"},
  };
  for (const auto& c : cases) {
    auto profile = ParseProfile(c.text, "p.profile");
    ASSERT_FALSE(profile) << c.text;
    EXPECT_NE(profile.error().message.find(c.expected), std::string::npos)
        << "got: " << profile.error().message << "\nwant: " << c.expected;
    EXPECT_EQ(profile.error().code, ExitCode::kProfile);
  }
}

TEST(Profile, BuiltinProfilesAllParse) {
  ASSERT_FALSE(BuiltinProfiles().empty());
  for (const auto& builtin : BuiltinProfiles()) {
    auto profile = ParseProfile(builtin.text, builtin.name);
    ASSERT_TRUE(profile) << builtin.name << ": " << profile.error().message;
    EXPECT_EQ(profile->name, builtin.name);
    EXPECT_FALSE(profile->description.empty());
  }
  EXPECT_TRUE(LoadProfile("glib"));
  auto missing = LoadProfile("nosuchprofile");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().hint.find("glib"), std::string::npos);
  // The sample target's profiles are the tests', not the product's.
  for (const auto& builtin : BuiltinProfiles()) EXPECT_FALSE(builtin.name.starts_with("sample")) << builtin.name;
  EXPECT_FALSE(LoadProfile("sample"));
  auto no_file = LoadProfile("/nonexistent/x.profile");
  ASSERT_FALSE(no_file);
  EXPECT_NE(no_file.error().message.find("/nonexistent/x.profile"), std::string::npos);
}

TEST(Profile, ConditionsLengthsAndManyArguments) {
  auto profile = ParseProfile(R"(
probe dispatch.begin usdt libjvm.so hotspot:method__entry if arg2:str(arg3) == "java/awt/EventQueue" && arg4:str(arg5) == "dispatchEvent"
probe dispatch.end usdt libjvm.so hotspot:method__return if arg2:str(arg3) == "java/awt/EventQueue" && arg4:str(arg5) ~ "dispatch*"
probe method.enter usdt exe python:function__entry file=arg1:str name=arg2:str line=arg3:int if arg1 ~ "*/asyncio/*.py"
probe method.exit usdt exe python:function__return file=arg1:str name=arg2:str line=arg3:int if arg1 ~ "*events.py"
probe frame.begin uprobe exe f frame_id=arg9 if arg1 >= -3 && arg2 != 0x10
probe frame.end uprobe exe g if arg3 ~ "a?c*\"q\"\x41"
)",
                              "j.profile");
  ASSERT_TRUE(profile) << profile.error().message;
  ASSERT_EQ(profile->probes.size(), 6u);
  const auto& begin = profile->probes[0];
  ASSERT_EQ(begin.conditions.size(), 2u);
  EXPECT_EQ(begin.conditions[0].arg.source, 1);
  EXPECT_EQ(begin.conditions[0].arg.length_source, 2);
  EXPECT_EQ(begin.conditions[0].op, CompareOp::kStrEq);
  EXPECT_EQ(begin.conditions[0].pattern, "java/awt/EventQueue");
  EXPECT_EQ(profile->probes[1].conditions[1].op, CompareOp::kStrPrefix);  // "dispatch*"
  EXPECT_EQ(profile->probes[1].conditions[1].pattern, "dispatch");
  const auto& enter = profile->probes[2];
  EXPECT_EQ(enter.conditions[0].op, CompareOp::kStrGlob);  // two stars: a real glob
  EXPECT_EQ(profile->probes[3].conditions[0].op, CompareOp::kStrSuffix);
  EXPECT_EQ(profile->probes[3].conditions[0].pattern, "events.py");
  ASSERT_EQ(enter.args.size(), 3u);
  EXPECT_EQ(enter.args[0].name, "name");  // the identity's name first
  const auto& frame = profile->probes[4];
  EXPECT_EQ(frame.args[0].source, 8);  // arg9
  EXPECT_EQ(frame.conditions[0].op, CompareOp::kGe);
  EXPECT_EQ(frame.conditions[0].value, -3);
  EXPECT_EQ(frame.conditions[1].value, 16);
  EXPECT_EQ(profile->probes[5].conditions[0].pattern, "a?c*\"q\"A");
}

TEST(Profile, IncludesAndCompositionsShareLinesAndRefuseConflicts) {
  auto sample = LoadProfile(SampleProfile("sample"));
  ASSERT_TRUE(sample) << sample.error().message;
  // A loop layer and a method layer: the second adds what the first lacks.
  auto composed = LoadProfile("glib," + SampleProfile("sample"));
  ASSERT_TRUE(composed) << composed.error().message;
  EXPECT_EQ(composed->name, "glib+sample");
  EXPECT_TRUE(composed->HasRole(Role::kMethodEnter));
  // The same profile twice is the same lines once.
  auto twice = LoadProfile(SampleProfile("sample") + "," + SampleProfile("sample"));
  ASSERT_TRUE(twice);
  EXPECT_EQ(twice->probes.size(), sample->probes.size());
  auto conflict = ComposeProfiles(
      {*ParseProfile("probe poll.begin uprobe exe p timeout_ms=arg1\nprobe poll.end uprobe exe q\n", "a.profile"),
       *ParseProfile("probe poll.begin uprobe exe p timeout_ms=arg2\nprobe poll.end uprobe exe q\n", "b.profile")});
  ASSERT_FALSE(conflict);
  EXPECT_NE(conflict.error().message.find("b.profile:1"), std::string::npos) << conflict.error().message;
  EXPECT_NE(conflict.error().message.find("a.profile:1"), std::string::npos);
}

TEST(Profile, RuntimeDirectivesMessagesRequiresOptionalFuncSymAndPointerPoints) {
  auto profile = ParseProfile(R"P(
profile rt
messages poll-bounded
requires libutils.so android::Looper::pollOnce
requires-call epoll_wait|poll
probe poll.begin uprobe libc.so epoll_wait timeout_ms=arg4:int
probe poll.end uretprobe libc.so epoll_wait
optional probe dispatch.begin uprobe exe "*::handleMessage(android::Message const&)" name=func what=arg2
optional probe dispatch.end uretprobe exe "*::handleMessage(android::Message const&)"
probe idle.begin uprobe libglib-2.0.so *(g_idle_funcs+16) name=arg2:sym
probe idle.end uretprobe libglib-2.0.so *(g_idle_funcs+0x10)
)P",
                              "rt.profile");
  ASSERT_TRUE(profile) << profile.error().message;
  EXPECT_EQ(profile->message_definition, "poll-bounded");
  EXPECT_EQ(profile->message_definition_where, "rt.profile:3");
  ASSERT_EQ(profile->requirements.size(), 1u);
  EXPECT_EQ(profile->requirements[0].binary, "libutils.so");
  EXPECT_EQ(profile->requirements[0].symbol, "android::Looper::pollOnce");
  ASSERT_EQ(profile->call_requirements.size(), 1u);
  EXPECT_EQ(profile->call_requirements[0].symbols, (std::vector<std::string>{"epoll_wait", "poll"}));
  ASSERT_EQ(profile->probes.size(), 6u);
  const ProbeSpec& handler = profile->probes[2];
  EXPECT_TRUE(handler.optional);
  EXPECT_FALSE(profile->probes[0].optional);
  EXPECT_EQ(handler.point, "*::handleMessage(android::Message const&)");  // quotes removed
  EXPECT_EQ(handler.line, 8);
  ASSERT_EQ(handler.args.size(), 2u);
  EXPECT_EQ(handler.args[0].name, "what");  // BPF-read arguments first
  EXPECT_EQ(handler.args[1].name, "name");
  EXPECT_EQ(handler.args[1].source, kSourceFunction);
  EXPECT_EQ(handler.args[1].type, ArgType::kSym);
  EXPECT_EQ(profile->probes[4].args[0].type, ArgType::kSym);
  EXPECT_TRUE(IsGlobPoint(handler.point));
  EXPECT_FALSE(IsGlobPoint(profile->probes[4].point));
  auto pointer = ParsePointerPoint(profile->probes[4].point);
  ASSERT_TRUE(pointer);
  EXPECT_EQ(pointer->symbol, "g_idle_funcs");
  EXPECT_EQ(pointer->offset, 16u);
  EXPECT_EQ(ParsePointerPoint(profile->probes[5].point)->offset, 16u);
  EXPECT_EQ(ParsePointerPoint("*(table)")->offset, 0u);
  EXPECT_FALSE(ParsePointerPoint("*(anonymous namespace)::f()"));  // a glob
  EXPECT_FALSE(ParsePointerPoint("*(t+zz)"));
  EXPECT_FALSE(ParsePointerPoint("g_idle_funcs"));
}

TEST(Profile, QuotedArgumentsAreFixedTextsTheLoaderGives) {
  auto profile = ParseProfile(R"P(
probe dispatch.begin uprobe exe uv__stream_io name="io: stream" what=arg3
probe dispatch.end uretprobe exe uv__stream_io
)P",
                              "t.profile");
  ASSERT_TRUE(profile) << profile.error().message;
  const ProbeSpec& begin = profile->probes[0];
  ASSERT_EQ(begin.args.size(), 2u);
  EXPECT_EQ(begin.args[0].name, "what");  // BPF-read arguments first
  EXPECT_EQ(begin.args[1].name, "name");
  EXPECT_EQ(begin.args[1].source, kSourceText);
  EXPECT_EQ(begin.args[1].text, "io: stream");
  EXPECT_TRUE(FilledByLoader(begin.args[1]));
  auto condition = ParseProfile("probe dispatch.begin uprobe exe f if \"x\" == \"x\"\n", "c.profile");
  ASSERT_FALSE(condition);
  EXPECT_NE(condition.error().message.find("not a fixed text"), std::string::npos) << condition.error().message;
  auto field = ParseProfile(
      "probe dispatch.begin uprobe exe f due_ms=arg1:at(128)\nprobe dispatch.end uretprobe exe f\n", "f.profile");
  ASSERT_TRUE(field) << field.error().message;
  EXPECT_EQ(field->probes[0].args[0].type, ArgType::kAt);
  EXPECT_EQ(field->probes[0].args[0].offset, 128u);
  for (const char* bad : {"at(12)", "at(2048)", "at(x)", "at()"}) {
    auto wrong = ParseProfile(std::string("probe dispatch.begin uprobe exe f due_ms=arg1:") + bad + "\n", "w.profile");
    ASSERT_FALSE(wrong) << bad;
    EXPECT_NE(wrong.error().message.find("multiple of 8"), std::string::npos) << wrong.error().message;
  }
  auto closure = ParseProfile(
      "probe dispatch.begin uprobe exe f name=arg2:sym closure=arg3:pycallable(8)\nprobe dispatch.end uretprobe exe "
      "f\n",
      "p.profile");
  ASSERT_TRUE(closure) << closure.error().message;
  EXPECT_EQ(closure->probes[0].args[1].type, ArgType::kPyCallable);
  EXPECT_EQ(closure->probes[0].args[1].offset, 8u);
  auto odd = ParseProfile("probe dispatch.begin uprobe exe f closure=arg3:pycallable(4)\n", "o.profile");
  ASSERT_FALSE(odd);
  EXPECT_NE(odd.error().message.find("pycallable(OFFSET) takes a multiple of 8"), std::string::npos)
      << odd.error().message;
  auto tested = ParseProfile("probe dispatch.begin uprobe exe f if arg1:at(8) == 1\n", "t.profile");
  ASSERT_FALSE(tested);
  EXPECT_NE(tested.error().message.find("not the memory they point to"), std::string::npos);
  auto beat = ParseProfile("probe method.enter uprobe exe f name=\"f\"\n", "b.profile");
  ASSERT_FALSE(beat);
  EXPECT_NE(beat.error().message.find("not given a fixed text"), std::string::npos) << beat.error().message;
}

TEST(Profile, RuntimeDirectiveErrorsNameTheLine) {
  const BadCase cases[] = {
      {"optional dispatch.begin\n", "p.profile:1: 'optional' goes before 'probe'"},
      {"messages sometimes\n", "p.profile:1: 'messages' takes dispatch, poll-bounded or wait-bounded FRAME PARK..."},
      {"requires libx.so\n", "p.profile:1: requires needs: requires BINARY SYMBOL"},
      {"messages dispatch\nmessages poll-bounded\n",
       "p.profile:2: messages poll-bounded conflicts with messages "
       "dispatch at p.profile:1"},
      {"messages poll-bounded\nprobe dispatch.begin uprobe exe f\nprobe dispatch.end uprobe exe g\n",
       "p.profile:1: messages poll-bounded needs poll.begin"},
      {"probe dispatch.begin uprobe exe f if func == 1\nprobe dispatch.end uprobe exe g\n",
       "'func' is known in user space only"},
      {"probe dispatch.begin uprobe exe f if arg1:sym == 1\nprobe dispatch.end uprobe exe g\n",
       "cannot be compared in BPF"},
      {"probe dispatch.begin usdt exe p:f name=func\nprobe dispatch.end uprobe exe g\n",
       "'func' names a uprobe's function"},
      {"probe dispatch.begin uprobe exe f name=func:str\nprobe dispatch.end uprobe exe g\n",
       "'func' is a name (sym), not str"},
      {"probe method.enter uprobe exe f addr=arg1:sym\nprobe method.exit uprobe exe g\n", "binds addr="},
      {"requires-call\n", "p.profile:1: requires-call needs: requires-call SYMBOL[|SYMBOL...]"},
      {"requires-call |\n", "p.profile:1: requires-call names no function"},
  };
  for (const auto& c : cases) {
    auto profile = ParseProfile(c.text, "p.profile");
    ASSERT_FALSE(profile) << c.text;
    EXPECT_NE(profile.error().message.find(c.expected), std::string::npos)
        << "got: " << profile.error().message << "\nwant: " << c.expected;
  }
  // Composed profiles that define messages differently: an error naming both lines.
  auto a = ParseProfile(
      "messages dispatch\nprobe dispatch.begin uprobe exe f\nprobe dispatch.end uprobe exe g\n"
      "probe poll.begin uprobe exe p\nprobe poll.end uprobe exe q\n",
      "a.profile");
  auto b =
      ParseProfile("messages poll-bounded\nprobe poll.begin uprobe exe p\nprobe poll.end uprobe exe q\n", "b.profile");
  ASSERT_TRUE(a && b);
  auto conflict = ComposeProfiles({*a, *b});
  ASSERT_FALSE(conflict);
  EXPECT_NE(conflict.error().message.find("b.profile:1: messages poll-bounded conflicts with messages dispatch at "
                                          "a.profile:1"),
            std::string::npos)
      << conflict.error().message;
}

TEST(Profile, SampleProfilesShareTheirLinesThroughAnIncludedFile) {
  auto sample = LoadProfile(SampleProfile("sample"));
  auto cyg = LoadProfile(SampleProfile("sample-cyg"));
  auto common = LoadProfile(SampleProfile("sample-common"));
  ASSERT_TRUE(sample && cyg && common) << (sample ? cyg ? common.error() : cyg.error() : sample.error()).message;
  // The 21 shared lines plus each one's two method lines, as before the fragment existed.
  EXPECT_EQ(common->probes.size(), 21u);
  EXPECT_EQ(sample->probes.size(), 23u);
  EXPECT_EQ(cyg->probes.size(), 23u);
  EXPECT_EQ(sample->name, "sample");
  EXPECT_EQ(cyg->name, "sample-cyg");
  EXPECT_EQ(sample->source, SampleProfile("sample"));
  for (const auto& p : common->probes) {
    auto same = [&](const ProbeSpec& q) { return q.role == p.role && q.point == p.point && q.args == p.args; };
    EXPECT_TRUE(std::any_of(sample->probes.begin(), sample->probes.end(), same)) << p.point;
    EXPECT_TRUE(std::any_of(cyg->probes.begin(), cyg->probes.end(), same)) << p.point;
  }
  // An included line names its own file (next to the including one).
  EXPECT_EQ(sample->probes.front().source, SampleProfile("sample-common"));
}

// `include PATH` reads a file relative to the including file, with the checks every profile
// file gets: a FIFO or a device is refused at once, a file over 1 MiB is refused.
TEST(Profile, IncludedFilesAreReadLikeProfileFiles) {
  char templ[] = "/tmp/looptrace-include-XXXXXX";
  const std::filesystem::path dir = mkdtemp(templ);
  const std::string pair = "probe dispatch.begin uprobe exe f\nprobe dispatch.end uprobe exe g\n";
  std::ofstream(dir / "lines.profile") << pair;
  std::ofstream(dir / "top.profile") << "include lines.profile\n";
  auto relative = LoadProfile((dir / "top.profile").string());
  ASSERT_TRUE(relative) << relative.error().message;
  EXPECT_EQ(relative->probes.size(), 2u);
  EXPECT_EQ(relative->probes[0].source, (dir / "lines.profile").string());

  ASSERT_EQ(mkfifo((dir / "fifo.profile").c_str(), 0600), 0);
  std::ofstream(dir / "fifo-top.profile") << "include fifo.profile\n" << pair;
  auto fifo = LoadProfile((dir / "fifo-top.profile").string());
  ASSERT_FALSE(fifo);
  EXPECT_NE(fifo.error().message.find("include fifo.profile: "), std::string::npos) << fifo.error().message;
  EXPECT_NE(fifo.error().message.find("it is a FIFO"), std::string::npos) << fifo.error().message;

  std::ofstream(dir / "device-top.profile") << "include /dev/zero\n" << pair;
  auto device = LoadProfile((dir / "device-top.profile").string());
  ASSERT_FALSE(device);
  EXPECT_NE(device.error().message.find("it is a character device"), std::string::npos) << device.error().message;

  std::ofstream(dir / "big.profile") << std::string(2 << 20, '#');
  std::ofstream(dir / "big-top.profile") << "include big.profile\n" << pair;
  auto big = LoadProfile((dir / "big-top.profile").string());
  ASSERT_FALSE(big);
  EXPECT_NE(big.error().message.find("big.profile"), std::string::npos) << big.error().message;

  std::ofstream(dir / "self.profile") << "include self.profile\n" << pair;
  auto cycle = LoadProfile((dir / "self.profile").string());
  ASSERT_FALSE(cycle);
  EXPECT_NE(cycle.error().message.find("self.profile is already being included (an include cycle)"), std::string::npos)
      << cycle.error().message;
  std::filesystem::remove_all(dir);
}

// A profile cannot make root print what its writer could not read: kernel files (root's
// environment in /proc/self/environ) are refused for every profile file, an included file
// must be readable by the including file's owner, and a line that is no directive is not
// echoed.
TEST(Profile, IncludesCannotReadKernelFilesOrFilesTheirOwnerCannotRead) {
  char templ[] = "/tmp/looptrace-include-XXXXXX";
  const std::filesystem::path dir = mkdtemp(templ);
  chmod(dir.c_str(), 0755);
  const std::string pair = "probe dispatch.begin uprobe exe f\nprobe dispatch.end uprobe exe g\n";
  setenv("LOOPTRACE_TEST_SECRET", "hunter2-secret", 1);
  auto expect_refused = [&](const std::string& top, const std::string& needle) {
    auto profile = LoadProfile(top);
    ASSERT_FALSE(profile) << top;
    EXPECT_NE(profile.error().message.find(needle), std::string::npos) << profile.error().message;
    EXPECT_EQ(profile.error().message.find("hunter2"), std::string::npos) << profile.error().message;
    EXPECT_EQ(profile.error().message.find("$6$"), std::string::npos) << profile.error().message;
    EXPECT_EQ(profile.error().code, ExitCode::kProfile);
  };
  std::ofstream(dir / "environ.profile") << "include /proc/self/environ\n" << pair;
  expect_refused((dir / "environ.profile").string(), "/proc/self/environ: it is a kernel file (proc)");
  // Through a link too: what counts is where the file is.
  std::filesystem::create_symlink("/proc/self/status", dir / "status.profile");
  std::ofstream(dir / "link.profile") << "include status.profile\n" << pair;
  expect_refused((dir / "link.profile").string(), "it is a kernel file (proc)");
  expect_refused("/proc/self/environ", "it is a kernel file (proc)");
  expect_refused("/sys/kernel/mm/transparent_hugepage/enabled", "it is a kernel file (sysfs)");

  // A file only root reads, included by a profile nobody owns.
  std::ofstream(dir / "shadow") << "root:$6$saltsalt$hash:19000:0:99999:7:::\n";
  chmod((dir / "shadow").c_str(), 0600);
  std::ofstream(dir / "nobody.profile") << "include ./shadow\n" << pair;
  if (geteuid() == 0) {
    ASSERT_EQ(chown((dir / "nobody.profile").c_str(), 65534, 65534), 0);
    expect_refused((dir / "nobody.profile").string(), "the including profile's owner (uid 65534) could not read it");
    // Readable to anyone: nobody could read it, so may include it (and its error may say what it holds).
    chmod((dir / "shadow").c_str(), 0644);
    auto readable = LoadProfile((dir / "nobody.profile").string());
    ASSERT_FALSE(readable);
    EXPECT_NE(
        readable.error().message.find("shadow:1: not a profile line: it starts with 40 bytes that are no directive"),
        std::string::npos)
        << readable.error().message;
  }
  // Root's own profile may include root's file, but a line that is no directive is not echoed.
  chmod((dir / "shadow").c_str(), 0600);
  std::ofstream(dir / "root.profile") << "include ./shadow\n" << pair;
  expect_refused((dir / "root.profile").string(), "not a profile line: it starts with 40 bytes");
  unsetenv("LOOPTRACE_TEST_SECRET");
  std::filesystem::remove_all(dir);
}

// Files including each other many times are read once each (a fan-out of 20 files, each
// including all the others, was 20^8 parses); a profile of more than 100,000 lines with its
// includes is refused.
TEST(Profile, IncludeFanOutIsReadOnceAndLinesAreCapped) {
  char templ[] = "/tmp/looptrace-include-XXXXXX";
  const std::filesystem::path dir = mkdtemp(templ);
  constexpr int kFiles = 20;
  for (int i = 0; i < kFiles; ++i) {
    std::ofstream out(dir / fmt::format("f{}.profile", i));
    for (int j = 0; j < kFiles; ++j)
      if (j != i) out << fmt::format("include f{}.profile\n", j);
    out << fmt::format("probe dispatch.begin uprobe exe f{} id=arg1\nprobe dispatch.end uprobe exe g{}\n", i, i);
  }
  std::ofstream(dir / "top.profile") << "include f0.profile\n";
  const auto start = std::chrono::steady_clock::now();
  auto fan = LoadProfile((dir / "top.profile").string());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  // Each file is also on the include stack of the ones it includes: a cycle, said as such.
  ASSERT_FALSE(fan);
  EXPECT_NE(fan.error().message.find("an include cycle"), std::string::npos) << fan.error().message;

  // A diamond without a cycle: every file includes the ones after it, 20 deep at most is
  // too deep, so 8 layers of 20 files each including all of the next layer.
  for (int layer = 0; layer < 8; ++layer)
    for (int i = 0; i < kFiles; ++i) {
      std::ofstream out(dir / fmt::format("l{}-{}.profile", layer, i));
      if (layer < 7)
        for (int j = 0; j < kFiles; ++j) out << fmt::format("include l{}-{}.profile\n", layer + 1, j);
      out << fmt::format("probe dispatch.begin uprobe exe l{}_{} id=arg1\nprobe dispatch.end uprobe exe m{}_{}\n",
                         layer, i, layer, i);
    }
  const auto diamond_start = std::chrono::steady_clock::now();
  auto diamond = LoadProfile((dir / "l0-0.profile").string());
  EXPECT_LT(std::chrono::steady_clock::now() - diamond_start, std::chrono::seconds(5));
  ASSERT_TRUE(diamond) << diamond.error().message;
  EXPECT_EQ(diamond->probes.size(), 2u * (1 + 7 * kFiles));

  {
    std::ofstream out(dir / "long.profile");
    for (size_t i = 0; i <= 100'000; ++i) out << "#\n";
    out << "probe dispatch.begin uprobe exe f\nprobe dispatch.end uprobe exe g\n";
  }
  auto long_profile = LoadProfile((dir / "long.profile").string());
  ASSERT_FALSE(long_profile);
  EXPECT_NE(long_profile.error().message.find("more than 100000 lines with the files it includes"), std::string::npos)
      << long_profile.error().message;
  std::filesystem::remove_all(dir);
}

TEST(Profile, ThreadChoicesNameTheLoopThreadOnTheKernelsFifteenBytes) {
  auto main = ParseThreadChoice("main");
  ASSERT_TRUE(main);
  EXPECT_EQ(main->mode, ThreadChoice::Mode::kMain);
  EXPECT_EQ(ParseThreadChoice("all")->Describe(), "all");
  EXPECT_EQ(ParseThreadChoice("loop")->Describe(), "loop");
  auto prefix = ParseThreadChoice("loop:AWT-EventQueue-*");
  ASSERT_TRUE(prefix);
  EXPECT_EQ(prefix->mode, ThreadChoice::Mode::kLoop);
  EXPECT_EQ(prefix->name, "AWT-EventQueue-");
  EXPECT_FALSE(prefix->exact);
  auto exact = ParseThreadChoice("loop:asyncio-loop");
  ASSERT_TRUE(exact);
  EXPECT_TRUE(exact->exact);
  // "AWT-EventQueue-0" is 16 bytes: the kernel keeps 15, so it becomes a prefix.
  auto cut = ParseThreadChoice("loop:AWT-EventQueue-0");
  ASSERT_TRUE(cut);
  EXPECT_EQ(cut->name, "AWT-EventQueue-");
  EXPECT_FALSE(cut->exact);
  EXPECT_FALSE(ParseThreadChoice("loop:a*b"));
  EXPECT_FALSE(ParseThreadChoice("loop:*"));
  auto typo = ParseThreadChoice("mian");
  ASSERT_FALSE(typo);
  EXPECT_EQ(typo.error().message, "unknown thread choice 'mian'");
}

TEST(Profile, ThreadAndRuntimeDirectives) {
  auto profile = ParseProfile(R"(runtime python
thread loop "worker-*"
probe dispatch.begin uprobe exe f
probe dispatch.end uprobe exe g
)",
                              "t.profile");
  ASSERT_TRUE(profile) << profile.error().message;
  EXPECT_EQ(profile->runtimes, std::vector<std::string>{"python"});
  EXPECT_EQ(profile->thread.Describe(), "loop:worker-*");
  EXPECT_EQ(profile->thread.where, "t.profile:2");

  const BadCase cases[] = {
      {"thread sometimes\nprobe dispatch.begin uprobe exe f\nprobe dispatch.end uprobe exe g\n",
       "t.profile:1: unknown thread choice 'sometimes'"},
      {"thread loop:x\nprobe dispatch.begin uprobe exe f\nprobe dispatch.end uprobe exe g\n",
       "t.profile:1: 'thread' takes main, all, loop or loop \"NAME\""},
      {"thread loop worker\nprobe dispatch.begin uprobe exe f\nprobe dispatch.end uprobe exe g\n",
       "t.profile:1: 'thread' takes main, all, loop or loop \"NAME\""},
      {"thread main\nthread all\nprobe dispatch.begin uprobe exe f\nprobe dispatch.end uprobe exe g\n",
       "t.profile:2: thread all conflicts with thread main at t.profile:1"},
      {"runtime\nprobe dispatch.begin uprobe exe f\nprobe dispatch.end uprobe exe g\n", "'runtime' takes one name"},
  };
  for (const auto& c : cases) {
    auto bad = ParseProfile(c.text, "t.profile");
    ASSERT_FALSE(bad) << c.text;
    EXPECT_NE(bad.error().message.find(c.expected), std::string::npos) << bad.error().message;
  }
}

// Every pair the role table knows, not a list of its own: input, barriers, app.create and
// launches too.
TEST(Profile, EveryBeginRoleNeedsItsPartnerFromTheRoleTable) {
  for (const RoleInfo& info : AllRoles()) {
    if (info.partner == info.role) continue;
    SCOPED_TRACE(info.name);
    auto alone = ParseProfile(fmt::format("probe {} uprobe exe f\n", info.name), "p.profile");
    ASSERT_FALSE(alone);
    EXPECT_EQ(alone.error().message, fmt::format("p.profile:1: maps {} but no {}", info.name, RoleName(info.partner)));
    EXPECT_EQ(alone.error().code, ExitCode::kProfile);
  }
  for (const char* role : {"input.receive", "barrier.remove", "activity.launch", "app.create.end"})
    EXPECT_FALSE(ParseProfile(fmt::format("probe {} uprobe exe f\n", role), "p.profile")) << role;
  auto paired = ParseProfile("probe input.receive uprobe exe f seq=arg1\nprobe input.finish uprobe exe g seq=arg1\n",
                             "p.profile");
  EXPECT_TRUE(paired) << paired.error().message;
}

TEST(Profile, GcAndLockRolesComeInPairs) {
  auto gc = ParseProfile("probe gc.begin usdt exe p:gc__start generation=arg1\n", "g.profile");
  ASSERT_FALSE(gc);
  EXPECT_NE(gc.error().message.find("maps gc.begin but no gc.end"), std::string::npos) << gc.error().message;
  auto lock = ParseProfile(
      "probe lock.wait.begin usdt exe h:enter monitor=arg2 class=arg3:str(arg4)\n"
      "probe lock.wait.end usdt exe h:entered monitor=arg2\n"
      "probe lock.release usdt exe h:exit monitor=arg2\n",
      "l.profile");
  ASSERT_TRUE(lock) << lock.error().message;
  EXPECT_EQ(lock->probes[0].args[1].length_source, 3);
}

}  // namespace
}  // namespace looptrace::loader
