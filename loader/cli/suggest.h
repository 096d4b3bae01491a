// "Did you mean": the known word nearest to a mistyped command or option, as git and cargo
// suggest one.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace CLI {  // NOLINT(readability-identifier-naming): CLI11's namespace
class App;
}

namespace looptrace::cli {

// Edits (insert, delete, replace, swap two neighbours) from `a` to `b`.
size_t EditDistance(std::string_view a, std::string_view b);

// The candidate nearest to `word` if it is close enough to be a typo (at most 2 edits, and
// fewer than half of the word), else "". Ties go to the first candidate.
std::string Nearest(std::string_view word, const std::vector<std::string>& candidates);

// For an option `arg` ("--duraton", "--duraton=5") that neither `sub` nor its parent knows:
// "did you mean '--duration'?", or "" when no option is close.
std::string DidYouMeanOption(const CLI::App& sub, std::string_view arg);

// The first word of `args` from `from` on that looks like an option ("-x", "--xyz") and that
// neither `sub` nor its parent knows, or "". Values of options are skipped as CLI11 does not
// know them; this is for hints only.
std::string FirstUnknownOption(const CLI::App& sub, const std::vector<std::string>& args, size_t from);

}  // namespace looptrace::cli
