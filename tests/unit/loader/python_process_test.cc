// CPython code objects and callables named from a process's memory (a fake one here), and
// interpreter frames spliced into native stack samples.
#include "loader/runtimes/python/python_process.h"

#include <gtest/gtest.h>

#include <map>

#include "fake_memory.h"
#include "loader/decode/interp_stacks.h"

namespace looptrace::loader {
namespace {

using python::CodeNamer;
using python::Layout;
using python::LayoutOf;

constexpr uint64_t kCodeType = 0x7000;
constexpr uint64_t kCode = 0x10000;

// A compact ASCII str object at `address` (CPython's PyASCIIObject).
void PutStr(FakeMemory* memory, const Layout& l, uint64_t address, const std::string& text) {
  memory->Map(address, l.str_ascii_data + text.size() + 1);
  memory->Put<uint32_t>(address + l.str_state, 0x40 | 0x20 | (1 << 2));  // ascii, compact, 1 byte
  memory->Put<int64_t>(address + l.str_length, static_cast<int64_t>(text.size()));
  memory->Write(address + l.str_ascii_data, text.data(), text.size());
}

// A code object named `name` in `file`, first line `first_line`, with a line table.
void PutCode(FakeMemory* memory, const Layout& l, uint64_t code, const std::string& name, const std::string& file,
             int first_line, const std::vector<uint8_t>& table) {
  memory->Map(code, 512);
  memory->Put<uint64_t>(code + 8, kCodeType);
  memory->Put<int32_t>(code + l.code_firstlineno, first_line);
  PutStr(memory, l, code + 0x1000, name);
  PutStr(memory, l, code + 0x2000, file);
  memory->Put<uint64_t>(code + (l.code_qualname != python::kNone ? l.code_qualname : l.code_name), code + 0x1000);
  memory->Put<uint64_t>(code + l.code_filename, code + 0x2000);
  memory->Map(code + 0x3000, l.bytes_data + table.size());
  memory->Put<int64_t>(code + 0x3000 + l.bytes_size, static_cast<int64_t>(table.size()));
  memory->Write(code + 0x3000 + l.bytes_data, table.data(), table.size());
  memory->Put<uint64_t>(code + l.code_linetable, code + 0x3000);
}

std::array<uint64_t, LT_PY_CALLABLE_SLOTS> Slots(uint64_t code, uint32_t offset, uint64_t kind, uint32_t fingerprint,
                                                 uint64_t text = 0, uint64_t text2 = 0) {
  return {code, offset | kind << 32, fingerprint, text, text2};
}

// 3.11+ location entries without columns (code 13): 4 code units one line down, then 4 more.
const std::vector<uint8_t> kLocations = {0x80 | (13 << 3) | 3, 4, 0x80 | (13 << 3) | 3, 2};

struct Namer {
  explicit Namer(int minor) : layout(*LayoutOf(3, minor)) {
    auto fake = std::make_unique<FakeMemory>();
    memory = fake.get();
    namer = std::make_unique<CodeNamer>(layout, std::move(fake));
    namer->set_code_type(kCodeType);
  }
  Layout layout;
  FakeMemory* memory;
  std::unique_ptr<CodeNamer> namer;
  Stats stats;
};

TEST(CPythonNamer, ACallbackIsNamedAsAsyncioReprNamesItWithItsFirstLine) {
  Namer n(11);
  PutCode(n.memory, n.layout, kCode, "Report.render", "/srv/app/app.py", 22, kLocations);
  auto no_texts = [](uint64_t) -> const std::string* { return nullptr; };
  EXPECT_EQ(n.namer->NameCallable(Slots(kCode, 0xffffffff, LT_PY_CALLABLE_FUNCTION, 22), no_texts, &n.stats).name,
            "Report.render() at app.py:22");
  // A task step: its name and the coroutine's current line.
  EXPECT_EQ(
      n.namer
          ->NameCallable(Slots(kCode, 5, LT_PY_CALLABLE_TASK | LT_PY_CALLABLE_TASK_NUMBER, 22, 3), no_texts, &n.stats)
          .name,
      "Task-3 Report.render() at app.py:25");
  // asyncio's own numbers differ per task: the step counts under its coroutine and line.
  EXPECT_EQ(
      n.namer
          ->NameCallable(Slots(kCode, 5, LT_PY_CALLABLE_TASK | LT_PY_CALLABLE_TASK_NUMBER, 22, 3), no_texts, &n.stats)
          .group,
      "Task-* Report.render() at app.py:25");
  EXPECT_EQ(n.namer->NameCallable(Slots(kCode, 0xffffffff, LT_PY_CALLABLE_FUNCTION, 22), no_texts, &n.stats).group, "");
  EXPECT_EQ(n.stats.Get(StatId::interp_callables_unnamed), 0u);
}

TEST(CPythonNamer, CMethodsAndOtherCallablesAreNamedByTheirTypeAndTaskNamesByTheirText) {
  Namer n(12);
  PutCode(n.memory, n.layout, kCode, "handle_client", "server.py", 40, kLocations);
  const std::string future = "_asyncio.Future", set_result = "set_result", module = "module", print = "print",
                    task = "worker-1", partial = "functools.partial";
  std::map<uint64_t, const std::string*> texts = {{1, &future}, {2, &set_result}, {3, &module},
                                                  {4, &print},  {5, &task},       {6, &partial}};
  auto lookup = [&](uint64_t a) -> const std::string* { return texts.count(a) ? texts[a] : nullptr; };
  EXPECT_EQ(n.namer->NameCallable(Slots(0, 0xffffffff, LT_PY_CALLABLE_CFUNC, 0, 1, 2), lookup, &n.stats).name,
            "Future.set_result()");
  EXPECT_EQ(n.namer->NameCallable(Slots(0, 0xffffffff, LT_PY_CALLABLE_CFUNC, 0, 3, 4), lookup, &n.stats).name,
            "print()");
  EXPECT_EQ(n.namer->NameCallable(Slots(kCode, 0, LT_PY_CALLABLE_TASK, 40, 5), lookup, &n.stats).name,
            "worker-1 handle_client() at server.py:42");
  // A name the program chose is its own group.
  EXPECT_EQ(n.namer->NameCallable(Slots(kCode, 0, LT_PY_CALLABLE_TASK, 40, 5), lookup, &n.stats).group, "");
  EXPECT_EQ(n.namer->NameCallable(Slots(0, 0xffffffff, LT_PY_CALLABLE_OTHER, 0, 6), lookup, &n.stats).name,
            "partial()");
  // BPF had not been told where the interpreter is: nothing, and no failure counted.
  EXPECT_EQ(n.namer->NameCallable(Slots(0, 0, 0, 0), lookup, &n.stats).name, "");
  EXPECT_EQ(n.stats.Get(StatId::interp_callables_unnamed), 0u);
}

TEST(CPythonNamer, BeforeCPython311TheFunctionsQualifiedNameComesFromTheFunction) {
  Namer n(10);
  PutCode(n.memory, n.layout, kCode, "refresh", "app.py", 8, {});
  const std::string qualname = "Report.refresh";
  auto lookup = [&](uint64_t a) -> const std::string* { return a == 9 ? &qualname : nullptr; };
  EXPECT_EQ(n.namer->NameCallable(Slots(kCode, 0xffffffff, LT_PY_CALLABLE_FUNCTION, 8, 9), lookup, &n.stats).name,
            "Report.refresh() at app.py:8");
}

TEST(CPythonNamer, ACodeObjectFreedAndItsAddressReusedIsNeverNamedForTheOldOne) {
  Namer n(13);
  PutCode(n.memory, n.layout, kCode, "old_function", "app.py", 10, kLocations);
  auto frame = n.namer->NameFrame({kCode, 0, 10}, &n.stats);
  ASSERT_TRUE(frame);
  EXPECT_EQ(frame->Name(), "old_function (app.py:12)");
  // The code object is freed; another one takes its address.
  PutCode(n.memory, n.layout, kCode, "new_function", "app.py", 50, kLocations);
  // A frame BPF walked before (fingerprint 10) keeps the name it was given.
  frame = n.namer->NameFrame({kCode, 0, 10}, &n.stats);
  ASSERT_TRUE(frame);
  EXPECT_EQ(frame->Name(), "old_function (app.py:12)");
  // A frame of the new one: named after it, not from the cache of the old one.
  frame = n.namer->NameFrame({kCode, 4, 50}, &n.stats);
  ASSERT_TRUE(frame);
  EXPECT_EQ(frame->Name(), "new_function (app.py:53)");
  // A late frame of the old one, now that its memory holds the new one: never its name.
  EXPECT_FALSE(n.namer->NameFrame({kCode, 0, 10}, &n.stats));
  EXPECT_EQ(n.stats.Get(StatId::interp_code_reused), 1u);
  // Something that is not a code object any more (BPF checked the type as it walked: freed
  // since, the memory reused for another type): counted as reused, not as a failure.
  n.memory->Put<uint64_t>(kCode + 8, 0x1234);
  EXPECT_FALSE(n.namer->NameFrame({kCode + 0, 0, 77}, &n.stats));
  EXPECT_EQ(n.stats.Get(StatId::interp_code_reused), 2u);
  EXPECT_EQ(n.stats.Get(StatId::interp_frames_unnamed), 0u);
  // Unreadable memory (the process is gone).
  EXPECT_FALSE(n.namer->NameFrame({0xdead0000, 0, 1}, &n.stats));
  EXPECT_EQ(n.stats.Get(StatId::interp_frames_unnamed), 1u);
}

TEST(CPythonLayouts, EveryVersionFrom38To313HasOneAndBpfGetsItsFrameModel) {
  for (int minor = 8; minor <= 13; ++minor) {
    SCOPED_TRACE(minor);
    auto layout = LayoutOf(3, minor);
    ASSERT_TRUE(layout);
    lt_py_layout bpf = python::ToBpf(*layout);
    EXPECT_EQ(bpf.frame_model, minor >= 13 ? LT_PY_CURRENT_FRAME : minor >= 11 ? LT_PY_CFRAME : LT_PY_FRAME_OBJECTS);
    EXPECT_LT(bpf.frame_code, LT_PY_FRAME_BYTES);
    EXPECT_LT(bpf.frame_back, LT_PY_FRAME_BYTES);
    EXPECT_LT(bpf.frame_instr, LT_PY_FRAME_BYTES);
  }
  EXPECT_FALSE(LayoutOf(3, 7));
  EXPECT_FALSE(LayoutOf(3, 14));
}

// An interpreter whose frames are named "f<code>" and whose loop is "eval" in "libpy.so".
class FakeInterpreter : public InterpreterSupport {
 public:
  const std::string& what() const override { return what_; }
  void DescribeLayout(InterpreterBpfConfig*) const override {}
  Result<bool> Locate(InterpreterBpfConfig*) override { return true; }
  std::optional<InterpreterFrame> NameFrame(const lt_interp_frame& frame, Stats* stats) override {
    if (frame.code == 0) {
      stats->Add(StatId::interp_frames_unnamed);
      return std::nullopt;
    }
    return InterpreterFrame{"f" + std::to_string(frame.code), "app.py", static_cast<int>(frame.offset & 0xffff), false,
                            ""};
  }
  CallableName NameCallable(std::span<const uint64_t>, const TargetTextLookup&, Stats*) override { return {}; }
  std::map<uint32_t, std::vector<InterpreterFrame>> ThreadStacks(Stats*) override { return {}; }
  bool IsInterpreterModule(std::string_view module) const override { return module == "libpy.so"; }
  bool IsInterpreterLoop(std::string_view function) const override { return function == "eval"; }
  bool EndsLoopRun(const lt_interp_frame& frame) const override { return frame.offset & LT_INTERP_ENTRY; }

