// Profiles: human-editable files that map roles to probe points of one runtime.
// Format (documented in docs/profiles-and-runtimes.md):
//   # comment
//   profile NAME
//   description free text
//   include NAME_OR_PATH          lines of another profile (built-in, or a file)
//   messages dispatch|poll-bounded   how messages are defined (default: from the roles)
//   requires BINARY SYMBOL        the runtime's mark: the profile fits a target only if
//                                 BINARY (as in probe) has SYMBOL (checked, never probed)
//   requires-call SYMBOL|SYMBOL   ... only if its executable or a library imports one of them
//   [optional] probe ROLE KIND BINARY POINT [NAME=SOURCE[:TYPE] ...] [if CONDITION [&& ...]]
//   thread main | all | loop ["NAME"]   which threads to watch (default main); loop: the
//                                 thread that hits dispatch.begin first (named NAME, a
//                                 trailing * for a prefix)
//   runtime NAME                  the runtime the probes belong to (python, jvm): checked
//                                 against the target, with its own diagnostics
// KIND: uprobe | uretprobe | usdt. BINARY: exe, interpreter (the runtime's interpreter: a
// shared CPython's libpython3.X.so, else the executable), an absolute path, or a library name
// (libglib-2.0.so). POINT: symbol or glob (uprobes), provider:name (usdt), or
// *(SYMBOL+OFFSET): the function whose address is stored at SYMBOL+OFFSET (a function
// pointer in a data table, e.g. a GSourceFuncs' dispatch). An optional probe that resolves
// to nothing is left out instead of failing the profile.
// SOURCE: arg1..arg12, ret (uretprobe), or func (the probed function's name). TYPE: uint (default), int, ptr, str,
// str(argN) for a string whose length is argument N (not NUL-terminated), sym (a code
// address, named by the target's symbols in user space), or pycallable (a CPython vector of
// callables whose first is named as asyncio names callbacks; the probe's last argument;
// pycallable(OFFSET): the callable stored OFFSET bytes into what the argument points to).
// CONDITION: SOURCE[:TYPE] OP VALUE, with OP == != < <= > >= for numbers and
// == != ~ (glob: * and ?) for "quoted strings".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "looptrace/tracers/event.h"
#include "looptrace/util/result.h"

namespace looptrace::loader {

enum class ProbeKind { kUprobe, kUretprobe, kUsdt };
// kAt: the 8 bytes at an argument plus an offset (`arg1:at(128)`), read by BPF at the hit.
enum class ArgType { kUint, kInt, kPtr, kStr, kSym, kPyCallable, kAt };

std::string_view ProbeKindName(ProbeKind kind);
std::string_view ArgTypeName(ArgType type);

// `NAME=func`: the name of the function the probe resolved to (a glob's match), given by the
// loader; never read by BPF.
inline constexpr uint8_t kSourceFunction = 0xF0;
// `NAME="text"`: a fixed text the line gives its events (a message named by the loop phase
// the probed function runs: `name="timers"`), given by the loader; never read by BPF.
inline constexpr uint8_t kSourceText = 0xF1;

// Where an argument comes from and how it is read.
struct ArgSource {
  uint8_t source = 0;  // 0..11 = argument 1..12; LT_SOURCE_RETVAL = return value; kSourceFunction
  ArgType type = ArgType::kUint;
  uint8_t length_source = LT_SOURCE_NONE;  // str(argN): the length's source
  std::string text;                        // kSourceText: the text
  uint16_t offset = 0;                     // kAt, kPyCallable: bytes past the argument (a multiple of 8)

  bool operator==(const ArgSource&) const = default;
};

// Arguments the loader fills (func, "text") come last in a probe and are not read by BPF.
inline bool FilledByLoader(const ArgSource& arg) { return arg.source == kSourceFunction || arg.source == kSourceText; }

// A bound argument: the name a tracer reads ("id", "name", ...) and its source.
struct ArgSpec : ArgSource {
  std::string name;
  bool operator==(const ArgSpec&) const = default;
};

enum class CompareOp { kEq, kNe, kLt, kLe, kGt, kGe, kStrEq, kStrNe, kStrPrefix, kStrSuffix, kStrGlob };
std::string_view CompareOpName(CompareOp op);
bool IsStringOp(CompareOp op);

// One condition on a probe's arguments, checked in BPF before anything is recorded.
struct Condition {
  ArgSource arg;
  CompareOp op = CompareOp::kEq;
  int64_t value = 0;    // numbers
  std::string pattern;  // strings (prefix/suffix tests: the fixed part only)
  std::string text;     // as written, for messages

