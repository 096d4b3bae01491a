#include "loader/session/matrix_decoder.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <bitset>
#include <charconv>
#include <cmath>
#include <optional>
#include <unordered_map>
#include <vector>

#include "looptrace/report/call_tree.h"
#include "looptrace/util/text_safety.h"

namespace looptrace::loader {
namespace {

namespace dom = simdjson::dom;

// Keys decoded into MatrixIssue's own fields (the rest stay in `other_json`, as written).
// "tree" and "type" are looptrace's own record keys: the tree is rebuilt from `stack`.
enum Key : uint8_t {
  kTag,
  kDetail,
  kProcess,
  kScene,
  kMachine,
  kTime,
  kCost,
  kStack,
  kStackKey,
  kThreadStack,
  kFps,
  kDropLevel,
  kDropSum,
  kApplicationCreate,
  kApplicationCreateScene,
  kFirstActivityCreate,
  kStartupDuration,
  kIsWarmStartUp,
  kType,
  kTree,
  kStackKeyName,
  kDevice,
  kModel,
  kDeviceModel,
  kAppVersion,
  kAppVersionCamel,
  kVersionName,
  kVersionNameSnake,
  // looptrace's own matrix_issue records, read back
  kCategory,
  kSource,
  kContentHash,
  kThreadStackSnake,
  kKeyCount
};

std::optional<Key> ModelledKey(std::string_view key) {
  static const std::unordered_map<std::string_view, Key> kKeys = {
      {"tag", kTag},
      {"detail", kDetail},
      {"process", kProcess},
      {"scene", kScene},
      {"machine", kMachine},
      {"time", kTime},
      {"cost", kCost},
      {"stack", kStack},
      {"stackKey", kStackKey},
      {"threadStack", kThreadStack},
      {"fps", kFps},
      {"dropLevel", kDropLevel},
      {"dropSum", kDropSum},
      {"application_create", kApplicationCreate},
      {"application_create_scene", kApplicationCreateScene},
      {"first_activity_create", kFirstActivityCreate},
      {"startup_duration", kStartupDuration},
      {"is_warm_start_up", kIsWarmStartUp},
      {"type", kType},
      {"tree", kTree},
      {"stack_key_name", kStackKeyName},
      {"device", kDevice},
      {"model", kModel},
      {"device_model", kDeviceModel},
      {"app_version", kAppVersion},
      {"appVersion", kAppVersionCamel},
      {"versionName", kVersionName},
      {"version_name", kVersionNameSnake},
      {"category", kCategory},
      {"source", kSource},
      {"content_hash", kContentHash},
      {"thread_stack", kThreadStackSnake},
  };
  auto it = kKeys.find(key);
  if (it == kKeys.end()) return std::nullopt;
  return it->second;
}

// The record types of looptrace's own JSON output that are Matrix issues.
bool IsLooptraceIssueRecord(std::string_view type) {
  for (std::string_view t : {"evil_method", "anr", "lag", "signal_anr", "span_lag", "idle_lag", "input_lag", "fps",
                             "startup", "startup_evil_method", "warm_start", "matrix_issue"})
    if (type == t) return true;
  return false;
}

// Raw control characters inside strings (a `stack` copied with its line breaks) as JSON
// escapes, so the issue parses.
std::string EscapeRawControls(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 16);
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string && !escaped && static_cast<unsigned char>(c) < 0x20) {
      out += c == '\n' ? "\\n" : c == '\t' ? "\\t" : c == '\r' ? "\\r" : fmt::format("\\u{:04x}", c);
      continue;
    }
    out.push_back(c);
    if (!in_string) {
      in_string = c == '"';
    } else if (escaped) {
      escaped = false;
    } else if (c == '\\') {
      escaped = true;
    } else if (c == '"') {
      in_string = false;
    }
  }
  return out;
}

// A value as JSON text, formatted as nlohmann::json's dump() formats it (objects' keys
// sorted, the last of a repeated key kept), so kept keys and content hashes do not depend on
// the parser.
void AppendValue(dom::element value, std::string* out);

