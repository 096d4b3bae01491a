// ElfFile::ClosestNames: the "did you mean" of a probe point whose function does not exist.
#include <algorithm>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "looptrace/symbols/demangle.h"
#include "looptrace/symbols/elf_file.h"

namespace looptrace::symbols {
namespace {

// Levenshtein distance with adjacent transpositions (optimal string alignment).
size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev2(b.size() + 1), prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        cur[j] = std::min(cur[j], prev2[j - 2] + 1);
      }
    }
    std::swap(prev2, prev);
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string ToLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

}  // namespace

std::vector<std::string> ElfFile::ClosestNames(std::string_view name, size_t max_count) const {
  std::vector<std::string> result;
  if (max_count == 0 || name.empty()) return result;
  std::vector<std::string_view> candidates;
  candidates.reserve(functions_.size());
  for (const Symbol& symbol : functions_) {
    candidates.push_back(symbol.demangled != symbol.name ? StripParameters(symbol.demangled)
                                                         : std::string_view(symbol.name));
  }
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());

  const std::string query = ToLower(name);
  const size_t max_distance = std::max<size_t>(2, query.size() / 3);
  struct Scored {
    size_t score;
    std::string_view name;
  };
  std::vector<Scored> scored;
  for (std::string_view candidate : candidates) {
    const std::string lower = ToLower(candidate);
    size_t score;
    if (lower == query) {
      score = 0;
    } else if (lower.find(query) != std::string::npos) {
      score = 1;  // substring bonus: "compute" suggests "ns::compute_frame"
    } else {
      const size_t length_gap = lower.size() > query.size() ? lower.size() - query.size() : query.size() - lower.size();
      if (length_gap > max_distance) continue;
      score = EditDistance(query, lower);
      if (score > max_distance) continue;
    }
    scored.push_back({score, candidate});
  }
  std::sort(scored.begin(), scored.end(), [](const Scored& a, const Scored& b) {
    return std::make_tuple(a.score, a.name.size(), a.name) < std::make_tuple(b.score, b.name.size(), b.name);
  });
  for (size_t i = 0; i < scored.size() && result.size() < max_count; ++i) {
    result.emplace_back(scored[i].name);
  }
  return result;
}

}  // namespace looptrace::symbols
