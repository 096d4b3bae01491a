// Decoded events: what every tracer consumes, live or replayed.
// Produced from raw BPF records in exactly one place (loader/event_decoder.cc).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "looptrace/events.h"
#include "looptrace/report/call_tree.h"
#include "looptrace/report/process.h"
#include "looptrace/report/stats.h"
#include "looptrace/tracers/roles.h"

namespace looptrace {

struct EventArg {
  std::string_view name;              // as bound by the profile ("id", "name", ...); interned
  uint64_t value = 0;                 // raw value (a pointer for string arguments)
  const std::string* text = nullptr;  // string arguments, read from the target (interned); null if unreadable
  bool is_string = false;             // bound as :str (text may still be missing)
};

// The arguments of one event, stored inline (no allocation per event). Events are copied
// into spans and reports at millions per second: only the arguments in use are initialized
// and copied, not the whole capacity.
class ArgList {
 public:
  static constexpr size_t kCapacity = LT_MAX_SOURCES;
  static_assert(std::is_trivially_copyable_v<EventArg> && std::is_trivially_destructible_v<EventArg>);

  ArgList() {}
  ArgList(const ArgList& other) : size_(other.size_) { CopyFrom(other); }
  ArgList& operator=(const ArgList& other) {
    size_ = other.size_;
    CopyFrom(other);
    return *this;
  }

  const EventArg* begin() const { return storage_.args; }
  const EventArg* end() const { return storage_.args + size_; }
  EventArg* begin() { return storage_.args; }
  EventArg* end() { return storage_.args + size_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const EventArg& operator[](size_t i) const { return storage_.args[i]; }
  // False (and nothing stored) when full.
  bool push_back(const EventArg& arg) {
    if (size_ == kCapacity) return false;
    storage_.args[size_++] = arg;
    return true;
  }
  void clear() { size_ = 0; }
  // `n` more arguments, left for the caller to set; n must fit (size() + n <= kCapacity).
  EventArg* Grow(size_t n) {
    EventArg* added = storage_.args + size_;
    size_ = static_cast<uint8_t>(size_ + n);
    return added;
  }

 private:
  // Element by element: events carry a few arguments, where the memcpy call std::copy_n
  // becomes costs more than the copy.
  void CopyFrom(const ArgList& other) {
    static_assert(kCapacity == 12, "the unroll count below");
#pragma GCC unroll 12
    for (size_t i = 0; i < kCapacity; ++i) {
      if (i == size_) break;
      storage_.args[i] = other.storage_.args[i];
    }
  }
  union Storage {
    Storage() {}  // left uninitialized: args [0, size_) are the ones written
    EventArg args[kCapacity];
  } storage_;
  uint8_t size_ = 0;
};

// One hit of a profile probe point.
struct ProbeEvent {
  // User-provided so that value-initialization (std::variant, emplace) does not zero the
  // whole argument capacity first; every member has its initializer.
  ProbeEvent() {}
  ProbeEvent(uint64_t ts_ns, uint32_t pid, uint32_t tid, Role role, uint16_t probe_id, uint64_t thread_cpu_ns,
             uint64_t beat_index, uint32_t sp)
      : ts_ns(ts_ns),
        pid(pid),
        tid(tid),
        role(role),
        probe_id(probe_id),
        thread_cpu_ns(thread_cpu_ns),
        beat_index(beat_index),
        sp(sp) {}

  uint64_t ts_ns = 0;  // CLOCK_MONOTONIC
  uint32_t pid = 0;
  uint32_t tid = 0;
  Role role = Role::kDispatchBegin;
  uint16_t probe_id = 0;
  uint64_t thread_cpu_ns = 0;  // the thread's CPU time so far (0 = unknown)
  uint64_t beat_index = 0;     // method-beat ring head at the hit (live only; slices of spans)
  uint32_t sp = 0;             // the stack pointer's low 32 bits at the hit (0 = unknown)
  ArgList args;

