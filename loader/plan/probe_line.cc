// `probe ROLE KIND BINARY POINT [NAME=SOURCE[:TYPE] ...] [if CONDITION [&& ...]]` (profile.h).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>

#include "loader/plan/profile_parser.h"

namespace looptrace::loader {
namespace {

class ProbeLineParser {
 public:
  explicit ProbeLineParser(std::string_view source) : source_(source) {}

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
      return Fail(line, fmt::format("{}: source {} must be arg1..arg{} or ret", what, Quoted(word), LT_MAX_SOURCES));
    if (probe.kind == ProbeKind::kUretprobe)
      return Fail(line, fmt::format("{}: a uretprobe can only read 'ret'", what),
                  "read arguments with a uprobe on the same symbol");
    return static_cast<uint8_t>(n - 1);
  }

  // A field's offset in bytes in the structure an argument points to: 8-aligned, as BPF
  // counts it in words.
  Result<uint16_t> ParseFieldOffset(int line, std::string_view what, std::string_view type, std::string_view digits) {
    unsigned offset = 0;
    auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), offset);
    if (ec != std::errc() || ptr != digits.data() + digits.size() || digits.empty() || offset % 8 != 0 ||
        offset / 8 > UINT8_MAX)
      return Fail(line, fmt::format("{}: {}(OFFSET) takes a multiple of 8 below {}, not {}", what, type,
                                    (UINT8_MAX + 1) * 8, Quoted(digits)));
    return static_cast<uint16_t>(offset);
  }

  // SOURCE[:TYPE], TYPE = uint | int | ptr | str | str(argN) | sym | pycallable[(OFFSET)] | at(OFFSET).
  Result<ArgSource> ParseSource(int line, std::string_view text, const ProbeSpec& probe, std::string_view what,
                                ArgType default_type) {
    ArgSource arg;
    if (IsQuoted(text)) {
      arg.source = kSourceText;
      arg.type = ArgType::kStr;
      arg.text = std::string(text.substr(1, text.size() - 2));
      return arg;
    }
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
    else if (type == "pycallable")
      arg.type = ArgType::kPyCallable;
    else if (type.starts_with("pycallable(") && type.ends_with(")")) {
      // The callable stored at an offset in the structure the argument points to.
      arg.type = ArgType::kPyCallable;
      ASSIGN_OR_RETURN(arg.offset, ParseFieldOffset(line, what, "pycallable", type.substr(11, type.size() - 12)));
    } else if (type.starts_with("at(") && type.ends_with(")")) {
      // A field of the structure the argument points to.
      arg.type = ArgType::kAt;
      ASSIGN_OR_RETURN(arg.offset, ParseFieldOffset(line, what, "at", type.substr(3, type.size() - 4)));
    } else if (type.starts_with("str(") && type.ends_with(")")) {
      arg.type = ArgType::kStr;
      ASSIGN_OR_RETURN(arg.length_source,
                       ParseSourceName(line, type.substr(4, type.size() - 5), probe, fmt::format("{} length", what)));
    } else {
      return Fail(
          line, fmt::format(
                    "{}: unknown type {} (known: uint, int, ptr, str, str(argN), sym, pycallable, pycallable(OFFSET), "
                    "at(OFFSET))",
                    what, Quoted(type)));
    }
    return arg;
  }

  Result<ArgSpec> ParseArg(int line, std::string_view word, const ProbeSpec& probe) {
    size_t eq = word.find('=');
    if (eq == std::string_view::npos || eq == 0)
      return Fail(line, fmt::format("argument {} is not NAME=SOURCE[:TYPE]", Quoted(word)),
                  "example: id=arg1 name=arg2:str");
    ArgSpec arg;
    arg.name = std::string(word.substr(0, eq));
    auto known = KnownArgNames(probe.role);
    if (std::find(known.begin(), known.end(), arg.name) == known.end())
      return Fail(line, fmt::format("role {} has no argument {} (known: {})", RoleName(probe.role), Quoted(arg.name),
                                    known.empty() ? std::string("none") : fmt::format("{}", fmt::join(known, ", "))));
    ASSIGN_OR_RETURN(ArgSource source, ParseSource(line, word.substr(eq + 1), probe,
                                                   fmt::format("argument {}", Quoted(arg.name)), ArgType::kUint));
    static_cast<ArgSource&>(arg) = source;
    return arg;
  }

  // SOURCE[:TYPE] OP VALUE
  Result<Condition> ParseCondition(int line, const std::vector<std::string>& words, size_t at, const ProbeSpec& probe) {
    const std::string text = fmt::format("{} {} {}", words[at], words[at + 1], words[at + 2]);
    const std::string what = fmt::format("condition {}", Quoted(text));
    Condition c;
    c.text = text;
    const std::string& op = words[at + 1];
    const std::string& value = words[at + 2];
    const bool is_string = IsQuoted(value);
    ASSIGN_OR_RETURN(c.arg, ParseSource(line, words[at], probe, what, is_string ? ArgType::kStr : ArgType::kInt));
    if (c.arg.source == kSourceFunction)
      return Fail(line, fmt::format("{}: 'func' is known in user space only; conditions are checked in BPF", what));
    if (c.arg.source == kSourceText)
      return Fail(line, fmt::format("{}: a condition tests an argument, not a fixed text", what));
    if (c.arg.type == ArgType::kAt)
      return Fail(line, fmt::format("{}: conditions test arguments themselves, not the memory they point to", what));
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
        return Fail(line, fmt::format("{}: strings compare with ==, != or ~ (glob), not {}", what, Quoted(op)));
      }
      return c;
    }
    static const std::pair<const char*, CompareOp> kOps[] = {{"==", CompareOp::kEq}, {"!=", CompareOp::kNe},
                                                             {"<", CompareOp::kLt},  {"<=", CompareOp::kLe},
                                                             {">", CompareOp::kGt},  {">=", CompareOp::kGe}};
    auto it = std::find_if(std::begin(kOps), std::end(kOps), [&](const auto& o) { return op == o.first; });
    if (it == std::end(kOps))
      return Fail(line, fmt::format("{}: numbers compare with == != < <= > >=, not {}", what, Quoted(op)));
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
      return Fail(line, fmt::format("{}: {} is not a number", what, Quoted(value)));
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
      if (a.source == kSourceText)
        return Fail(line,
                    fmt::format("method argument {}: beats are read by BPF, not given a fixed text", Quoted(a.name)));
      if ((a.name == "name" || a.name == "class" || a.name == "sig" || a.name == "file") && a.type != ArgType::kStr)
        return Fail(line, fmt::format("method argument {} must be a string (:str or :str(argN))", Quoted(a.name)));
      if (a.type == ArgType::kSym)
        return Fail(line, fmt::format("method argument {}: a method named by its address binds addr=", Quoted(a.name)),
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
    if (!role)
      return Fail(line, fmt::format("unknown role {}", Quoted(words[1])),
                  fmt::format("known roles: {}", fmt::join(AllRoleNames(), ", ")));
    probe.role = *role;
    if (words[2] == "uprobe")
      probe.kind = ProbeKind::kUprobe;
    else if (words[2] == "uretprobe")
      probe.kind = ProbeKind::kUretprobe;
    else if (words[2] == "usdt")
      probe.kind = ProbeKind::kUsdt;
    else
      return Fail(line, fmt::format("unknown probe kind {} (known: uprobe, uretprobe, usdt)", Quoted(words[2])));
    // "quoted" when the name has spaces (C++ parameter lists).
    auto unquote = [](const std::string& w) { return IsQuoted(w) ? w.substr(1, w.size() - 2) : w; };
    probe.binary = unquote(words[3]);
    probe.point = unquote(words[4]);
    if (probe.kind == ProbeKind::kUsdt) {
      size_t colon = probe.point.find(':');
      if (colon == std::string::npos || colon == 0 || colon + 1 == probe.point.size())
        return Fail(line, fmt::format("usdt point {} must be provider:name", Quoted(probe.point)));
    }
    size_t i = 5;
    for (; i < words.size() && words[i] != "if"; ++i) {
      ASSIGN_OR_RETURN(ArgSpec arg, ParseArg(line, words[i], probe));
      for (const auto& other : probe.args)
        if (other.name == arg.name) return Fail(line, fmt::format("argument {} is bound twice", Quoted(arg.name)));
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
        if (words[i] != "&&")
          return Fail(line, fmt::format("expected && between conditions, got {}", Quoted(words[i])));
        ++i;
      }
      if (probe.conditions.size() > LT_MAX_PREDICATES)
        return Fail(line, fmt::format("at most {} conditions per probe", LT_MAX_PREDICATES));
    }
    // Arguments the loader fills (func, "text") go last: BPF records the others, in order.
    std::stable_partition(probe.args.begin(), probe.args.end(), [](const ArgSpec& a) { return !FilledByLoader(a); });
    if (std::count_if(probe.args.begin(), probe.args.end(), [](const ArgSpec& a) { return !FilledByLoader(a); }) >
        LT_MAX_ARGS)
      return Fail(line, fmt::format("at most {} arguments per probe", LT_MAX_ARGS));
    // BPF writes what names a callable into its slot and the next LT_PY_CALLABLE_SLOTS - 1.
    for (size_t a = 0; a < probe.args.size(); ++a) {
      if (probe.args[a].type != ArgType::kPyCallable) continue;
      const bool last = a + 1 == probe.args.size() || FilledByLoader(probe.args[a + 1]);
      if (!last || a + LT_PY_CALLABLE_SLOTS > LT_MAX_ARGS)
        return Fail(line, fmt::format("argument '{}': a pycallable is the last argument, one of the first {}",
                                      probe.args[a].name, LT_MAX_ARGS - LT_PY_CALLABLE_SLOTS + 1));
    }
    for (const Condition& c : probe.conditions)
      if (c.arg.type == ArgType::kPyCallable) return Fail(line, "a condition cannot test a pycallable");
    if (probe.role == Role::kMethodEnter || probe.role == Role::kMethodExit)
      RETURN_IF_ERROR(CheckMethodArgs(line, &probe));
    return probe;
  }

 private:
  std::string_view source_;
};

}  // namespace

Result<ProbeSpec> ParseProbeLine(std::string_view source, int line, const std::vector<std::string>& words) {
  return ProbeLineParser(source).ParseProbe(line, words);
}

}  // namespace looptrace::loader
