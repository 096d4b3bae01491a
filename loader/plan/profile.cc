#include "loader/plan/profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <set>

#include "looptrace/util/safe_file.h"

namespace looptrace::loader {

std::string_view ProbeKindName(ProbeKind kind) {
  switch (kind) {
    case ProbeKind::kUprobe:
      return "uprobe";
    case ProbeKind::kUretprobe:
      return "uretprobe";
    case ProbeKind::kUsdt:
      return "usdt";
  }
  return "?";
}

std::string_view ArgTypeName(ArgType type) {
  switch (type) {
    case ArgType::kUint:
      return "uint";
    case ArgType::kInt:
      return "int";
    case ArgType::kPtr:
      return "ptr";
    case ArgType::kStr:
      return "str";
    case ArgType::kSym:
      return "sym";
  }
  return "?";
}

std::string_view CompareOpName(CompareOp op) {
  switch (op) {
    case CompareOp::kEq:
      return "==";
    case CompareOp::kNe:
      return "!=";
    case CompareOp::kLt:
      return "<";
    case CompareOp::kLe:
      return "<=";
    case CompareOp::kGt:
      return ">";
    case CompareOp::kGe:
      return ">=";
    case CompareOp::kStrEq:
      return "==";
    case CompareOp::kStrNe:
      return "!=";
    case CompareOp::kStrPrefix:
      return "prefix";
    case CompareOp::kStrSuffix:
      return "suffix";
    case CompareOp::kStrGlob:
      return "~";
  }
  return "?";
}

bool IsStringOp(CompareOp op) {
  return op == CompareOp::kStrEq || op == CompareOp::kStrNe || op == CompareOp::kStrPrefix ||
         op == CompareOp::kStrSuffix || op == CompareOp::kStrGlob;
}

std::optional<PointerPoint> ParsePointerPoint(std::string_view point) {
  if (!point.starts_with("*(") || !point.ends_with(")")) return std::nullopt;
  std::string_view inner = point.substr(2, point.size() - 3);
  PointerPoint out;
  std::string_view symbol = inner, offset;
  if (size_t plus = inner.find('+'); plus != std::string_view::npos) {
    symbol = inner.substr(0, plus);
    offset = inner.substr(plus + 1);
  }
  auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '$'; };
  if (symbol.empty() || std::isdigit(static_cast<unsigned char>(symbol.front())) ||
      !std::all_of(symbol.begin(), symbol.end(), ident))
    return std::nullopt;
  out.symbol = std::string(symbol);
  if (!offset.empty()) {
    int base = 10;
    if (offset.starts_with("0x") || offset.starts_with("0X")) {
      base = 16;
      offset.remove_prefix(2);
    }
    auto [ptr, ec] = std::from_chars(offset.data(), offset.data() + offset.size(), out.offset, base);
    if (offset.empty() || ec != std::errc() || ptr != offset.data() + offset.size()) return std::nullopt;
  }
  return out;
}

bool IsGlobPoint(std::string_view point) {
  return !ParsePointerPoint(point) && point.find_first_of("*?[") != std::string_view::npos;
}

std::string ThreadChoice::Describe() const {
  switch (mode) {
    case Mode::kUnset:
    case Mode::kMain:
      return "main";
    case Mode::kAll:
      return "all";
    case Mode::kLoop:
      return name.empty() ? "loop" : "loop:" + name + (exact ? "" : "*");
  }
  return "main";
}

Result<ThreadChoice> ParseThreadChoice(std::string_view text) {
  ThreadChoice c;
  if (text == "main")
    c.mode = ThreadChoice::Mode::kMain;
  else if (text == "all")
    c.mode = ThreadChoice::Mode::kAll;
  else if (text == "loop")
    c.mode = ThreadChoice::Mode::kLoop;
  else if (text.starts_with("loop:")) {
    c.mode = ThreadChoice::Mode::kLoop;
    std::string_view name = text.substr(5);
    c.exact = !name.ends_with("*");
    if (!c.exact) name.remove_suffix(1);
    if (name.empty() || name.find_first_of("*?[") != std::string_view::npos)
      return MakeError(fmt::format("thread name '{}' is not a name or a prefix ending with *", text.substr(5)),
                       ExitCode::kUsage, "examples: loop:AWT-EventQueue-0, 'loop:worker-*'");
    // The kernel keeps 15 bytes of a thread's name: a longer name is compared on those.
    if (name.size() >= LT_TASK_COMM_LEN) {
      name = name.substr(0, LT_TASK_COMM_LEN - 1);
      c.exact = false;
    }
    c.name = std::string(name);
  } else {
    return MakeError(fmt::format("unknown thread choice '{}'", text), ExitCode::kUsage,
                     "main, all, loop (the thread that runs the loop) or loop:NAME (that thread by name; "
                     "a trailing * matches a prefix)");
  }
  return c;
}

