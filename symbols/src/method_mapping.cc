#include "looptrace/symbols/method_mapping.h"

#include "looptrace/util/safe_file.h"
#include "looptrace/util/text_safety.h"
#include "text_util.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <limits>
#include <optional>

namespace looptrace::symbols {
namespace {

using internal::kUtf8Bom;

using internal::IsSpace;
using internal::Trim;

// Splits on runs of spaces/tabs.
std::vector<std::string_view> SplitWords(std::string_view s) {
  std::vector<std::string_view> words;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && IsSpace(s[i])) ++i;
    const size_t begin = i;
    while (i < s.size() && !IsSpace(s[i])) ++i;
    if (i > begin) words.push_back(s.substr(begin, i - begin));
  }
  return words;
}

// Shortens a field for a warning message; control characters and invalid UTF-8 escaped.
std::string Quote(std::string_view s) { return "'" + EscapeForTerminal(s, 40) + "'"; }

// A decimal number with an optional leading '-', the whole field.
std::optional<long long> ParseDecimal(std::string_view s) {
  if (s.empty()) return std::nullopt;
  long long value = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value, 10);
  if (ptr != s.data() + s.size()) return std::nullopt;
  if (ec == std::errc::result_out_of_range) {
    return s.front() == '-' ? std::numeric_limits<long long>::min() : std::numeric_limits<long long>::max();
  }
  if (ec != std::errc()) return std::nullopt;
  return value;
}

// Parses one non-blank line into `out`; on failure returns why.
std::optional<std::string> ParseLine(std::string_view line, MappedMethod* out) {
  const size_t first_comma = line.find(',');
  if (first_comma == std::string_view::npos) {
    return "expected '<id>,<accessFlag>,<class> <method> [<desc>]'";
  }
  const size_t second_comma = line.find(',', first_comma + 1);
  if (second_comma == std::string_view::npos) return "missing access flag field";

  const std::string_view id_text = Trim(line.substr(0, first_comma));
  const std::optional<long long> id = ParseDecimal(id_text);
  if (!id) return "method id " + Quote(id_text) + " is not a decimal number";
  if (*id < 0) return "negative method id " + std::string(id_text);
  if (*id > MethodMapping::kMaxId) {
    return "method id " + std::string(id_text) + " exceeds the 20-bit maximum 1048575";
  }

  const std::string_view flag_text = Trim(line.substr(first_comma + 1, second_comma - first_comma - 1));
  const std::optional<long long> flags = ParseDecimal(flag_text);
  if (!flags) return "access flag " + Quote(flag_text) + " is not a decimal number";
  // Not limited to 16 bits: ASM adds pseudo flags such as ACC_DEPRECATED (0x20000).
  if (*flags < 0 || *flags > std::numeric_limits<int>::max()) {
    return "access flag " + std::string(flag_text) + " out of range";
  }

  const std::vector<std::string_view> words = SplitWords(line.substr(second_comma + 1));
  if (words.empty()) return "missing class and method name";
  if (words.size() == 1) return "missing method name after class " + Quote(words[0]);
  if (words.size() > 3) return "unexpected text after the descriptor: " + Quote(words[3]);

  out->id = static_cast<int>(*id);
  out->access_flags = static_cast<int>(*flags);
  // Names go into reports: valid UTF-8, each capped (the file is not trusted).
  out->class_name = SafeText(words[0]);
  out->method_name = SafeText(words[1]);
  out->descriptor = words.size() == 3 ? SafeText(words[2]) : std::string();
  return std::nullopt;
}

}  // namespace

std::string MappedMethod::Display() const {
  std::string display;  // one allocation: reports name every node of every tree with it
  display.reserve(class_name.size() + 1 + method_name.size() + descriptor.size());
  display.append(class_name).append(".").append(method_name).append(descriptor);
  return display;
}

MethodMapping MethodMapping::Parse(std::string_view text, std::string_view source_name,
                                   std::vector<std::string>* warnings) {
  MethodMapping mapping;
  std::unordered_map<int, size_t> defined_at;  // id -> line number
  if (text.starts_with(kUtf8Bom)) text.remove_prefix(kUtf8Bom.size());
  const auto warn = [&](size_t line_number, const std::string& why) {
    if (warnings != nullptr) {
      warnings->push_back(std::string(source_name) + ":" + std::to_string(line_number) + ": " + why);
    }
  };

  size_t line_number = 0;
  while (!text.empty()) {
    ++line_number;
    const size_t newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    line = Trim(line);  // also drops the '\r' of CRLF endings
    if (line.empty()) continue;

    MappedMethod method;
    if (std::optional<std::string> why = ParseLine(line, &method)) {
      ++mapping.malformed_lines_;
      warn(line_number, *why);
      continue;
    }
    auto [it, inserted] = defined_at.try_emplace(method.id, line_number);
    if (!inserted) {
      warn(line_number, "duplicate method id " + std::to_string(method.id) + " (replaces the entry of line " +
                            std::to_string(it->second) + ")");
      it->second = line_number;
    }
    const int id = method.id;
    mapping.methods_.insert_or_assign(id, std::move(method));
  }
  return mapping;
}

Result<MethodMapping> MethodMapping::Load(const std::string& path, std::vector<std::string>* warnings) {
  const std::string hint =
      "pass the methodMapping.txt written by the Matrix Gradle plugin "
      "(build/outputs/mapping/<variant>/methodMapping.txt)";
  ASSIGN_OR_RETURN(std::string text,
                   ReadRegularFile(path, "method mapping", kMaxMappingBytes, ExitCode::kProfile, hint));
  return Parse(text, path, warnings);
}

const MappedMethod* MethodMapping::Find(int id) const {
  const auto it = methods_.find(id);
  return it == methods_.end() ? nullptr : &it->second;
}

}  // namespace looptrace::symbols
