// Profiles: human-editable files that map roles to probe points of one runtime.
// Format (documented in README "Profiles"):
//   # comment
//   profile NAME
//   description free text
//   probe ROLE KIND BINARY POINT [ARG=SOURCE[:TYPE] ...]
// KIND: uprobe | uretprobe | usdt. BINARY: exe, an absolute path, or a library name
// (libglib-2.0.so). POINT: symbol or glob (uprobes), provider:name (usdt).
// SOURCE: arg1..arg6, or ret (uretprobe). TYPE: uint (default), int, ptr, str.
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

struct ArgSpec {
  std::string name;     // role argument name ("id", "name")
  uint8_t source = 0;   // 0..5 = argument 1..6; LT_ARG_SOURCE_RETVAL = return value
  ArgType type = ArgType::kUint;
};

struct ProbeSpec {
  Role role = Role::kDispatchBegin;
  ProbeKind kind = ProbeKind::kUprobe;
  std::string binary;  // "exe", absolute path, or library name
  std::string point;   // symbol / glob, or provider:name
  std::vector<ArgSpec> args;
  int line = 0;        // line in the profile, for error messages
};

struct Profile {
  std::string name;
  std::string description;
  std::string source;  // file path, or "builtin:NAME"
  std::vector<ProbeSpec> probes;

  bool HasRole(Role role) const;
};

// Parses profile text; errors read "SOURCE:LINE: message".
Result<Profile> ParseProfile(std::string_view text, std::string_view source);

struct BuiltinProfile {
  std::string_view name;
  std::string_view text;
};
const std::vector<BuiltinProfile>& BuiltinProfiles();

// A built-in name, or a path to a profile file.
Result<Profile> LoadProfile(std::string_view name_or_path);

}  // namespace looptrace::loader