bool Profile::HasRole(Role role) const {
  return std::any_of(probes.begin(), probes.end(), [&](const ProbeSpec& p) { return p.role == role; });
}

namespace {

constexpr int kMaxIncludeDepth = 8;

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

std::string Join(const std::vector<std::string_view>& items) {
  std::string out;
  for (auto item : items) {
    if (!out.empty()) out += ", ";
    out += item;
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

bool IsQuoted(std::string_view word) { return word.size() >= 2 && word.front() == '"' && word.back() == '"'; }

class Parser {
 public:
  Parser(std::string_view source, int depth) : source_(source), depth_(depth) {}

  std::unexpected<Error> Fail(int line, const std::string& message, std::string hint = {}) {
    return MakeError(fmt::format("{}:{}: {}", source_, line, message), ExitCode::kProfile, std::move(hint));
  }

  // argN (1..12) or ret.
  Result<uint8_t> ParseSourceName(int line, std::string_view word, const ProbeSpec& probe, std::string_view what) {
    if (word == "func") {
      if (probe.kind == ProbeKind::kUsdt) return Fail(line, fmt::format("{}: 'func' names a uprobe's function", what));
      return kSourceFunction;
    }
    if (word == "ret") {
      if (probe.kind != ProbeKind::kUretprobe) return Fail(line, fmt::format("{}: 'ret' needs a uretprobe", what));
      return LT_SOURCE_RETVAL;
    }
    int n = 0;
    auto [ptr, ec] = std::from_chars(word.data() + std::min<size_t>(3, word.size()), word.data() + word.size(), n);
    if (!word.starts_with("arg") || ec != std::errc() || ptr != word.data() + word.size() || n < 1 ||
        n > LT_MAX_SOURCES)
      return Fail(line, fmt::format("{}: source '{}' must be arg1..arg{} or ret", what, word, LT_MAX_SOURCES));
    if (probe.kind == ProbeKind::kUretprobe)
      return Fail(line, fmt::format("{}: a uretprobe can only read 'ret'", what),
                  "read arguments with a uprobe on the same symbol");
    return static_cast<uint8_t>(n - 1);
  }

  // SOURCE[:TYPE], TYPE = uint | int | ptr | str | str(argN).
  Result<ArgSource> ParseSource(int line, std::string_view text, const ProbeSpec& probe, std::string_view what,
                                ArgType default_type) {
    ArgSource arg;
    std::string_view source = text, type;
    if (size_t colon = text.find(':'); colon != std::string_view::npos) {
      source = text.substr(0, colon);
      type = text.substr(colon + 1);
    }
    ASSIGN_OR_RETURN(arg.source, ParseSourceName(line, source, probe, what));
    arg.type = default_type;
    if (arg.source == kSourceFunction) {
      if (!type.empty() && type != "sym")
        return Fail(line, fmt::format("{}: 'func' is a name (sym), not {}", what, type));
      arg.type = ArgType::kSym;
      return arg;
    }
    if (type.empty()) return arg;
    if (type == "uint")
      arg.type = ArgType::kUint;
    else if (type == "int")
      arg.type = ArgType::kInt;
    else if (type == "ptr")
      arg.type = ArgType::kPtr;
    else if (type == "str")
      arg.type = ArgType::kStr;
    else if (type == "sym")
      arg.type = ArgType::kSym;
    else if (type.starts_with("str(") && type.ends_with(")")) {
      arg.type = ArgType::kStr;
      ASSIGN_OR_RETURN(arg.length_source,
                       ParseSourceName(line, type.substr(4, type.size() - 5), probe, fmt::format("{} length", what)));
    } else {
      return Fail(line, fmt::format("{}: unknown type '{}' (known: uint, int, ptr, str, str(argN), sym)", what, type));
    }
    return arg;
  }

  Result<ArgSpec> ParseArg(int line, std::string_view word, const ProbeSpec& probe) {
    size_t eq = word.find('=');
    if (eq == std::string_view::npos || eq == 0)
      return Fail(line, fmt::format("argument '{}' is not NAME=SOURCE[:TYPE]", word), "example: id=arg1 name=arg2:str");
    ArgSpec arg;
    arg.name = std::string(word.substr(0, eq));
    auto known = KnownArgNames(probe.role);
    if (std::find(known.begin(), known.end(), arg.name) == known.end())
      return Fail(line, fmt::format("role {} has no argument '{}' (known: {})", RoleName(probe.role), arg.name,
                                    known.empty() ? "none" : Join(known)));
    ASSIGN_OR_RETURN(ArgSource source, ParseSource(line, word.substr(eq + 1), probe,
                                                   fmt::format("argument '{}'", arg.name), ArgType::kUint));
    static_cast<ArgSource&>(arg) = source;
    return arg;
  }

  // SOURCE[:TYPE] OP VALUE
  Result<Condition> ParseCondition(int line, const std::vector<std::string>& words, size_t at, const ProbeSpec& probe) {
    const std::string text = fmt::format("{} {} {}", words[at], words[at + 1], words[at + 2]);
    const std::string what = fmt::format("condition '{}'", text);
    Condition c;
    c.text = text;
    const std::string& op = words[at + 1];
    const std::string& value = words[at + 2];
    const bool is_string = IsQuoted(value);
    ASSIGN_OR_RETURN(c.arg, ParseSource(line, words[at], probe, what, is_string ? ArgType::kStr : ArgType::kInt));
    if (c.arg.source == kSourceFunction)
      return Fail(line, fmt::format("{}: 'func' is known in user space only; conditions are checked in BPF", what));
    if (c.arg.type == ArgType::kSym)
      return Fail(line, fmt::format("{}: a sym argument is named in user space and cannot be compared in BPF", what),
                  "compare the address as a number (ptr) instead");
    if (is_string != (c.arg.type == ArgType::kStr))
      return Fail(line,
                  fmt::format("{}: {} compared with {}", what,
                              c.arg.type == ArgType::kStr ? "a string argument" : "a number argument",
                              is_string ? "a string" : "a number"),
                  is_string ? "quote numbers only for strings; read the argument as :str" : "quote the text: \"...\"");
    if (is_string) {
      std::string pattern = value.substr(1, value.size() - 2);
      if (pattern.size() > LT_MAX_PATTERN)
        return Fail(line, fmt::format("{}: the text is longer than {} bytes", what, LT_MAX_PATTERN));
      if (op == "==" || op == "!=") {
        c.op = op == "==" ? CompareOp::kStrEq : CompareOp::kStrNe;
        c.pattern = pattern;
      } else if (op == "~") {
        // "abc*" and "*abc" are plain prefix / suffix tests, cheaper in BPF than a glob.
        const bool simple_prefix =
            pattern.size() > 1 && pattern.back() == '*' && pattern.find_first_of("*?") == pattern.size() - 1;
        const bool simple_suffix =
            pattern.size() > 1 && pattern.front() == '*' && pattern.find_first_of("*?", 1) == std::string::npos;
        if (simple_prefix) {
          c.op = CompareOp::kStrPrefix;
          c.pattern = pattern.substr(0, pattern.size() - 1);
        } else if (simple_suffix) {
          c.op = CompareOp::kStrSuffix;
          c.pattern = pattern.substr(1);
        } else if (pattern.find_first_of("*?") == std::string::npos) {
          c.op = CompareOp::kStrEq;
          c.pattern = pattern;
        } else {
          c.op = CompareOp::kStrGlob;
          c.pattern = pattern;
        }
      } else {
        return Fail(line, fmt::format("{}: strings compare with ==, != or ~ (glob), not '{}'", what, op));
      }
      return c;
    }
    static const std::pair<const char*, CompareOp> kOps[] = {{"==", CompareOp::kEq}, {"!=", CompareOp::kNe},
                                                             {"<", CompareOp::kLt},  {"<=", CompareOp::kLe},
                                                             {">", CompareOp::kGt},  {">=", CompareOp::kGe}};
    auto it = std::find_if(std::begin(kOps), std::end(kOps), [&](const auto& o) { return op == o.first; });
    if (it == std::end(kOps))
      return Fail(line, fmt::format("{}: numbers compare with == != < <= > >=, not '{}'", what, op));
    c.op = it->second;
    std::string_view digits = value;
    bool negative = digits.starts_with("-");
    if (negative) digits.remove_prefix(1);
    int base = 10;
    if (digits.starts_with("0x") || digits.starts_with("0X")) {
      base = 16;
      digits.remove_prefix(2);
    }
    uint64_t magnitude = 0;
    auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), magnitude, base);
    if (ec != std::errc() || ptr != digits.data() + digits.size() || digits.empty() ||
        magnitude > (negative ? uint64_t{1} << 63 : UINT64_MAX))
      return Fail(line, fmt::format("{}: '{}' is not a number", what, value));
    c.value = negative ? static_cast<int64_t>(0 - magnitude) : static_cast<int64_t>(magnitude);
    return c;
  }

  // A method beat names its method by one integer (id=, addr=) or by strings and numbers
  // (name=, class=, sig=, file=, line=); other layouts cannot be stored.
  Result<void> CheckMethodArgs(int line, ProbeSpec* probe) {
    bool has_id = false, has_name = false, has_other = false;
    for (const auto& a : probe->args) {
      has_id |= a.name == "id" || a.name == "addr";
      has_name |= a.name == "name";
      has_other |= a.name == "class" || a.name == "sig" || a.name == "file" || a.name == "line";
    }
    if ((has_id && (has_name || has_other)) || (has_id && probe->args.size() > 1) || (has_other && !has_name))
      return Fail(line, "a method probe binds one of: id=, addr=, or name= (with class=, sig=, file=, line=)",
                  "examples: id=arg1 | addr=arg1 | name=arg2:str class=arg1:str");
    for (const auto& a : probe->args) {
      if ((a.name == "name" || a.name == "class" || a.name == "sig" || a.name == "file") && a.type != ArgType::kStr)
        return Fail(line, fmt::format("method argument '{}' must be a string (:str or :str(argN))", a.name));
      if (a.type == ArgType::kSym)
        return Fail(line, fmt::format("method argument '{}': a method named by its address binds addr=", a.name),
                    "example: addr=arg1");
    }
    // The identity of an id/addr beat is its first argument.
    std::stable_sort(probe->args.begin(), probe->args.end(), [](const ArgSpec& a, const ArgSpec& b) {
      auto rank = [](const std::string& n) { return n == "id" || n == "addr" ? 0 : n == "name" ? 1 : 2; };
      return rank(a.name) < rank(b.name);
    });
    return {};
  }

  Result<ProbeSpec> ParseProbe(int line, const std::vector<std::string>& words) {
    if (words.size() < 5)
      return Fail(line, "probe needs: probe ROLE KIND BINARY POINT [ARGS...] [if CONDITIONS]",
                  "example: probe dispatch.begin uprobe exe my_dispatch id=arg1");
    ProbeSpec probe;
    probe.source = std::string(source_);
    probe.line = line;
    auto role = RoleFromName(words[1]);
    if (!role) return Fail(line, fmt::format("unknown role '{}'", words[1]), "known roles: " + Join(AllRoleNames()));
    probe.role = *role;
    if (words[2] == "uprobe")
      probe.kind = ProbeKind::kUprobe;
    else if (words[2] == "uretprobe")
      probe.kind = ProbeKind::kUretprobe;
    else if (words[2] == "usdt")
      probe.kind = ProbeKind::kUsdt;
    else
      return Fail(line, fmt::format("unknown probe kind '{}' (known: uprobe, uretprobe, usdt)", words[2]));
    // "quoted" when the name has spaces (C++ parameter lists).
    auto unquote = [](const std::string& w) { return IsQuoted(w) ? w.substr(1, w.size() - 2) : w; };
    probe.binary = unquote(words[3]);
    probe.point = unquote(words[4]);
    if (probe.kind == ProbeKind::kUsdt) {
      size_t colon = probe.point.find(':');
      if (colon == std::string::npos || colon == 0 || colon + 1 == probe.point.size())
        return Fail(line, fmt::format("usdt point '{}' must be provider:name", probe.point));
    }
    size_t i = 5;
    for (; i < words.size() && words[i] != "if"; ++i) {
      ASSIGN_OR_RETURN(ArgSpec arg, ParseArg(line, words[i], probe));
      for (const auto& other : probe.args)
        if (other.name == arg.name) return Fail(line, fmt::format("argument '{}' is bound twice", arg.name));
      probe.args.push_back(std::move(arg));
    }
    if (i < words.size()) {
      ++i;  // "if"
      while (true) {
        if (i + 3 > words.size())
          return Fail(line, "a condition is SOURCE OP VALUE", "example: if arg2:str == \"_run\" && arg3 > 0");
        ASSIGN_OR_RETURN(Condition c, ParseCondition(line, words, i, probe));
        probe.conditions.push_back(std::move(c));
        i += 3;
        if (i == words.size()) break;
        if (words[i] != "&&") return Fail(line, fmt::format("expected && between conditions, got '{}'", words[i]));
        ++i;
      }
      if (probe.conditions.size() > LT_MAX_PREDICATES)
        return Fail(line, fmt::format("at most {} conditions per probe", LT_MAX_PREDICATES));
    }
    // Arguments the loader fills (func) go last: BPF records the others, in order.
    std::stable_partition(probe.args.begin(), probe.args.end(),
                          [](const ArgSpec& a) { return a.source != kSourceFunction; });
    if (std::count_if(probe.args.begin(), probe.args.end(),
                      [](const ArgSpec& a) { return a.source != kSourceFunction; }) > LT_MAX_ARGS)
      return Fail(line, fmt::format("at most {} arguments per probe", LT_MAX_ARGS));
    if (probe.role == Role::kMethodEnter || probe.role == Role::kMethodExit)
      RETURN_IF_ERROR(CheckMethodArgs(line, &probe));
    return probe;
  }

  Result<Profile> Parse(std::string_view text) {
    Profile profile;
    profile.source = std::string(source_);
    int line_no = 0;
    size_t pos = 0;
    while (pos <= text.size()) {
      size_t nl = text.find('\n', pos);
      std::string_view line = text.substr(pos, nl == std::string_view::npos ? text.npos : nl - pos);
      pos = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
      ++line_no;
      auto tokens = Tokenize(line);
      if (!tokens) return Fail(line_no, tokens.error().message);
      auto words = *tokens;
      if (words.empty()) continue;
      bool optional = false;
      if (words[0] == "optional") {
        if (words.size() < 2 || words[1] != "probe") return Fail(line_no, "'optional' goes before 'probe'");
        words.erase(words.begin());
        optional = true;
      }
      if (words[0] == "profile") {
        if (words.size() != 2) return Fail(line_no, "'profile' takes one name");
        profile.name = words[1];
      } else if (words[0] == "description") {
        std::string_view desc = line.substr(line.find("description") + 11);
        while (!desc.empty() && (desc.front() == ' ' || desc.front() == '\t')) desc.remove_prefix(1);
        while (!desc.empty() && (desc.back() == ' ' || desc.back() == '\t' || desc.back() == '\r'))
          desc.remove_suffix(1);
        profile.description = std::string(desc);
      } else if (words[0] == "thread") {
        if (words.size() < 2 || words.size() > 3 || (words.size() == 3 && (words[1] != "loop" || !IsQuoted(words[2]))))
          return Fail(line_no, "'thread' takes main, all, loop or loop \"NAME\"",
                      "example: thread loop \"AWT-EventQueue-*\"");
        if (words.size() == 2 && words[1].starts_with("loop:"))
          return Fail(line_no, "'thread' takes main, all, loop or loop \"NAME\"",
                      "example: thread loop \"AWT-EventQueue-*\"");
        auto choice =
            ParseThreadChoice(words.size() == 3 ? "loop:" + words[2].substr(1, words[2].size() - 2) : words[1]);
        if (!choice) return Fail(line_no, choice.error().message);
        choice->where = fmt::format("{}:{}", source_, line_no);
        if (profile.thread.mode != ThreadChoice::Mode::kUnset && !(profile.thread == *choice))
          return Fail(line_no, fmt::format("thread {} conflicts with thread {} at {}", choice->Describe(),
                                           profile.thread.Describe(), profile.thread.where));
        profile.thread = *choice;
      } else if (words[0] == "runtime") {
        if (words.size() != 2) return Fail(line_no, "'runtime' takes one name (python, jvm)");
        if (std::find(profile.runtimes.begin(), profile.runtimes.end(), words[1]) == profile.runtimes.end())
          profile.runtimes.push_back(words[1]);
      } else if (words[0] == "include") {
        if (words.size() != 2) return Fail(line_no, "'include' takes one profile name or path");
        if (depth_ >= kMaxIncludeDepth) return Fail(line_no, "includes nest too deep (a cycle?)");
        auto included = LoadOne(words[1], depth_ + 1);
        if (!included) return Fail(line_no, fmt::format("include {}: {}", words[1], included.error().message));
        for (auto& p : included->probes) profile.probes.push_back(std::move(p));
        for (auto& r : included->requirements) profile.requirements.push_back(std::move(r));
        for (auto& r : included->call_requirements) profile.call_requirements.push_back(std::move(r));
        for (auto& r : included->loaded_requirements) profile.loaded_requirements.push_back(std::move(r));
        if (!included->message_definition.empty()) {
          if (!profile.message_definition.empty() && profile.message_definition != included->message_definition)
            return Fail(line_no, fmt::format("include {}: messages {} (at {}) conflicts with messages {} at {}",
                                             words[1], included->message_definition, included->message_definition_where,
                                             profile.message_definition, profile.message_definition_where));
          profile.message_definition = included->message_definition;
          profile.message_definition_where = included->message_definition_where;
        }
        RETURN_IF_ERROR(MergeThread(&profile.thread, included->thread, line_no));
        for (auto& r : included->runtimes)
          if (std::find(profile.runtimes.begin(), profile.runtimes.end(), r) == profile.runtimes.end())
            profile.runtimes.push_back(r);
      } else if (words[0] == "messages") {
        if (words.size() != 2 || (words[1] != "dispatch" && words[1] != "poll-bounded"))
          return Fail(line_no, "'messages' takes dispatch or poll-bounded",
                      "poll-bounded: a message is the busy time between a poll's return and the next poll call");
        const std::string where = fmt::format("{}:{}", source_, line_no);
        if (!profile.message_definition.empty() && profile.message_definition != words[1])
          return Fail(line_no, fmt::format("messages {} conflicts with messages {} at {}", words[1],
                                           profile.message_definition, profile.message_definition_where));
        profile.message_definition = words[1];
        profile.message_definition_where = where;
      } else if (words[0] == "requires") {
        if (words.size() != 3)
          return Fail(line_no, "requires needs: requires BINARY SYMBOL",
                      "example: requires libglib-2.0.so g_main_context_iteration");
        profile.requirements.push_back({words[1], words[2], std::string(source_), line_no});
      } else if (words[0] == "requires-call") {
        if (words.size() != 2)
          return Fail(line_no, "requires-call needs: requires-call SYMBOL[|SYMBOL...]",
                      "example: requires-call epoll_wait|poll");
        CallRequirement r{SplitBars(words[1]), std::string(source_), line_no};
        if (r.symbols.empty()) return Fail(line_no, "requires-call names no function");
        profile.call_requirements.push_back(std::move(r));
      } else if (words[0] == "requires-loaded") {
        if (words.size() != 2)
          return Fail(line_no, "requires-loaded needs: requires-loaded GLOB[|GLOB...]",
                      "example: requires-loaded _asyncio.*");
        LoadedRequirement r{SplitBars(words[1]), std::string(source_), line_no};
        if (r.globs.empty()) return Fail(line_no, "requires-loaded names no file");
        profile.loaded_requirements.push_back(std::move(r));
      } else if (words[0] == "probe") {
        ASSIGN_OR_RETURN(ProbeSpec probe, ParseProbe(line_no, words));
        probe.optional = optional;
        profile.probes.push_back(std::move(probe));
      } else {
        return Fail(line_no,
                    fmt::format("unknown directive '{}' (known: profile, description, include, messages, "
                                "requires, requires-call, requires-loaded, optional probe, probe, thread, runtime)",
                                words[0]));
      }
    }
    if (profile.probes.empty()) return Fail(line_no, "profile defines no probe");
    if (profile.name.empty()) profile.name = std::string(source_);
    return profile;
  }

  // A built-in name or a path (relative to the including file's directory).
  Result<Profile> LoadOne(std::string_view name_or_path, int depth);

  // An included profile's thread choice joins this one's; two different ones conflict.
  Result<void> MergeThread(ThreadChoice* into, const ThreadChoice& other, int line) {
    if (other.mode == ThreadChoice::Mode::kUnset) return {};
    if (into->mode == ThreadChoice::Mode::kUnset) {
      *into = other;
      return {};
    }
    if (*into == other) return {};
    return Fail(line, fmt::format("thread {} at {} conflicts with thread {} at {}", other.Describe(), other.where,
                                  into->Describe(), into->where));
  }

 private:
  std::string_view source_;
  int depth_;
};

// A regular file of at most kMaxProfileBytes, opened so that a FIFO or device cannot block.
Result<std::string> ReadProfileFile(const std::string& path) {
  return ReadRegularFile(path, "profile", kMaxProfileBytes, ExitCode::kProfile);
}

Result<Profile> Parser::LoadOne(std::string_view name_or_path, int depth) {
  for (const auto& builtin : BuiltinProfiles())
    if (builtin.name == name_or_path) return Parser("builtin:" + std::string(builtin.name), depth).Parse(builtin.text);
  if (name_or_path.find('/') == std::string_view::npos && name_or_path.find('.') == std::string_view::npos) {
    std::vector<std::string_view> names;
    for (const auto& builtin : BuiltinProfiles()) names.push_back(builtin.name);
    return MakeError(fmt::format("no built-in profile named '{}'", name_or_path), ExitCode::kProfile,
                     "built-in profiles: " + Join(names) + "; or pass a profile file path");
  }
  std::string path(name_or_path);
  if (!path.starts_with("/") && !source_.starts_with("builtin:") && !source_.empty())
    if (auto dir = std::filesystem::path(std::string(source_)).parent_path(); !dir.empty())
      path = (dir / path).string();
  ASSIGN_OR_RETURN(std::string text, ReadProfileFile(path));
  return Parser(path, depth).Parse(text);
}

// Begin/end roles must come in pairs so the tracers never see half a span.
Result<void> CheckPairs(const Profile& profile) {
  const std::pair<Role, Role> pairs[] = {{Role::kDispatchBegin, Role::kDispatchEnd},
                                         {Role::kFrameBegin, Role::kFrameEnd},
                                         {Role::kPhaseBegin, Role::kPhaseEnd},
                                         {Role::kMethodEnter, Role::kMethodExit},
                                         {Role::kIdleBegin, Role::kIdleEnd},
                                         {Role::kPollBegin, Role::kPollEnd},
                                         {Role::kGcBegin, Role::kGcEnd},
                                         {Role::kLockWaitBegin, Role::kLockWaitEnd}};
  for (auto [a, b] : pairs) {
    if (profile.HasRole(a) == profile.HasRole(b)) continue;
    Role missing = profile.HasRole(a) ? b : a;
    Role present = profile.HasRole(a) ? a : b;
    const ProbeSpec& where = *std::find_if(profile.probes.begin(), profile.probes.end(),
                                           [&](const ProbeSpec& p) { return p.role == present; });
    return MakeError(fmt::format("{}: maps {} but no {}", where.Where(), RoleName(present), RoleName(missing)),
                     ExitCode::kProfile);
  }
  const Role needed = profile.message_definition == "poll-bounded" ? Role::kPollBegin : Role::kDispatchBegin;
  if (!profile.message_definition.empty() && !profile.HasRole(needed))
    return MakeError(fmt::format("{}: messages {} needs {} and its end", profile.message_definition_where,
                                 profile.message_definition, RoleName(needed)),
                     ExitCode::kProfile);
  return {};
}

}  // namespace