void AppendObject(dom::object object, std::string* out) {
  std::vector<std::pair<std::string_view, dom::element>> fields;
  for (dom::key_value_pair field : object) fields.emplace_back(field.key, field.value);
  std::stable_sort(fields.begin(), fields.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  out->push_back('{');
  bool first = true;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i + 1 < fields.size() && fields[i + 1].first == fields[i].first) continue;  // the last wins
    if (!first) out->push_back(',');
    first = false;
    out->push_back('"');
    AppendJsonEscaped(fields[i].first, out);
    out->append("\":");
    AppendValue(fields[i].second, out);
  }
  out->push_back('}');
}

void AppendValue(dom::element value, std::string* out) {
  switch (value.type()) {
    case dom::element_type::OBJECT:
      AppendObject(value.get_object().value_unsafe(), out);
      return;
    case dom::element_type::ARRAY: {
      out->push_back('[');
      bool first = true;
      const dom::array items = value.get_array().value_unsafe();  // a copy: the result is a temporary
      for (dom::element item : items) {
        if (!first) out->push_back(',');
        first = false;
        AppendValue(item, out);
      }
      out->push_back(']');
      return;
    }
    case dom::element_type::STRING:
      out->push_back('"');
      AppendJsonEscaped(value.get_string().value_unsafe(), out);
      out->push_back('"');
      return;
    case dom::element_type::INT64:
      fmt::format_to(std::back_inserter(*out), "{}", value.get_int64().value_unsafe());
      return;
    case dom::element_type::UINT64:
      fmt::format_to(std::back_inserter(*out), "{}", value.get_uint64().value_unsafe());
      return;
    case dom::element_type::DOUBLE:
      out->append(nlohmann::json(value.get_double().value_unsafe()).dump());
      return;
    case dom::element_type::BOOL:
      out->append(value.get_bool().value_unsafe() ? "true" : "false");
      return;
    case dom::element_type::NULL_VALUE:
      out->append("null");
      return;
  }
}

class IssueDecoder {
 public:
  IssueDecoder(std::string_view source, const MatrixNaming& naming, MatrixFleetBuilder& builder)
      : source_(source), naming_(naming), builder_(builder) {}

  void Warn(std::string_view name, std::string_view what) {
    builder_.Warn(name, fmt::format("{}: {}", source_, SafeText(what, kMaxQuotedBytes)));
  }

  std::optional<int64_t> Integer(dom::element value, std::string_view key) {
    switch (value.type()) {
      case dom::element_type::INT64:
        return value.get_int64().value_unsafe();
      case dom::element_type::UINT64:
        return static_cast<int64_t>(value.get_uint64().value_unsafe());
      case dom::element_type::DOUBLE:
        if (const double d = value.get_double().value_unsafe(); std::isfinite(d)) return std::llround(d);
        break;
      case dom::element_type::STRING: {  // some listeners stringify every value
        const std::string_view s = value.get_string().value_unsafe();
        int64_t v = 0;
        auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        if (ec == std::errc() && p == s.data() + s.size()) return v;
        break;
      }
      case dom::element_type::NULL_VALUE:
        return std::nullopt;
      default:
        break;
    }
    Warn("matrix_field_bad_type", fmt::format("{} is not a number", key));
    return std::nullopt;
  }

  std::optional<double> Number(dom::element value, std::string_view key) {
    switch (value.type()) {
      case dom::element_type::INT64:
        return static_cast<double>(value.get_int64().value_unsafe());
      case dom::element_type::UINT64:
        return static_cast<double>(value.get_uint64().value_unsafe());
      case dom::element_type::DOUBLE:
        return value.get_double().value_unsafe();
      case dom::element_type::STRING: {
        const std::string_view s = value.get_string().value_unsafe();
        double v = 0;
        auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        if (ec == std::errc() && p == s.data() + s.size()) return v;
        break;
      }
      case dom::element_type::NULL_VALUE:
        return std::nullopt;
      default:
        break;
    }
    Warn("matrix_field_bad_type", fmt::format("{} is not a number", key));
    return std::nullopt;
  }