  // A name known when compiling (Arg("id")): its length is a constant, so the compare is a
  // load or two. Consteval, so a char array variable, whose string may be shorter than the
  // array, does not compile here (pass it as a std::string_view).
  struct LiteralName {
    template <size_t N>
    consteval LiteralName(const char (&name)[N]) : data(name), size(N - 1) {
      for (size_t i = 0; i + 1 < N; ++i)
        if (name[i] == '\0') throw "an argument name literal holds a NUL";
    }
    const char* data;
    size_t size;
  };
  // Always inline: only there does the name's length fold into a constant (GCC 12 left it
  // out of line in the span tracker, 3 instructions more per message).
  [[gnu::always_inline]] const EventArg* Arg(LiteralName name) const {
    for (const auto& arg : args)
      if (arg.name.size() == name.size && std::memcmp(arg.name.data(), name.data, name.size) == 0) return &arg;
    return nullptr;
  }
  // A name known when running. Inline, with its own compare: called several times per event
  // by the span tracker and the tracers, with names of a few bytes where a memcmp call costs
  // more than the compare. Not for arrays (they are literals, above).
  template <class Name>
  requires(!std::is_array_v<Name> &&
           std::is_convertible_v<const Name&, std::string_view>) const EventArg* Arg(const Name& name) const {
    const std::string_view wanted = name;
    for (const auto& arg : args)
      if (SameName(arg.name, wanted)) return &arg;
    return nullptr;
  }

