#include "looptrace/symbols/proguard_mapping.h"

#include "looptrace/util/safe_file.h"
#include "text_util.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <optional>

namespace looptrace::symbols {
namespace {

using internal::kUtf8Bom;
constexpr std::string_view kArrow = " -> ";

using internal::IsSpace;
using internal::Trim;

bool HasSpace(std::string_view s) {
  for (char c : s) {
    if (IsSpace(c)) return true;
  }
  return false;
}

std::string Quote(std::string_view s) {
  constexpr size_t kMax = 40;
  if (s.size() <= kMax) return "'" + std::string(s) + "'";
  return "'" + std::string(s.substr(0, kMax)) + "...'";
}

// A non-negative decimal line number, the whole field.
std::optional<uint32_t> ParseLineNumber(std::string_view s) {
  if (s.empty()) return std::nullopt;
  uint32_t value = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value, 10);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return value;
}

std::string Dotted(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c == '/') c = '.';
  }
  return out;
}

// Parses "[a:b:]type [class.]name(args)[:c[:d]]" (the part before " -> ").
std::optional<std::string> ParseMethod(std::string_view text, const std::string& class_name, ProguardMethod* out) {
  // Leading "a:b:" line range.
  if (!text.empty() && text.front() >= '0' && text.front() <= '9') {
    const size_t first = text.find(':');
    const size_t second = first == std::string_view::npos ? first : text.find(':', first + 1);
    if (second == std::string_view::npos) return "expected 'start:end:' before the return type";
    auto start = ParseLineNumber(text.substr(0, first));
    auto end = ParseLineNumber(text.substr(first + 1, second - first - 1));
    if (!start || !end) return "bad line range " + Quote(text.substr(0, second));
    if (*end < *start) return "line range " + Quote(text.substr(0, second)) + " ends before it starts";
    out->obfuscated_start = *start;
    out->obfuscated_end = *end;
    text.remove_prefix(second + 1);
  }
  const size_t space = text.find(' ');
  if (space == std::string_view::npos || space == 0) return "expected '<type> <name>(<args>)'";
  if (text.substr(0, space).find(':') != std::string_view::npos) {
    return "bad line range in " + Quote(text.substr(0, space));
  }
  out->return_type = std::string(text.substr(0, space));
  text = Trim(text.substr(space + 1));
  const size_t open = text.find('(');
  const size_t close = text.find(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
    return "unbalanced parentheses in " + Quote(text);
  }
  if (text.find('(', open + 1) != std::string_view::npos || text.find(')', close + 1) != std::string_view::npos) {
    return "unbalanced parentheses in " + Quote(text);
  }
  std::string_view qualified = text.substr(0, open);
  if (qualified.empty() || HasSpace(qualified)) return "bad method name " + Quote(qualified);
  const size_t dot = qualified.rfind('.');
  if (dot != std::string_view::npos) {
    if (dot == 0 || dot + 1 == qualified.size()) return "bad method name " + Quote(qualified);
    out->class_name = std::string(qualified.substr(0, dot));
    out->name = std::string(qualified.substr(dot + 1));
  } else {
    out->class_name = class_name;
    out->name = std::string(qualified);
  }
  std::string_view args = text.substr(open + 1, close - open - 1);
  while (!args.empty()) {
    const size_t comma = args.find(',');
    const std::string_view arg = Trim(args.substr(0, comma));
    if (arg.empty()) return "empty argument type in " + Quote(text);
    out->arguments.emplace_back(arg);
    if (comma == std::string_view::npos) break;
    args.remove_prefix(comma + 1);
    if (args.empty()) return "empty argument type in " + Quote(text);
  }
  std::string_view rest = text.substr(close + 1);
  if (!rest.empty()) {
    if (rest.front() != ':') return "unexpected " + Quote(rest) + " after the arguments";
    rest.remove_prefix(1);
    const size_t colon = rest.find(':');
    auto start = ParseLineNumber(rest.substr(0, colon));
    if (!start) return "bad original line " + Quote(rest);
    out->original_start = *start;
    out->original_end = *start;
    if (colon != std::string_view::npos) {
      auto end = ParseLineNumber(rest.substr(colon + 1));
      if (!end) return "bad original line " + Quote(rest);
      out->original_end = *end;
    }
  }
  return std::nullopt;
}

}  // namespace

