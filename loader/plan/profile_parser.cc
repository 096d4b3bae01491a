// A profile's text, line by line: one function per directive (profile.h has the format).
#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "loader/plan/profile_parser.h"
#include "looptrace/util/text_safety.h"

namespace looptrace::loader {
namespace {

// "a|b||c" -> {a, b, c}
std::vector<std::string> SplitBars(std::string_view list) {
  std::vector<std::string> out;
  while (!list.empty()) {
    size_t bar = list.find('|');
    if (bar != 0) out.emplace_back(list.substr(0, bar));
    if (bar == std::string_view::npos) break;
    list.remove_prefix(bar + 1);
  }
  return out;
}

// Words of a line; "quoted strings" (with \" \\ \n \t \xNN escapes) are one word, kept with
// their quotes so the parser knows they were strings.
Result<std::vector<std::string>> Tokenize(std::string_view line) {
  std::vector<std::string> words;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    if (i >= line.size() || line[i] == '#') break;
    std::string word;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r') {
      if (line[i] != '"') {
        word += line[i++];
        continue;
      }
      word += line[i++];  // the opening quote
      bool closed = false;
      while (i < line.size()) {
        char c = line[i++];
        if (c == '"') {
          closed = true;
          break;
        }
        if (c != '\\') {
          word += c;
          continue;
        }
        if (i >= line.size()) break;
        char e = line[i++];
        if (e == 'n')
          word += '\n';
        else if (e == 't')
          word += '\t';
        else if (e == 'x' && i + 2 <= line.size()) {
          unsigned value = 0;
          auto [ptr, ec] = std::from_chars(line.data() + i, line.data() + i + 2, value, 16);
          if (ec != std::errc() || ptr != line.data() + i + 2) return MakeError("bad \\x escape in a string");
          word += static_cast<char>(value);
          i += 2;
        } else {
          word += e;
        }
      }
      if (!closed) return MakeError("unterminated string");
      word += '"';  // the closing quote marks a string word
    }
    words.push_back(std::move(word));
  }
  return words;
}

class Parser {
 public:
  Parser(std::string_view source, ProfileLoad& load) : source_(source), load_(load) {}

  Result<Profile> Parse(std::string_view text) {
    profile_.source = std::string(source_);
    size_t pos = 0;
    while (pos <= text.size()) {
      size_t nl = text.find('\n', pos);
      std::string_view line = text.substr(pos, nl == std::string_view::npos ? text.npos : nl - pos);
      pos = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
      ++line_;
      if (++load_.lines > kMaxProfileLines)
        return Fail(fmt::format("more than {} lines with the files it includes", kMaxProfileLines));
      auto tokens = Tokenize(line);
      if (!tokens) return Fail(tokens.error().message);
      auto words = *tokens;
      if (words.empty()) continue;
      RETURN_IF_ERROR(Directive(words, line));
    }
    // An included file may add nothing new (its lines came through another include first).
    if (profile_.probes.empty() && load_.stack.size() <= 1) return Fail("profile defines no probe");
    if (profile_.name.empty()) profile_.name = std::string(source_);
    return std::move(profile_);
  }

 private:
  using Words = std::vector<std::string>;

  std::unexpected<Error> Fail(const std::string& message, std::string hint = {}) const {
    return MakeError(fmt::format("{}:{}: {}", source_, line_, message), ExitCode::kProfile, std::move(hint));
  }
  std::string Here() const { return fmt::format("{}:{}", source_, line_); }