  std::string Text(dom::element value, std::string_view key) {
    switch (value.type()) {
      case dom::element_type::STRING:
        return std::string(value.get_string().value_unsafe());
      case dom::element_type::INT64:
      case dom::element_type::UINT64:
      case dom::element_type::DOUBLE:
      case dom::element_type::BOOL: {
        std::string text;
        AppendValue(value, &text);
        return text;
      }
      case dom::element_type::NULL_VALUE:
        return {};
      default:
        Warn("matrix_field_bad_type", fmt::format("{} is not a string", key));
        return {};
    }
  }

  std::string MethodName(uint64_t id) {
    if (id == kDispatchMethodId) return "";  // the message itself, as looptrace's trees have it
    if (naming_.methods) {
      if (auto name = naming_.methods->Name(MethodIdKind::kId, id)) return *name;
      Warn("matrix_method_unnamed", fmt::format("method id {}", id));
    }
    return fmt::format("method#{}", id);
  }

  // "at a.b.c(SourceFile:12)", "|*\t\tat a.b:c(12)", "a.b.c(Native Method)": the frame alone,
  // its class and method de-obfuscated when a ProGuard/R8 mapping was given.
  std::string Frame(std::string_view line) {
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t' || line.front() == '|' || line.front() == '*'))
      line.remove_prefix(1);
    if (line.starts_with("at ")) line.remove_prefix(3);
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.remove_suffix(1);
    if (!naming_.proguard || line.empty()) return std::string(line);
    const size_t paren = line.find('(');
    std::string_view callee = line.substr(0, paren);
    std::string_view rest = paren == std::string_view::npos ? std::string_view() : line.substr(paren);
    size_t split = callee.find(':');  // Matrix's SIMPLE style: class:method(line)
    if (split == std::string_view::npos) split = callee.rfind('.');
    if (split == std::string_view::npos) return std::string(line);
    uint32_t line_number = 0;
    if (const size_t colon = rest.rfind(':'); colon != std::string_view::npos)
      std::from_chars(rest.data() + colon + 1, rest.data() + rest.size(), line_number);
    else if (rest.size() > 2)
      std::from_chars(rest.data() + 1, rest.data() + rest.size(), line_number);
    auto m = naming_.proguard->DeobfuscateMethod(callee.substr(0, split), callee.substr(split + 1), {}, line_number);
    if (!m.found) return std::string(line);
    return fmt::format("{}.{}{}", m.class_name, m.method_name, rest);
  }

  void ThreadStack(dom::element value, MatrixIssue* issue) {
    auto add = [&](std::string_view line) {
      std::string frame = Frame(line);
      if (!frame.empty()) issue->thread_stack.push_back(std::move(frame));
    };
    if (value.is_array()) {
      const dom::array lines = value.get_array().value_unsafe();
      for (dom::element line : lines)
        if (line.is_string()) add(line.get_string().value_unsafe());
      return;
    }
    if (!value.is_string()) {
      if (!value.is_null()) Warn("matrix_field_bad_type", "threadStack is not a string");
      return;
    }
    std::string_view text = value.get_string().value_unsafe();
    size_t pos = 0;
    while (pos <= text.size()) {
      size_t end = text.find('\n', pos);
      if (end == std::string_view::npos) end = text.size();
      add(text.substr(pos, end - pos));
      pos = end + 1;
    }
  }

  void DropLevels(dom::element value, std::string_view key, auto* out) {
    if (!value.is_object()) {
      if (!value.is_null()) Warn("matrix_field_bad_type", fmt::format("{} is not an object", key));
      return;
    }
    // The last of a repeated level counts, as for every other key.
    const dom::object levels = value.get_object().value_unsafe();
    for (dom::key_value_pair field : levels)
      for (size_t i = 0; i < kMatrixDropLevelCount; ++i)
        if (field.key == kMatrixDropLevels[i]) {
          if (auto v = Number(field.value, key)) out[i] = static_cast<std::remove_pointer_t<decltype(out)>>(*v);
        }
  }

