// Comparing a rendered report with its golden file: JSON by value (parsed; a difference is
// named by its JSON pointer and both values), text line by line (the first differing line).
#pragma once

#include <nlohmann/json.hpp>

#include <algorithm>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace looptrace::testing {

// A value as the failure shows it: short enough to read.
inline std::string Shown(const nlohmann::json& value) {
  std::string text = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return text.size() > 300 ? text.substr(0, 300) + "..." : text;
}

// A key as one reference token of a JSON pointer (RFC 6901: '~' and '/' escaped).
inline std::string PointerToken(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

// The first place where `got` differs from `want` ("/tree/2/cost_ns: got 5, want 6"), or
// nothing when they are equal. Numbers compare by value (1 equals 1.0); object keys in
// sorted order, array elements by index.
inline std::optional<std::string> FirstJsonDifference(const nlohmann::json& got, const nlohmann::json& want,
                                                      const std::string& path = "") {
  const std::string at = path.empty() ? "/" : path;
  if (got.is_object() && want.is_object()) {
    for (const auto& [key, value] : want.items()) {
      const std::string child = path + "/" + PointerToken(key);
      auto it = got.find(key);
      if (it == got.end()) return child + ": missing, want " + Shown(value);
      if (auto diff = FirstJsonDifference(*it, value, child)) return diff;
    }
    for (const auto& [key, value] : got.items())
      if (!want.contains(key)) return path + "/" + PointerToken(key) + ": not expected, got " + Shown(value);
    return std::nullopt;
  }
  if (got.is_array() && want.is_array()) {
    for (size_t i = 0; i < got.size() && i < want.size(); ++i)
      if (auto diff = FirstJsonDifference(got[i], want[i], path + "/" + std::to_string(i))) return diff;
    if (got.size() < want.size())
      return at + ": " + std::to_string(got.size()) + " elements, want " + std::to_string(want.size()) +
             "; the next is " + Shown(want[got.size()]);
    if (got.size() > want.size())
      return at + ": " + std::to_string(got.size()) + " elements, want " + std::to_string(want.size()) +
             "; the first extra is " + Shown(got[want.size()]);
    return std::nullopt;
  }
  if (got == want) return std::nullopt;
  return at + ": got " + Shown(got) + ", want " + Shown(want);
}

// JSON for a golden file a reviewer reads in a diff: one member or element a line, but an
// array of plain values (numbers, strings) on one line.
inline std::string ReadableJson(const nlohmann::json& value, int indent = 0) {
  auto plain = [](const nlohmann::json& v) { return !v.is_object() && !v.is_array(); };
  const std::string pad(indent + 1, ' '), close(indent, ' ');
  if (value.is_object() && !value.empty()) {
    std::string out = "{\n";
    size_t i = 0;
    for (const auto& [key, member] : value.items())
      out += pad + nlohmann::json(key).dump() + ": " + ReadableJson(member, indent + 1) +
             (++i < value.size() ? ",\n" : "\n");
    return out + close + "}";
  }
  if (value.is_array() && !value.empty() && !std::all_of(value.begin(), value.end(), plain)) {
    std::string out = "[\n";
    for (size_t i = 0; i < value.size(); ++i)
      out += pad + ReadableJson(value[i], indent + 1) + (i + 1 < value.size() ? ",\n" : "\n");
    return out + close + "]";
  }
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Parses a JSON text; on an error, says why in `error` instead of throwing.
inline std::optional<nlohmann::json> ParseJson(const std::string& text, std::string* error) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    *error = e.what();
    return std::nullopt;
  }
}

// The non-empty lines of a text.
inline std::vector<std::string> TextLines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(line);
  return lines;
}

// One JSON document against another; nothing when equal, else what differs.
inline std::optional<std::string> CompareJson(const std::string& got, const std::string& want) {
  std::string error;
  auto got_json = ParseJson(got, &error);
  if (!got_json) return "the output is not JSON: " + error;
  auto want_json = ParseJson(want, &error);
  if (!want_json) return "the golden file is not JSON: " + error;
  return FirstJsonDifference(*got_json, *want_json);
}

// JSON lines (one record a line) against JSON lines: record by record, each by value. The
// first differing record is named by its line and type, then the path inside it.
inline std::optional<std::string> CompareJsonLines(const std::string& got, const std::string& want) {
  const std::vector<std::string> got_lines = TextLines(got), want_lines = TextLines(want);
  size_t differing = 0;
  std::optional<std::string> first;
  for (size_t i = 0; i < got_lines.size() || i < want_lines.size(); ++i) {
    const std::string where = "line " + std::to_string(i + 1);
    std::optional<std::string> diff;
    if (i >= want_lines.size()) {
      diff = where + ": not expected, got " + got_lines[i].substr(0, 300);
    } else if (i >= got_lines.size()) {
      diff = where + ": missing, want " + want_lines[i].substr(0, 300);
    } else {
      std::string error;
      auto got_json = ParseJson(got_lines[i], &error);
      auto want_json = got_json ? ParseJson(want_lines[i], &error) : std::nullopt;
      if (!got_json || !want_json) {
        diff = where + (got_json ? " of the golden file" : " of the output") + " is not JSON: " + error;
      } else if (auto inside = FirstJsonDifference(*got_json, *want_json)) {
        const std::string type = want_json->is_object() ? want_json->value("type", "") : "";
        diff = where + (type.empty() ? "" : " (\"" + type + "\")") + ", " + *inside;
      }
    }
    if (!diff) continue;
    ++differing;
    if (!first) first = diff;
  }
  if (!first) return std::nullopt;
  return *first + " (" + std::to_string(differing) + " of " + std::to_string(want_lines.size()) + " lines differ)";
}

// Text line by line: the first differing line, both versions.
inline std::optional<std::string> CompareText(const std::string& got, const std::string& want) {
  if (got == want) return std::nullopt;
  std::istringstream got_lines(got), want_lines(want);
  std::string got_line, want_line;
  for (int line = 1;; ++line) {
    const bool more_got = static_cast<bool>(std::getline(got_lines, got_line));
    const bool more_want = static_cast<bool>(std::getline(want_lines, want_line));
    if (!more_got && !more_want) return "the texts differ only in their line ends";
    if (!more_got) got_line = "(end of output)";
    if (!more_want) want_line = "(end of file)";
    if (got_line != want_line || more_got != more_want)
      return "line " + std::to_string(line) + " differs\n  got:  " + got_line.substr(0, 400) +
             "\n  want: " + want_line.substr(0, 400);
  }
}

}  // namespace looptrace::testing