  Result<void> Directive(Words words, std::string_view line) {
    if (words[0] == "optional") {
      if (words.size() < 2 || words[1] != "probe") return Fail("'optional' goes before 'probe'");
      words.erase(words.begin());
      return Probe(words, /*optional=*/true);
    }
    const std::string& name = words[0];
    if (name == "profile") return Name(words);
    if (name == "description") return Description(line);
    if (name == "thread") return Thread(words);
    if (name == "runtime") return Runtime(words);
    if (name == "include") return Include(words);
    if (name == "messages") return Messages(words);
    if (name == "requires") return Requires(words);
    if (name == "requires-call") return RequiresCall(words);
    if (name == "requires-loaded") return RequiresLoaded(words);
    if (name == "probe") return Probe(words, /*optional=*/false);
    // Quoted only when it looks like a mistyped directive: a line of some other file (an
    // environment, a password entry) is not echoed.
    const bool word_like =
        name.size() <= 32 && std::all_of(name.begin(), name.end(), [](char c) {
          return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
        });
    constexpr std::string_view kKnown =
        "known: profile, description, include, messages, requires, requires-call, requires-loaded, optional probe, "
        "probe, thread, runtime";
    if (!word_like)
      return Fail(
          fmt::format("not a profile line: it starts with {} bytes that are no directive ({})", name.size(), kKnown));
    return Fail(fmt::format("unknown directive {} ({})", Quoted(name), kKnown));
  }

  // profile NAME
  Result<void> Name(const Words& words) {
    if (words.size() != 2) return Fail("'profile' takes one name");
    profile_.name = words[1];
    return {};
  }

  // description free text (the rest of the line, as written)
  Result<void> Description(std::string_view line) {
    std::string_view desc = line.substr(line.find("description") + 11);
    while (!desc.empty() && (desc.front() == ' ' || desc.front() == '\t')) desc.remove_prefix(1);
    while (!desc.empty() && (desc.back() == ' ' || desc.back() == '\t' || desc.back() == '\r')) desc.remove_suffix(1);
    profile_.description = std::string(desc);
    return {};
  }

  // thread main | all | loop ["NAME"]
  Result<void> Thread(const Words& words) {
    if (words.size() < 2 || words.size() > 3 || (words.size() == 3 && (words[1] != "loop" || !IsQuoted(words[2]))) ||
        (words.size() == 2 && words[1].starts_with("loop:")))
      return Fail("'thread' takes main, all, loop or loop \"NAME\"", "example: thread loop \"AWT-EventQueue-*\"");
    auto choice = ParseThreadChoice(words.size() == 3 ? "loop:" + words[2].substr(1, words[2].size() - 2) : words[1]);
    if (!choice) return Fail(choice.error().message);
    choice->where = Here();
    if (profile_.thread.mode != ThreadChoice::Mode::kUnset && !(profile_.thread == *choice))
      return Fail(fmt::format("thread {} conflicts with thread {} at {}", choice->Describe(),
                              profile_.thread.Describe(), profile_.thread.where));
    profile_.thread = *choice;
    return {};
  }

  // runtime NAME
  Result<void> Runtime(const Words& words) {
    if (words.size() != 2) return Fail("'runtime' takes one name (python, jvm)");
    AddRuntime(words[1]);
    return {};
  }

  void AddRuntime(const std::string& name) {
    if (std::find(profile_.runtimes.begin(), profile_.runtimes.end(), name) == profile_.runtimes.end())
      profile_.runtimes.push_back(name);
  }

  // include NAME_OR_PATH: the other profile's lines join this one's.
  Result<void> Include(const Words& words) {
    if (words.size() != 2) return Fail("'include' takes one profile name or path");
    if (load_.stack.size() > kMaxIncludeDepth)
      return Fail(fmt::format("includes nest more than {} deep", kMaxIncludeDepth));
    auto included = LoadNamedProfile(words[1], source_, load_);
    if (!included)
      return Fail(fmt::format("include {}: {}", EscapeForTerminal(words[1], kMaxQuotedBytes), included.error().message),
                  included.error().hint);
    for (auto& p : included->probes) profile_.probes.push_back(std::move(p));
    for (auto& r : included->requirements) profile_.requirements.push_back(std::move(r));
    for (auto& r : included->call_requirements) profile_.call_requirements.push_back(std::move(r));
    for (auto& r : included->loaded_requirements) profile_.loaded_requirements.push_back(std::move(r));
    if (!included->message_definition.empty()) {
      if (!profile_.message_definition.empty() && profile_.message_definition != included->message_definition)
        return Fail(fmt::format("include {}: messages {} (at {}) conflicts with messages {} at {}", words[1],
                                included->message_definition, included->message_definition_where,
                                profile_.message_definition, profile_.message_definition_where));
      profile_.message_definition = included->message_definition;
      profile_.message_definition_where = included->message_definition_where;
    }
    RETURN_IF_ERROR(MergeThread(included->thread));
    for (const auto& r : included->runtimes) AddRuntime(r);
    return {};
  }

