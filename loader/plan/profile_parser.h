// Inside plan/ only: the pieces of the profile parser (profile.h has the format). A profile's
// text is parsed line by line, one function per directive (profile_parser.cc); `probe` lines
// have their own parser (probe_line.cc); `include` and composition resolve other profiles and
// check the result (profile_compose.cc).
#pragma once

#include <sys/types.h>

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "loader/plan/profile.h"
#include "looptrace/util/result.h"

namespace looptrace::loader {

// Includes nest at most this deep.
inline constexpr int kMaxIncludeDepth = 8;
// Lines one --profile name may have with every file it includes.
inline constexpr size_t kMaxProfileLines = 100'000;

// One profile's loading across its includes: who may read what, what was read already.
struct ProfileLoad {
  // The owner of the file whose lines are parsed: a file it includes must be readable by it
  // (a profile cannot make root read what its writer could not).
  uid_t owner = 0;
  // The files being parsed, outermost first ("DEV:INODE", or "builtin:NAME"): including one
  // of them again is a cycle.
  std::vector<std::string> stack;
  // Files included once already: included again (a diamond, or a fan-out of files that
  // include each other) they add nothing, so they are not read again.
  std::set<std::string> loaded;
  size_t lines = 0;  // lines parsed so far, every file's
};

// A word of a profile in an error message: 'word', escaped, and cut at kMaxQuotedBytes.
std::string Quoted(std::string_view word);

// A word the tokenizer kept with its quotes: a "string".
inline bool IsQuoted(std::string_view word) { return word.size() >= 2 && word.front() == '"' && word.back() == '"'; }

// One profile's text (`source` names it in errors: "SOURCE:LINE: message"), its includes
// loaded through `load`. No composition checks yet.
Result<Profile> ParseProfileText(std::string_view text, std::string_view source, ProfileLoad& load);

// The words of a `probe` line ([optional] removed), as a ProbeSpec.
Result<ProbeSpec> ParseProbeLine(std::string_view source, int line, const std::vector<std::string>& words);

// A profile named by `include` or --profile: a built-in name, or a file path (relative to the
// directory of `including`, the including file, unless absolute or `including` is a built-in
// or ""). A file is a regular one outside the kernel's file systems and, when included,
// readable by `load.owner`. One already loaded through `load` comes back empty.
Result<Profile> LoadNamedProfile(std::string_view name_or_path, std::string_view including, ProfileLoad& load);

// Begin/end roles come in pairs (from the role table), and `messages` has the roles it needs.
Result<void> CheckPairs(const Profile& profile);

}  // namespace looptrace::loader