std::string JavaTypeToDescriptor(std::string_view type) {
  type = Trim(type);
  if (type.empty()) return {};
  if (type.size() > 2 && type.ends_with("[]")) {
    return "[" + JavaTypeToDescriptor(type.substr(0, type.size() - 2));
  }
  static const std::pair<std::string_view, std::string_view> kPrimitives[] = {
      {"void", "V"}, {"boolean", "Z"}, {"byte", "B"},  {"char", "C"},   {"short", "S"},
      {"int", "I"},  {"long", "J"},    {"float", "F"}, {"double", "D"},
  };
  for (const auto& [name, code] : kPrimitives) {
    if (type == name) return std::string(code);
  }
  return "L" + Dotted(type) + ";";
}

std::string ProguardMethod::Signature() const {
  std::string out = return_type + " " + name + "(";
  for (size_t i = 0; i < arguments.size(); ++i) {
    if (i > 0) out += ",";
    out += arguments[i];
  }
  return out + ")";
}

std::string ProguardMethod::Descriptor() const {
  std::string out = "(";
  for (const std::string& argument : arguments) out += JavaTypeToDescriptor(argument);
  return out + ")" + JavaTypeToDescriptor(return_type);
}

Result<ProguardMapping> ProguardMapping::Load(const std::string& path, std::vector<std::string>* warnings) {
  ASSIGN_OR_RETURN(std::string text, ReadRegularFile(path, "ProGuard mapping", kMaxMappingBytes, ExitCode::kProfile));
  return Parse(text, path, warnings);
}

ProguardMapping ProguardMapping::Parse(std::string_view text, std::string_view source_name,
                                       std::vector<std::string>* warnings) {
  ProguardMapping mapping;
  if (text.starts_with(kUtf8Bom)) text.remove_prefix(kUtf8Bom.size());
  auto warn = [&](size_t line_number, const std::string& why) {
    ++mapping.malformed_lines_;
    if (warnings != nullptr) {
      warnings->push_back(std::string(source_name) + ":" + std::to_string(line_number) + ": " + why);
    }
  };
  ProguardClass* current = nullptr;
  size_t line_number = 0;
  while (!text.empty()) {
    ++line_number;
    const size_t newline = text.find('\n');
    std::string_view raw = text.substr(0, newline);
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    const std::string_view line = Trim(raw);
    if (line.empty() || line.front() == '#') continue;
    const bool member = IsSpace(raw.front());
    const size_t arrow = line.find(kArrow);
    if (arrow == std::string_view::npos) {
      warn(line_number, "expected '<original> -> <obfuscated>'");
      continue;
    }
    const std::string_view left = Trim(line.substr(0, arrow));
    std::string_view right = Trim(line.substr(arrow + kArrow.size()));
    if (!member) {
      // Class line: "orig -> obf:".
      if (!right.ends_with(':')) {
        warn(line_number, "class line must end with ':'");
        current = nullptr;
        continue;
      }
      right.remove_suffix(1);
      right = Trim(right);
      if (left.empty() || right.empty() || HasSpace(left) || HasSpace(right)) {
        warn(line_number, "bad class names in " + Quote(line));
        current = nullptr;
        continue;
      }
      const std::string obfuscated(right);
      if (mapping.by_obfuscated_.count(obfuscated) != 0) {
        warn(line_number, "class " + obfuscated + " is mapped twice; keeping the first");
        current = nullptr;
        continue;
      }
      mapping.by_obfuscated_.emplace(obfuscated, mapping.classes_.size());
      mapping.original_to_obfuscated_.emplace(std::string(left), obfuscated);
      ProguardClass& added = mapping.classes_.emplace_back();
      added.original_name = std::string(left);
      added.obfuscated_name = obfuscated;
      current = &added;
      continue;
    }
    if (current == nullptr) {
      warn(line_number, "member line outside a class");
      continue;
    }
    if (right.empty() || HasSpace(right)) {
      warn(line_number, "bad obfuscated name " + Quote(right));
      continue;
    }
    if (left.find('(') == std::string_view::npos && left.find(')') == std::string_view::npos) {
      // Field: "type name -> obf".
      const size_t space = left.rfind(' ');
      if (space == std::string_view::npos || Trim(left.substr(0, space)).empty()) {
        warn(line_number, "expected '<type> <field> -> <obfuscated>'");
        continue;
      }
      current->fields[std::string(right)] = std::string(Trim(left.substr(space + 1)));
      continue;
    }
    ProguardMethod method;
    if (auto why = ParseMethod(left, current->original_name, &method)) {
      warn(line_number, *why);
      continue;
    }
    method.obfuscated_name = std::string(right);
    current->methods.push_back(std::move(method));
    ++mapping.method_count_;
  }
  return mapping;
}