  // An included profile's thread choice joins this one's; two different ones conflict.
  Result<void> MergeThread(const ThreadChoice& other) {
    if (other.mode == ThreadChoice::Mode::kUnset) return {};
    if (profile_.thread.mode == ThreadChoice::Mode::kUnset) {
      profile_.thread = other;
      return {};
    }
    if (profile_.thread == other) return {};
    return Fail(fmt::format("thread {} at {} conflicts with thread {} at {}", other.Describe(), other.where,
                            profile_.thread.Describe(), profile_.thread.where));
  }

  // messages dispatch | poll-bounded | wait-bounded FRAME PARK...
  Result<void> Messages(const Words& words) {
    const bool wait_bounded = words.size() >= 4 && words[1] == "wait-bounded";
    if (!wait_bounded && (words.size() != 2 || (words[1] != "dispatch" && words[1] != "poll-bounded")))
      return Fail("'messages' takes dispatch, poll-bounded or wait-bounded FRAME PARK...",
                  "poll-bounded: a message is the busy time between a poll's return and the next poll call; "
                  "wait-bounded: from a thread's wake-up in FRAME (parked in a PARK frame) to its next wait there");
    std::string definition(words[1]);
    for (size_t i = 2; i < words.size(); ++i) definition += fmt::format(" {}", words[i]);
    if (!profile_.message_definition.empty() && profile_.message_definition != definition)
      return Fail(fmt::format("messages {} conflicts with messages {} at {}", definition, profile_.message_definition,
                              profile_.message_definition_where));
    profile_.message_definition = definition;
    profile_.message_definition_where = Here();
    return {};
  }

  // requires BINARY SYMBOL
  Result<void> Requires(const Words& words) {
    if (words.size() != 3)
      return Fail("requires needs: requires BINARY SYMBOL",
                  "example: requires libglib-2.0.so g_main_context_iteration");
    profile_.requirements.push_back({words[1], words[2], std::string(source_), line_});
    return {};
  }

  // requires-call SYMBOL[|SYMBOL...]
  Result<void> RequiresCall(const Words& words) {
    if (words.size() != 2)
      return Fail("requires-call needs: requires-call SYMBOL[|SYMBOL...]", "example: requires-call epoll_wait|poll");
    CallRequirement r{SplitBars(words[1]), std::string(source_), line_};
    if (r.symbols.empty()) return Fail("requires-call names no function");
    profile_.call_requirements.push_back(std::move(r));
    return {};
  }

  // requires-loaded GLOB[|GLOB...]
  Result<void> RequiresLoaded(const Words& words) {
    if (words.size() != 2)
      return Fail("requires-loaded needs: requires-loaded GLOB[|GLOB...]", "example: requires-loaded _asyncio.*");
    LoadedRequirement r{SplitBars(words[1]), std::string(source_), line_};
    if (r.globs.empty()) return Fail("requires-loaded names no file");
    profile_.loaded_requirements.push_back(std::move(r));
    return {};
  }

  // [optional] probe ROLE KIND BINARY POINT [ARGS...] [if CONDITIONS] (probe_line.cc)
  Result<void> Probe(const Words& words, bool optional) {
    ASSIGN_OR_RETURN(ProbeSpec probe, ParseProbeLine(source_, line_, words));
    probe.optional = optional;
    profile_.probes.push_back(std::move(probe));
    return {};
  }

  std::string_view source_;
  ProfileLoad& load_;
  int line_ = 0;
  Profile profile_;
};

}  // namespace

std::string Quoted(std::string_view word) { return "'" + EscapeForTerminal(word, kMaxQuotedBytes) + "'"; }

Result<Profile> ParseProfileText(std::string_view text, std::string_view source, ProfileLoad& load) {
  return Parser(source, load).Parse(text);
}

}  // namespace looptrace::loader
