#include "loader/plan/profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>

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
    case ArgType::kPyCallable:
      return "pycallable";
    case ArgType::kAt:
      return "at";
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

}  // namespace looptrace::loader