 private:
  static bool SameName(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (a[i] != b[i]) return false;
    return true;
  }
};

struct MethodBeat {
  uint64_t ts_ns = 0;
  uint64_t id = 0;
  bool enter = false;
};

// The method beats of one slice of a thread's time (a message, an idle handler, a startup),
// copied from the BPF beat ring when a tracer asked for them (tracer.h: WantSlice) or by the
// watchdog for a message still running ("open"). Recorded before the end of their span.
struct MethodBeats {
  std::string span = "message";  // message | idle | input | startup | warm_startup | open
  uint32_t tid = 0;
  uint64_t begin_ns = 0;  // the message's dispatch.begin
  uint64_t end_ns = 0;    // its dispatch.end (or the snapshot time)
  MethodIdKind kind = MethodIdKind::kId;
  std::vector<MethodBeat> beats;  // in order
  uint64_t overwritten = 0;       // beats of the message lost to buffer wrap-around
  // Names the loader resolved (addresses, strings, probe points): id -> name.
  std::map<uint64_t, std::string> names;
};

// Describes one resolved probe point of the session (kept in recordings).
struct ProbeDescription {
  uint16_t probe_id = 0;
  Role role = Role::kDispatchBegin;
  std::string kind;    // uprobe | uretprobe | usdt
  std::string binary;  // path
  std::string point;   // symbol or provider:name
  uint64_t file_offset = 0;
};

struct SessionStart {
  uint64_t ts_ns = 0;         // CLOCK_MONOTONIC when probes were live
  uint64_t wall_time_ns = 0;  // CLOCK_REALTIME at the same moment (for "time" fields)
  uint32_t pid = 0;
  std::string command;       // target's comm / argv[0]
  std::string command_line;  // its whole command line, shell-quoted and capped; "" if unknown
  std::string profile;
  std::string thread_filter;  // main | all
  std::vector<ProbeDescription> probes;
  DeviceInfo device;
  // The profile's `messages` line: dispatch | poll-bounded, or "" (derived from the roles).
  std::string message_definition;
  uint32_t sample_hz = 0;     // cpu-clock stack samples per second of CPU (0 = no stack samples)
  bool dwarf_unwind = false;  // stacks unwound with DWARF CFI from stack copies
};

// Totals of losses counted outside the tracers (BPF side, decoder), sent once before
// SessionEnd so a replayed recording shows the same data-quality footer.
struct LossCounters {
  Stats stats;
};

struct SessionEnd {
  uint64_t ts_ns = 0;
  std::string reason;              // duration | interrupted | target-exited | end-of-recording
  std::optional<int> exit_status;  // run: the command's exit status (128+N if killed by N)
};

// Why BPF took no stack at a switch-out (ThreadSwitch::unstacked).
inline constexpr std::string_view kUnstackedLoopIdle = "loop idle";
// dispatch.begin's argument naming what "messages by name" counts a message under, when not
// its name (a runtime's namer sets it for names with a per-instance part: asyncio's task numbers).
inline constexpr std::string_view kMessageGroupArg = "group";
// A dispatch.begin argument (a pycallable) that names the message when its `name` is a code
// address no symbol covers: a libffi closure's, such as pygobject's callbacks.
inline constexpr std::string_view kClosureArg = "closure";
// The name of a message no probe names (a wait-bounded one: span_tracker.h), until the code
// its samples find names it.
inline constexpr std::string_view kEventMessageName = "event";
inline constexpr std::string_view kUnstackedEarlyPreemption = "early preemption";
// A wait early in a message whose user stack BPF left for later (LT_STACK_DEFERRED): the
// loader's read of it, if the wait outlived the early age, comes as a sample of the same time.
inline constexpr std::string_view kUnstackedEarlyWait = "early wait";
// The constant `text` names, or "" (text read from a recording, or a sample's stop reason).
constexpr std::string_view UnstackedReason(std::string_view text) {
  if (text == kUnstackedLoopIdle) return kUnstackedLoopIdle;
  if (text == kUnstackedEarlyPreemption) return kUnstackedEarlyPreemption;
  if (text == kUnstackedEarlyWait) return kUnstackedEarlyWait;
  return {};
}

// The main thread left the CPU (with why: its state and kernel stack) or got it back.
struct ThreadSwitch {
  uint64_t ts_ns = 0;
  uint32_t tid = 0;
  bool off_cpu = false;                   // true: switch-out; false: switch-in
  uint32_t state = 0;                     // task __state at switch-out (0 = preempted while runnable)
  std::vector<std::string> kernel_stack;  // innermost first, resolved by the loader
  // Why BPF took no stack (issue 32), or "": "loop idle" (no message open: no report shows
  // that wait, LT_STACK_IDLE), "early preemption" (preempted early in a message,
  // LT_STACK_YOUNG), "early wait" (its user stack deferred, LT_STACK_DEFERRED). --idle-stacks
  // takes them all.
  std::string_view unstacked;
  // A wait early in a message took no kernel stack (LT_STACK_IN_SYSCALL): the system call it
  // waits in, which tells its reason (thread_state.h: kNoWaitSyscall, kWaitOutsideSyscall).
  int32_t wait_syscall = -1;
};

// Someone woke the main thread (sched_wakeup): who ended its wait.
struct Wakeup {
  uint64_t ts_ns = 0;
  uint32_t tid = 0;  // the woken thread
  uint32_t waker_tid = 0;
  uint32_t waker_pid = 0;
  std::string waker_comm;
};

// The target exec()ed its program (seen when looptrace started it: `run`).
struct ProcessExec {
  uint64_t ts_ns = 0;
  uint32_t pid = 0;
  std::string comm;  // after the exec
};

// A stack sample of a watched thread, for sampled call trees: taken while it ran (cpu-clock,
// at the session's sample rate) or as it left the CPU (then weighted by the time until it
// ran again; the ThreadSwitch with the same ts_ns follows it and says why). Produced by the
// loader's stack resolver (loader/stack_resolver.h) before the records written after it.
struct StackSample {
  uint64_t ts_ns = 0;
  uint32_t tid = 0;
  bool on_cpu = true;               // false: taken at a switch-out
  std::vector<std::string> frames;  // innermost first, named (function, or module+0xOFFSET)
  std::string stop;                 // why the walk ended early ("" = at the outermost frame)
  // The outermost frame of the program's own code that a runtime's walk found in it (a
  // JavaScript function of the app, not the runtime's library: "renderReport app.js:9");
  // "" when none. Names the message the sample falls in (SampleStore::TakeCallable).
  std::string callable;
  // On CPU: the sampling period it was taken at, where --cpu-budget changed the rate (0: the
  // session's, SessionStart::sample_hz).
  uint64_t period_ns = 0;
};

// A thread's name (/proc/PID/task/TID/comm), read by the loader when the thread first shows
// up in the stream, while it lives: reports name threads by it ("gmain", "AWT-EventQueue-0").
struct ThreadName {
  uint64_t ts_ns = 0;
  uint32_t tid = 0;
  std::string name;
};

using Event = std::variant<SessionStart, ProbeEvent, LossCounters, SessionEnd, MethodBeats, ThreadSwitch, Wakeup,
                           SignalSent, StallSnapshot, ProcessExec, StackSample, ThreadName>;

// The index of T among the alternatives of a variant (for subscription masks).
template <typename T, typename V>
struct VariantIndex;
template <typename T, typename... Ts>
struct VariantIndex<T, std::variant<Ts...>> {
  static constexpr size_t value = [] {
    size_t i = 0;
    ((std::is_same_v<T, Ts> ? false : (++i, true)) && ...);
    return i;
  }();
};

// Anything that consumes an event stream: tracers, the recording writer.
class EventSink {
 public:
  virtual ~EventSink() = default;
  virtual void OnEvent(const Event& event) = 0;
};

}  // namespace looptrace
