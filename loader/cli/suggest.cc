#include "loader/cli/suggest.h"

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <limits>

namespace looptrace::cli {
namespace {

// Every spelling of the options of `sub` and of the app above it: "--duration", "-d".
std::vector<std::string> OptionSpellings(const CLI::App& sub) {
  std::vector<std::string> names;
  for (const CLI::App* scope = &sub; scope; scope = scope->get_parent()) {
    for (const CLI::Option* o : scope->get_options()) {
      for (const std::string& l : o->get_lnames()) names.push_back("--" + l);
      for (const std::string& s : o->get_snames()) names.push_back("-" + s);
    }
  }
  return names;
}

bool Known(const CLI::App& sub, const std::string& name) {
  for (const CLI::App* scope = &sub; scope; scope = scope->get_parent())
    for (const CLI::Option* o : scope->get_options())
      if (o->check_name(name)) return true;
  return false;
}

}  // namespace

size_t EditDistance(std::string_view a, std::string_view b) {
  // Optimal string alignment: Levenshtein plus a swap of neighbours as one edit.
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

std::string Nearest(std::string_view word, const std::vector<std::string>& candidates) {
  // Long words are compared without their dashes: "--duraton" is 7 letters, not 9.
  const size_t letters = word.size() - std::min(word.find_first_not_of('-'), word.size());
  size_t best = std::numeric_limits<size_t>::max();
  std::string nearest;
  for (const std::string& c : candidates) {
    const size_t d = EditDistance(word, c);
    if (d < best) {
      best = d;
      nearest = c;
    }
  }
  if (best == 0 || best > 2 || 2 * best >= letters) return "";
  return nearest;
}

std::string DidYouMeanOption(const CLI::App& sub, std::string_view arg) {
  const std::string name(arg.substr(0, arg.find('=')));
  const std::string nearest = Nearest(name, OptionSpellings(sub));
  return nearest.empty() ? "" : fmt::format("did you mean '{}'?", nearest);
}

std::string FirstUnknownOption(const CLI::App& sub, const std::vector<std::string>& args, size_t from) {
  for (size_t i = from; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") return "";
    if (arg.size() < 2 || arg[0] != '-' || (arg[1] >= '0' && arg[1] <= '9')) continue;  // a value, or -1
    const std::string name = arg.substr(0, arg.find('='));
    if (Known(sub, name)) continue;
    // "-d5": a short option with its value attached.
    if (name.size() > 2 && name[1] != '-' && Known(sub, name.substr(0, 2))) continue;
    return arg;
  }
  return "";
}

}  // namespace looptrace::cli
