// Profiles: human-editable files that map roles to probe points of one runtime.
// Format (documented in README "Profiles"):
//   # comment
//   profile NAME
//   description free text
//   include NAME_OR_PATH          lines of another profile (built-in, or a file)
//   probe ROLE KIND BINARY POINT [NAME=SOURCE[:TYPE] ...] [if CONDITION [&& CONDITION ...]]
//   thread main | all | loop ["NAME"]   which threads to watch (default main); loop: the
//                                 thread that hits dispatch.begin first (named NAME, a
//                                 trailing * for a prefix)
//   runtime NAME                  the runtime the probes belong to (python, jvm): checked
//                                 against the target, with its own diagnostics
// KIND: uprobe | uretprobe | usdt. BINARY: exe, an absolute path, or a library name
// (libglib-2.0.so). POINT: symbol or glob (uprobes), provider:name (usdt).
// SOURCE: arg1..arg12, or ret (uretprobe). TYPE: uint (default), int, ptr, str, or
// str(argN) for a string whose length is argument N (not NUL-terminated).
// CONDITION: SOURCE[:TYPE] OP VALUE, with OP == != < <= > >= for numbers and
// == != ~ (glob: * and ?) for "quoted strings".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "looptrace/tracers/event.h"
#include "looptrace/util/result.h"

namespace looptrace::loader {

enum class ProbeKind { kUprobe, kUretprobe, kUsdt };
enum class ArgType { kUint, kInt, kPtr, kStr };

std::string_view ProbeKindName(ProbeKind kind);
std::string_view ArgTypeName(ArgType type);

// Where an argument comes from and how it is read.
struct ArgSource {
  uint8_t source = 0;  // 0..11 = argument 1..12; LT_SOURCE_RETVAL = return value
  ArgType type = ArgType::kUint;
  uint8_t length_source = LT_SOURCE_NONE;  // str(argN): the length's source

  bool operator==(const ArgSource&) const = default;
};

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
  std::string source;  // file (or builtin:NAME) the line is in, for messages
  int line = 0;        // line in that file

  std::string Where() const { return source + ":" + std::to_string(line); }
};

// Which threads a session watches: the profile's `thread` directive or --threads.
struct ThreadChoice {
  enum class Mode { kUnset, kMain, kAll, kLoop };
  Mode mode = Mode::kUnset;
  std::string name;   // kLoop: prefix of the loop thread's name (comm), "" = any thread
  bool exact = false; // kLoop: the name is the whole comm (no trailing *)
  std::string where;  // source:line of the directive, for conflicts

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
  ThreadChoice thread;               // kUnset: the main thread unless --threads says otherwise
  std::vector<std::string> runtimes;  // `runtime` directives (python, jvm), in order

  bool HasRole(Role role) const;
};

// Parses profile text; errors read "SOURCE:LINE: message". `include` directives load other
// profiles (built-in names, or paths relative to the including file).
Result<Profile> ParseProfile(std::string_view text, std::string_view source);

struct BuiltinProfile {
  std::string_view name;
  std::string_view text;
};
const std::vector<BuiltinProfile>& BuiltinProfiles();

// A built-in name, a path to a profile file, or several of either joined by commas
// ("glib,python"): their probes together, a conflict (the same role at the same point bound
// differently) being an error naming both lines.
Result<Profile> LoadProfile(std::string_view names_or_paths);

// Profiles' probes together (see LoadProfile).
Result<Profile> ComposeProfiles(std::vector<Profile> profiles);

}  // namespace looptrace::loader
