// What looptrace needs, per process, to show a runtime's own frames (Python functions, Java
// methods, JavaScript functions) in its stacks and to name the callables its event loop runs.
// A Runtime returns one for a target (Runtime::Interpreter); the session hands its layout to
// BPF, which walks the interpreter's frame chain at each stack sample (the walk must happen
// while the thread is stopped) and records (code object, instruction offset, fingerprint)
// triples; user space names them here, later, guarded against a code object freed and its
// address reused.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "looptrace/events.h"
#include "looptrace/report/stats.h"
#include "looptrace/util/result.h"

namespace looptrace::loader {

// What BPF is told about the target's interpreters: one member per runtime whose frames BPF
// walks (the layout before load, rodata; the addresses once located, .bss).
struct InterpreterBpfConfig {
  lt_py_layout python_layout{};  // frame_model 0: no CPython frames
  lt_py_addresses python_addresses{};
  bool hotspot_enabled = false;  // a HotSpot target: BPF keeps its walker
  lt_hotspot_config hotspot{};   // ready 0: not read from the JVM (yet)
  lt_v8_layout v8_layout{};      // enabled 0: no V8 frames
};

// One interpreted frame, named: "handle_client", "server.py", 40.
struct InterpreterFrame {
  std::string function;
  std::string file;  // as the runtime names it (a path), "" when unknown
  int line = 0;      // 0 when unknown
  // A frame of the program's own code, not the runtime's library or builtins: the outermost
  // one in a message's stacks names the message (StackSample::callable).
  bool user_code = false;
  // What a message it names is called, when not Name(): a Java method without the line the
  // sample was at ("EdtApp.lambda$main$2"), so one event's messages count under one name.
  std::string callable;
  // py-spy's form: "handle_client (server.py:40)".
  std::string Name() const;
  // Stands for a frame that could not be named (Marker): a later walk may name it, so the
  // session never keeps it in place of a name.
  bool marker = false;
  // A frame shown as `marker` ("[unknown Java frame]"): one that could not be named.
  static InterpreterFrame Marker(std::string_view marker);
};

// A text the BPF side sent (LT_RECORD_STRING) by its address in the target, or null.
using TargetTextLookup = std::function<const std::string*(uint64_t address)>;

// A callable's name, and the name its messages are counted under when it holds a per-instance
// part ("Task-294 handle() at srv.py:3" counts under "Task-* handle() at srv.py:3": one
// connection's task each, one coroutine step for "messages by name"). `group` empty: `name`.
struct CallableName {
  std::string name;
  std::string group;
};

class InterpreterSupport {
 public:
  virtual ~InterpreterSupport() = default;

  // For messages: "CPython 3.11 (/usr/bin/python3.11)".
  virtual const std::string& what() const = 0;

  // The layout, known from the interpreter's files before the process runs it.
  virtual void DescribeLayout(InterpreterBpfConfig* config) const = 0;

  // Where the interpreter is in the running process, checked by reading its memory against
  // the layout: true once `config` holds its addresses; false while it is not there yet (a
  // program `run` starts maps and initializes it after exec: ask again later); an error when
  // the layout does not match what runs (BPF is then never told; messages still work).
  virtual Result<bool> Locate(InterpreterBpfConfig* config) = 0;

  // Names one frame BPF walked; nothing when it cannot (the code object is gone or reused:
  // counted in `stats`).
  virtual std::optional<InterpreterFrame> NameFrame(const lt_interp_frame& frame, Stats* stats) = 0;

  // The frames one walked frame stands for, innermost first, appended to `out`: the one
  // NameFrame gives, or several where a runtime's compiled code holds inlined methods (a
  // JIT-compiled Java frame). False, with nothing appended, where NameFrame gives nothing.
  virtual bool ExpandFrame(const lt_interp_frame& frame, Stats* stats, std::vector<InterpreterFrame>* out) {
    auto named = NameFrame(frame, stats);
    if (!named) return false;
    out->push_back(std::move(*named));
    return true;
  }

  // The name of a callable BPF described in `slots` (a probe argument of the runtime's
  // callable type, e.g. LT_ARG_PY_CALLABLE: LT_PY_CALLABLE_SLOTS values), as the runtime's
  // own tools name it ("render_report() at app.py:22"); empty when none.
  virtual CallableName NameCallable(std::span<const uint64_t> slots, const TargetTextLookup& texts, Stats* stats) = 0;

  // Every interpreter thread's frames now, innermost first, by thread id, read from the
  // process (a stall snapshot's py-spy-style dump: the threads it shows are stopped or stuck,
  // so reading them later than BPF would is good enough); empty before Locate succeeded.
  virtual std::map<uint32_t, std::vector<InterpreterFrame>> ThreadStacks(Stats* stats) = 0;

  // Whether ThreadStacks reads the frames from the process as they are now (not from BPF's
  // latest walk): a waiting thread's stack read later is the one it waits with.
  virtual bool ReadsThreadStacks() const { return false; }

  // The frames BPF walked of thread `tid` at its latest sample or switch-out, innermost
  // first (empty: that stack had none), for a runtime whose ThreadStacks cannot read them
  // from the process itself.
  virtual void NoteThreadStack(uint32_t tid, std::span<const lt_interp_frame> frames) {
    (void)tid;
    (void)frames;
  }

  // The runtime's own name for a thread ("main", "AWT-EventQueue-0": the kernel's keeps 15
  // bytes, and a JVM's main thread there is "java"), or nothing: the kernel's is used.
  virtual std::optional<std::string> ThreadName(uint32_t tid) {
    (void)tid;
    return std::nullopt;
  }

  // The runtime's own word for a thread's state at the last ThreadStacks (a Java thread's
  // as jstack prints it: "TIMED_WAITING (sleeping)"), or nothing.
  virtual std::optional<std::string> ThreadState(uint32_t tid) const {
    (void)tid;
    return std::nullopt;
  }

  // Threads whose on-CPU stacks the session samples beside the ones it watches (a JVM's
  // Java threads: its work is not on the process's first thread); asked again as threads
  // come, empty before Locate succeeded.
  virtual std::vector<uint32_t> ThreadsToSample() { return {}; }

  // Whether native frames of `module` (a basename: "python3.11", "libpython3.13.so.1.0") are
  // the interpreter's own C code, and whether `function` is its interpreter loop (one native
  // frame per run of interpreted frames; a merged stack replaces it by them).
  virtual bool IsInterpreterModule(std::string_view module) const = 0;
  virtual bool IsInterpreterLoop(std::string_view function) const = 0;
  // Whether an interpreted frame (its offset word, LT_INTERP_ENTRY) is the outermost of
  // one run of the interpreter loop.
  virtual bool EndsLoopRun(const lt_interp_frame& frame) const = 0;
  // Whether native frames of `module` are code the runtime generated ("[jit]": HotSpot's
  // interpreter and compiled methods, which the walk named): a merged stack puts the
  // interpreted frames at the first of a run of them and drops the rest of the run.
  virtual bool IsGeneratedCode(std::string_view module) const {
    (void)module;
    return false;
  }
  // Whether its walks say they reached the frame native code called it from
  // (LT_INTERP_AT_ENTRY: HotSpot's call stub, below which lies only the VM's thread start):
  // then a stack whose native walk stops at its code is whole when its walk got there.
  virtual bool MarksItsEntry() const { return false; }
  // Whether ExpandFrame names a walked frame by its code, offset and fingerprint alone, the
  // same each time while the fingerprint holds (as its own cache of code objects does): the
  // session may then keep the names it gave by that triple.
  virtual bool NamesFramesByCodeAlone() const { return false; }
};

}  // namespace looptrace::loader