  bool operator==(const Condition& other) const {
    return arg == other.arg && op == other.op && value == other.value && pattern == other.pattern;
  }
};

struct ProbeSpec {
  Role role = Role::kDispatchBegin;
  ProbeKind kind = ProbeKind::kUprobe;
  std::string binary;  // "exe", absolute path, or library name
  std::string point;   // symbol / glob, or provider:name
  std::vector<ArgSpec> args;
  std::vector<Condition> conditions;
  bool optional = false;  // `optional probe`: left out when it resolves to nothing
  std::string source;     // file (or builtin:NAME) the line is in, for messages
  int line = 0;           // line in that file

  std::string Where() const { return source + ":" + std::to_string(line); }
};

// `requires BINARY SYMBOL`: what marks the runtime in a target (auto-detection, and the
// error when an explicit profile does not fit).
struct Requirement {
  std::string binary;
  std::string symbol;
  std::string source;
  int line = 0;

  std::string Where() const { return source + ":" + std::to_string(line); }
  bool operator==(const Requirement& o) const { return binary == o.binary && symbol == o.symbol; }
};

// `requires-call SYMBOL|SYMBOL...`: the target's executable or one of its libraries imports
// one of these functions (calls it through the dynamic linker), e.g. a poll function.
struct CallRequirement {
  std::vector<std::string> symbols;
  std::string source;
  int line = 0;

  bool operator==(const CallRequirement& o) const { return symbols == o.symbols; }
};

// `requires-loaded GLOB|GLOB...`: a running target has a file whose name matches one of the
// globs mapped (a module a program loads only when it uses a feature, e.g. CPython's
// `_asyncio.*` once `import asyncio` ran). Auto-detection skips the profile when a running
// target lacks it; a program not started yet cannot be checked (the plan says so), and an
// explicit --profile only warns.
struct LoadedRequirement {
  std::vector<std::string> globs;
  std::string source;
  int line = 0;

  bool operator==(const LoadedRequirement& o) const { return globs == o.globs; }
};

// `*(SYMBOL+OFFSET)` points: the data symbol and the offset of the stored function pointer.
struct PointerPoint {
  std::string symbol;
  uint64_t offset = 0;
};
// The pointer form of a POINT, or nullopt for a symbol / glob.
std::optional<PointerPoint> ParsePointerPoint(std::string_view point);
// Whether a POINT is an fnmatch glob (it names every function it matches).
bool IsGlobPoint(std::string_view point);

// Which threads a session watches: the profile's `thread` directive or --threads.
struct ThreadChoice {
  enum class Mode { kUnset, kMain, kAll, kLoop };
  Mode mode = Mode::kUnset;
  std::string name;    // kLoop: prefix of the loop thread's name (comm), "" = any thread
  bool exact = false;  // kLoop: the name is the whole comm (no trailing *)
  std::string where;   // source:line of the directive, for conflicts

  bool operator==(const ThreadChoice& o) const { return mode == o.mode && name == o.name && exact == o.exact; }
  // "main", "all", "loop", "loop:AWT-EventQueue-*"
  std::string Describe() const;
};

// main | all | loop | loop:NAME (the loop thread by name; a trailing * matches a prefix; names
// are compared on the kernel's 15-byte thread name).
Result<ThreadChoice> ParseThreadChoice(std::string_view text);

struct Profile {
  std::string name;
  std::string description;
  std::string source;  // file path, or "builtin:NAME"
  std::vector<ProbeSpec> probes;
  std::vector<Requirement> requirements;               // `requires` lines
  std::vector<CallRequirement> call_requirements;      // `requires-call` lines
  std::vector<LoadedRequirement> loaded_requirements;  // `requires-loaded` lines
  // `messages ...`: "dispatch", "poll-bounded", or "" (derived from the roles).
  std::string message_definition;
  std::string message_definition_where;  // the line that set it
  ThreadChoice thread;                   // kUnset: the main thread unless --threads says otherwise
  std::vector<std::string> runtimes;     // `runtime` directives (python, jvm), in order

  bool HasRole(Role role) const;
};

// Parses profile text; errors read "SOURCE:LINE: message". `include` directives load other
// profiles (built-in names, or paths relative to the including file).
Result<Profile> ParseProfile(std::string_view text, std::string_view source);

struct BuiltinProfile {
  std::string_view name;
  std::string_view text;
  // Shared lines for `include` only: listed apart, never auto-detected.
  bool fragment = false;
};
const std::vector<BuiltinProfile>& BuiltinProfiles();

// A built-in name, a path to a profile file, or several of either joined by commas
// ("glib,python"): their probes together, a conflict (the same role at the same point bound
// differently) being an error naming both lines.
Result<Profile> LoadProfile(std::string_view names_or_paths);

// Profiles' probes together (see LoadProfile).
Result<Profile> ComposeProfiles(std::vector<Profile> profiles);

}  // namespace looptrace::loader