 private:
  std::string what_ = "fake";
};

std::vector<uint8_t> InterpRecord(uint32_t tid, uint64_t ts, std::vector<lt_interp_frame> frames, uint16_t flags = 0) {
  lt_interp_stack rec{};
  rec.header.type = LT_RECORD_INTERP_STACK;
  rec.header.size = static_cast<uint32_t>(offsetof(lt_interp_stack, frames) + frames.size() * sizeof(lt_interp_frame));
  rec.ts_ns = ts;
  rec.tid = tid;
  rec.nr_frames = static_cast<uint16_t>(frames.size());
  rec.flags = flags;
  std::copy(frames.begin(), frames.end(), rec.frames);
  const auto* bytes = reinterpret_cast<const uint8_t*>(&rec);
  return std::vector<uint8_t>(bytes, bytes + rec.header.size);
}

ResolvedFrame Native(const std::string& function, const std::string& module) {
  ResolvedFrame f;
  f.function = function;
  f.module = module;
  return f;
}

TEST(InterpreterStacks, PythonFramesReplaceTheInterpreterAndKeepTheNativeLeafTheTimeIsIn) {
  FakeInterpreter interpreter;
  Stats stats;
  InterpreterStacks stacks(&interpreter, &stats, /*merged=*/false);
  // Innermost first: f1 (line 11) called by f2 (line 12), one run of the loop; f3 outermost.
  ASSERT_TRUE(
      stacks.Add(InterpRecord(7, 100, {{1, 11, 0}, {2, 12 | LT_INTERP_ENTRY, 0}, {3, 13 | LT_INTERP_ENTRY, 0}})));
  ResolvedStack native;
  native.frames = {Native("clock_nanosleep", "libc.so.6"), Native("pysleep", "libpy.so"), Native("eval", "libpy.so"),
                   Native("eval", "libpy.so"), Native("main", "libpy.so")};
  StackSample sample;
  sample.tid = 7;
  sample.ts_ns = 100;
  sample.frames = {"clock_nanosleep", "pysleep", "eval", "eval", "main"};
  sample.stop = "frame pointers end";
  stacks.Splice(native, &sample);
  EXPECT_EQ(sample.frames,
            (std::vector<std::string>{"clock_nanosleep", "f1 (app.py:11)", "f2 (app.py:12)", "f3 (app.py:13)"}));
  EXPECT_EQ(sample.stop, "");

  // Merged: each run of the loop in place of its native frame.
  InterpreterStacks merged(&interpreter, &stats, /*merged=*/true);
  ASSERT_TRUE(
      merged.Add(InterpRecord(7, 200, {{1, 11, 0}, {2, 12 | LT_INTERP_ENTRY, 0}, {3, 13 | LT_INTERP_ENTRY, 0}})));
  sample.ts_ns = 200;
  merged.Splice(native, &sample);
  EXPECT_EQ(sample.frames, (std::vector<std::string>{"clock_nanosleep", "pysleep", "f1 (app.py:11)", "f2 (app.py:12)",
                                                     "f3 (app.py:13)", "main"}));
}

TEST(InterpreterStacks, UnnamedFramesAreMarkedCutWalksSaidAndOtherThreadsOrTimesLeftAlone) {
  FakeInterpreter interpreter;
  Stats stats;
  InterpreterStacks stacks(&interpreter, &stats, false);
  ASSERT_TRUE(stacks.Add(InterpRecord(7, 100, {{0, 1, 0}, {5, 2, 0}}, LT_INTERP_TRUNCATED)));
  ResolvedStack native;
  native.frames = {Native("eval", "libpy.so")};
  StackSample other;
  other.tid = 8;
  other.ts_ns = 100;
  other.frames = {"eval"};
  stacks.Splice(native, &other);
  EXPECT_EQ(other.frames, std::vector<std::string>{"eval"});
  StackSample sample;
  sample.tid = 7;
  sample.ts_ns = 100;
  stacks.Splice(native, &sample);
  EXPECT_EQ(sample.frames, (std::vector<std::string>{std::string(InterpreterStacks::kUnknownFrame), "f5 (app.py:2)"}));
  EXPECT_EQ(sample.stop, InterpreterStacks::kCutFrames);
  EXPECT_EQ(stats.Get(StatId::interp_stacks_truncated), 1u);
  EXPECT_EQ(stats.Get(StatId::interp_frames_unnamed), 1u);
  // A record that lies about its size is refused.
  auto bad = InterpRecord(7, 100, {{1, 1, 0}});
  bad.resize(bad.size() - 4);
  EXPECT_FALSE(stacks.Add(bad));
}

}  // namespace
}  // namespace looptrace::loader