Result<Profile> ParseProfile(std::string_view text, std::string_view source) {
  ASSIGN_OR_RETURN(Profile profile, Parser(source, 0).Parse(text));
  ASSIGN_OR_RETURN(Profile composed, ComposeProfiles({std::move(profile)}));
  RETURN_IF_ERROR(CheckPairs(composed));
  return composed;
}

Result<Profile> ComposeProfiles(std::vector<Profile> profiles) {
  Profile out;
  for (const Profile& p : profiles) {
    out.name += (out.name.empty() ? "" : "+") + p.name;
    out.source += (out.source.empty() ? "" : ",") + p.source;
    if (!p.description.empty()) out.description += (out.description.empty() ? "" : "; ") + p.description;
    for (const auto& r : p.runtimes)
      if (std::find(out.runtimes.begin(), out.runtimes.end(), r) == out.runtimes.end()) out.runtimes.push_back(r);
    if (p.thread.mode == ThreadChoice::Mode::kUnset) continue;
    if (out.thread.mode != ThreadChoice::Mode::kUnset && !(out.thread == p.thread))
      return MakeError(fmt::format("{}: thread {} conflicts with thread {} at {}", p.thread.where, p.thread.Describe(),
                                   out.thread.Describe(), out.thread.where),
                       ExitCode::kProfile, "keep one thread directive, or choose with --threads");
    out.thread = p.thread;
  }
  for (Profile& p : profiles) {
    for (Requirement& r : p.requirements)
      if (std::find(out.requirements.begin(), out.requirements.end(), r) == out.requirements.end())
        out.requirements.push_back(std::move(r));
    for (CallRequirement& r : p.call_requirements)
      if (std::find(out.call_requirements.begin(), out.call_requirements.end(), r) == out.call_requirements.end())
        out.call_requirements.push_back(std::move(r));
    for (LoadedRequirement& r : p.loaded_requirements)
      if (std::find(out.loaded_requirements.begin(), out.loaded_requirements.end(), r) == out.loaded_requirements.end())
        out.loaded_requirements.push_back(std::move(r));
    if (!p.message_definition.empty()) {
      if (!out.message_definition.empty() && out.message_definition != p.message_definition)
        return MakeError(fmt::format("{}: messages {} conflicts with messages {} at {}", p.message_definition_where,
                                     p.message_definition, out.message_definition, out.message_definition_where),
                         ExitCode::kProfile, "compose profiles that define messages the same way");
      out.message_definition = p.message_definition;
      out.message_definition_where = p.message_definition_where;
    }
    for (ProbeSpec& probe : p.probes) {
      auto same_point = [&](const ProbeSpec& o) {
        return o.role == probe.role && o.kind == probe.kind && o.binary == probe.binary && o.point == probe.point;
      };
      auto it = std::find_if(out.probes.begin(), out.probes.end(), same_point);
      if (it == out.probes.end()) {
        out.probes.push_back(std::move(probe));
        continue;
      }
      // The same line twice (a profile included by two others) counts once; bound differently
      // it would make two events of one hit.
      if (it->args == probe.args && it->conditions == probe.conditions) continue;
      return MakeError(fmt::format("{}: {} at {} {} is already bound differently at {}", probe.Where(),
                                   RoleName(probe.role), probe.binary, probe.point, it->Where()),
                       ExitCode::kProfile,
                       "keep one of the two lines (or give them the same arguments and conditions)");
    }
  }
  return out;
}

Result<Profile> LoadProfile(std::string_view names_or_paths) {
  std::vector<Profile> profiles;
  size_t start = 0;
  while (start <= names_or_paths.size()) {
    size_t comma = names_or_paths.find(',', start);
    if (comma == std::string_view::npos) comma = names_or_paths.size();
    std::string_view one = names_or_paths.substr(start, comma - start);
    start = comma + 1;
    if (one.empty()) continue;
    ASSIGN_OR_RETURN(Profile profile, Parser("", 0).LoadOne(one, 0));
    profiles.push_back(std::move(profile));
  }
  if (profiles.empty()) return MakeError("no profile named", ExitCode::kUsage, "example: --profile glib,python");
  ASSIGN_OR_RETURN(Profile composed, ComposeProfiles(std::move(profiles)));
  RETURN_IF_ERROR(CheckPairs(composed));
  return composed;
}

}  // namespace looptrace::loader