const ProguardClass* ProguardMapping::FindClass(std::string_view obfuscated) const {
  auto it = by_obfuscated_.find(Dotted(obfuscated));
  return it == by_obfuscated_.end() ? nullptr : &classes_[it->second];
}

std::string ProguardMapping::DeobfuscateClass(std::string_view obfuscated) const {
  std::string_view base = obfuscated;
  std::string suffix;
  while (base.size() > 2 && base.ends_with("[]")) {
    base.remove_suffix(2);
    suffix += "[]";
  }
  const ProguardClass* found = FindClass(base);
  return (found != nullptr ? found->original_name : Dotted(base)) + suffix;
}

std::string ProguardMapping::DeobfuscateDescriptor(std::string_view descriptor) const {
  std::string out;
  out.reserve(descriptor.size() + 16);
  size_t i = 0;
  while (i < descriptor.size()) {
    const char c = descriptor[i];
    if (c == 'L') {
      const size_t end = descriptor.find(';', i);
      if (end == std::string_view::npos) {  // malformed: keep the rest as it is
        out.append(descriptor.substr(i));
        break;
      }
      out += "L" + DeobfuscateClass(descriptor.substr(i + 1, end - i - 1)) + ";";
      i = end + 1;
    } else {
      out.push_back(c);
      ++i;
    }
  }
  return out;
}

std::vector<const ProguardMethod*> ProguardMapping::FindMethods(std::string_view obfuscated_class,
                                                                std::string_view obfuscated_method,
                                                                std::string_view obfuscated_descriptor,
                                                                uint32_t line) const {
  std::vector<const ProguardMethod*> out;
  const ProguardClass* found = FindClass(obfuscated_class);
  if (found == nullptr) return out;
  const std::string wanted =
      obfuscated_descriptor.empty() ? std::string() : DeobfuscateDescriptor(obfuscated_descriptor);
  auto matches_descriptor = [&](const ProguardMethod& method) {
    if (wanted.empty()) return true;
    // An inlined frame belongs to a chain; only the outermost carries the descriptor of
    // the obfuscated method, so chains are filtered by their last member below.
    return method.Descriptor() == wanted;
  };
  if (line > 0) {
    // Members whose range holds the line, grouped in runs (one inline chain per run).
    std::vector<const ProguardMethod*> chain;
    for (const ProguardMethod& method : found->methods) {
      if (method.obfuscated_name != obfuscated_method) continue;
      if (method.obfuscated_start == 0 && method.obfuscated_end == 0) continue;
      if (line < method.obfuscated_start || line > method.obfuscated_end) continue;
      chain.push_back(&method);
    }
    if (!chain.empty() && (wanted.empty() || matches_descriptor(*chain.back()))) return chain;
  }
  for (const ProguardMethod& method : found->methods) {
    if (method.obfuscated_name != obfuscated_method || !matches_descriptor(method)) continue;
    // Without a line, members of inline chains other than the outermost (those declared
    // in another class) are not candidates.
    if (line == 0 && method.class_name != found->original_name) continue;
    bool duplicate = false;
    for (const ProguardMethod* seen : out) {
      if (seen->name == method.name && seen->class_name == method.class_name && seen->arguments == method.arguments &&
          seen->return_type == method.return_type) {
        duplicate = true;  // the same method listed once per line range
        break;
      }
    }
    if (!duplicate) out.push_back(&method);
  }
  return out;
}

DeobfuscatedMethod ProguardMapping::DeobfuscateMethod(std::string_view obfuscated_class,
                                                      std::string_view obfuscated_method,
                                                      std::string_view obfuscated_descriptor, uint32_t line) const {
  DeobfuscatedMethod out;
  out.class_name = DeobfuscateClass(obfuscated_class);
  out.method_name = std::string(obfuscated_method);
  const ProguardClass* found = FindClass(obfuscated_class);
  if (found == nullptr) return out;
  out.found = true;
  const auto methods = FindMethods(obfuscated_class, obfuscated_method, obfuscated_descriptor, line);
  if (methods.empty()) return out;  // e.g. a method kept with its name
  const ProguardMethod* best = methods.back();
  if (line == 0) {
    best = methods.front();
    for (const ProguardMethod* method : methods) {
      if (method->name != best->name) out.ambiguous = true;
    }
  }
  out.class_name = best->class_name;
  out.method_name = best->name;
  out.signature = best->Signature();
  return out;
}

}  // namespace looptrace::symbols