  void Decode(dom::object object, std::string_view logcat_tag) {
    std::array<dom::element, kKeyCount> fields;
    std::bitset<kKeyCount> present;
    std::vector<std::pair<std::string_view, dom::element>> others;
    for (dom::key_value_pair field : object) {
      if (auto key = ModelledKey(field.key)) {
        fields[*key] = field.value;  // the last of a repeated key wins
        present.set(*key);
      } else {
        others.emplace_back(field.key, field.value);
      }
    }
    auto has = [&](Key key) { return present.test(key); };
    auto text = [&](Key key, const char* name) { return has(key) ? Text(fields[key], name) : std::string(); };
    auto integer = [&](Key key, const char* name) -> std::optional<int64_t> {
      return has(key) ? Integer(fields[key], name) : std::nullopt;
    };

    MatrixIssue issue;
    issue.source = std::string(source_);
    issue.tag = text(kTag, "tag");
    if (issue.tag.empty()) issue.tag = std::string(logcat_tag);
    if (issue.tag.empty()) {
      // No tag (a listener that sends the content alone): told by its keys.
      if (has(kStack) || has(kDetail) || has(kThreadStack))
        issue.tag = "Trace_EvilMethod";
      else if (has(kDropLevel) || has(kFps))
        issue.tag = "Trace_FPS";
      else if (has(kStartupDuration) || has(kApplicationCreate))
        issue.tag = "Trace_StartUp";
    }
    // looptrace's own JSON output: its Matrix records are issues, the others are not.
    if (has(kType) && fields[kType].is_string()) {
      const std::string_view type = fields[kType].get_string().value_unsafe();
      if (!IsLooptraceIssueRecord(type)) {
        builder_.Warn("looptrace_records_skipped", fmt::format("{}: {}", source_, type));
        return;
      }
    }
    if (issue.tag.empty()) {
      Warn("matrix_not_an_issue", "no tag and none of Matrix's keys");
      return;
    }
    if (!issue.tag.starts_with("Trace")) {
      Warn("matrix_other_plugin", issue.tag);
      return;
    }
    if (!others.empty()) {
      // As an object of its own: sorted by key, the last of a repeated key kept.
      std::stable_sort(others.begin(), others.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      issue.other_json.push_back('{');
      for (size_t i = 0; i < others.size(); ++i) {
        if (i + 1 < others.size() && others[i + 1].first == others[i].first) continue;
        if (issue.other_json.size() > 1) issue.other_json.push_back(',');
        issue.other_json.push_back('"');
        AppendJsonEscaped(others[i].first, &issue.other_json);
        issue.other_json.append("\":");
        AppendValue(others[i].second, &issue.other_json);
      }
      issue.other_json.push_back('}');
    }
    issue.detail = text(kDetail, "detail");
    issue.process = text(kProcess, "process");
    issue.scene = text(kScene, "scene");
    issue.machine = text(kMachine, "machine");
    for (auto [key, name] : {std::pair{kDevice, "device"}, {kDeviceModel, "device_model"}, {kModel, "model"}})
      if (issue.device.empty()) issue.device = text(key, name);
    for (auto [key, name] : {std::pair{kAppVersion, "app_version"},
                             {kAppVersionCamel, "appVersion"},
                             {kVersionName, "versionName"},
                             {kVersionNameSnake, "version_name"}})
      if (issue.app_version.empty()) issue.app_version = text(key, name);
    issue.time_ms = integer(kTime, "time");
    issue.cost_ms = integer(kCost, "cost");
    if (has(kStack)) {
      auto warn = [&](std::string_view name, std::string_view line) { Warn(name, line); };
      if (fields[kStack].is_string()) {
        issue.tree = ParseMatrixStack(fields[kStack].get_string().value_unsafe(), warn);
      } else {
        const std::string stack = Text(fields[kStack], "stack");
        issue.tree = ParseMatrixStack(stack, warn);
      }
      for (NamedCallNode& n : issue.tree) n.name = MethodName(n.node.id);
    }
    issue.stack_key = text(kStackKey, "stackKey");
    if (!issue.stack_key.empty()) {
      uint64_t id = 0;
      auto [p, ec] = std::from_chars(issue.stack_key.data(), issue.stack_key.data() + issue.stack_key.size(), id);
      if (ec == std::errc()) issue.stack_key_name = id == kDispatchMethodId ? "(the message itself)" : MethodName(id);
    }
    if (has(kThreadStack))
      ThreadStack(fields[kThreadStack], &issue);
    else if (has(kThreadStackSnake))  // a matrix_issue record
      ThreadStack(fields[kThreadStackSnake], &issue);
    if (has(kFps)) issue.fps = Number(fields[kFps], "fps");
    if (has(kDropLevel)) DropLevels(fields[kDropLevel], "dropLevel", issue.drop_level);
    if (has(kDropSum)) DropLevels(fields[kDropSum], "dropSum", issue.drop_sum);
    issue.application_create_ms = integer(kApplicationCreate, "application_create");
    issue.first_activity_create_ms = integer(kFirstActivityCreate, "first_activity_create");
    issue.startup_duration_ms = integer(kStartupDuration, "startup_duration");
    issue.application_create_scene = text(kApplicationCreateScene, "application_create_scene");
    if (has(kIsWarmStartUp)) {
      const dom::element warm = fields[kIsWarmStartUp];
      if (warm.is_bool())
        issue.warm = warm.get_bool().value_unsafe();
      else if (warm.is_string())
        issue.warm = warm.get_string().value_unsafe() == "true";
      else
        Warn("matrix_field_bad_type", "is_warm_start_up is not a boolean");
    }
    builder_.Add(std::move(issue));
  }

 private:
  std::string_view source_;
  const MatrixNaming& naming_;
  MatrixFleetBuilder& builder_;
};

// One parser per thread, reused: its buffers grow to the largest issue and stay. `padded`
// holds the text with the zero bytes simdjson may read past its end.
struct Parser {
  dom::parser parser;
  std::string padded;

