// Inside plan/ only: the pieces of the profile parser (profile.h has the format). A profile's
// text is parsed line by line, one function per directive (profile_parser.cc); `probe` lines
// have their own parser (probe_line.cc); `include` and composition resolve other profiles and
// check the result (profile_compose.cc).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "loader/plan/profile.h"
#include "looptrace/util/result.h"

namespace looptrace::loader {

// Includes nest at most this deep (a cycle fails here).
inline constexpr int kMaxIncludeDepth = 8;

// A word the tokenizer kept with its quotes: a "string".
inline bool IsQuoted(std::string_view word) { return word.size() >= 2 && word.front() == '"' && word.back() == '"'; }

// One profile's text (`source` names it in errors: "SOURCE:LINE: message"), its includes
// loaded; `depth` is how deep in includes it is. No composition checks yet.
Result<Profile> ParseProfileText(std::string_view text, std::string_view source, int depth);

// The words of a `probe` line ([optional] removed), as a ProbeSpec.
Result<ProbeSpec> ParseProbeLine(std::string_view source, int line, const std::vector<std::string>& words);

// A profile named by `include` or --profile: a built-in name, or a file path (relative to the
// directory of `including`, the including file, unless absolute or `including` is a built-in
// or "").
Result<Profile> LoadNamedProfile(std::string_view name_or_path, std::string_view including, int depth);

// Begin/end roles come in pairs (from the role table), and `messages` has the roles it needs.
Result<void> CheckPairs(const Profile& profile);

}  // namespace looptrace::loader