  simdjson::simdjson_result<dom::element> Parse(std::string_view text) {
    padded.assign(text);
    padded.append(simdjson::SIMDJSON_PADDING, '\0');
    return parser.parse(padded.data(), text.size(), false);
  }
};

}  // namespace

void AppendJsonEscaped(std::string_view text, std::string* out) {
  size_t plain = 0;  // the start of the run not yet copied
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out->append(text.substr(plain, i - plain));
    plain = i + 1;
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\b':
        out->append("\\b");
        break;
      case '\f':
        out->append("\\f");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      default:
        fmt::format_to(std::back_inserter(*out), "\\u{:04x}", c);
        break;
    }
  }
  out->append(text.substr(plain));
}

void AddMatrixIssueJson(std::string_view text, std::string_view source, std::string_view logcat_tag,
                        const MatrixNaming& naming, MatrixFleetBuilder& builder) {
  thread_local Parser parser;
  IssueDecoder decoder(source, naming, builder);
  std::string safe;
  if (!simdjson::validate_utf8(text.data(), text.size())) {
    decoder.Warn("matrix_invalid_utf8", "bytes that are not UTF-8");
    safe = SafeText(text, 3 * text.size() + 16);  // each bad byte may become 3 (U+FFFD)
    text = safe;
  }
  dom::element root;
  if (parser.Parse(text).get(root) != simdjson::SUCCESS) {
    const std::string escaped = EscapeRawControls(text);
    if (parser.Parse(escaped).get(root) != simdjson::SUCCESS) {
      decoder.Warn("matrix_not_json", text);
      return;
    }
  }
  if (!root.is_object()) {
    decoder.Warn("matrix_not_an_issue", text);
    return;
  }
  decoder.Decode(root.get_object().value_unsafe(), logcat_tag);
}

}  // namespace looptrace::loader
