#include "loader/session/matrix_input.h"

#include <fmt/format.h>
#include <unistd.h>
#include <zlib.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <unordered_set>

#include "looptrace/util/safe_file.h"
#include "looptrace/util/text_safety.h"

namespace looptrace::loader {
namespace {

using nlohmann::json;

constexpr size_t kMaxLogcatLineBytes = 1 << 20;

// Keys decoded into MatrixIssue's own fields (the rest stay in `other`, as written). "tree"
// and "type" are looptrace's own record keys: the tree is rebuilt from `stack`.
bool IsModelledKey(std::string_view key) {
  static const std::unordered_set<std::string_view> kKeys = {
      "tag", "detail", "process", "scene", "machine", "time", "cost", "stack", "stackKey", "threadStack", "fps",
      "dropLevel", "dropSum", "application_create", "application_create_scene", "first_activity_create",
      "startup_duration", "is_warm_start_up", "type", "tree", "stack_key_name", "device", "model", "device_model",
      "app_version", "appVersion", "versionName", "version_name",
      // looptrace's own matrix_issue records, read back
      "category", "source", "content_hash", "thread_stack"};
  return kKeys.contains(key);
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

class IssueDecoder {
 public:
  IssueDecoder(std::string_view source, const MatrixNaming& naming, MatrixFleetBuilder& builder)
      : source_(source), naming_(naming), builder_(builder) {}

  void Warn(std::string_view name, std::string_view what) {
    builder_.Warn(name, fmt::format("{}: {}", source_, SafeText(what, kMaxQuotedBytes)));
  }

  std::optional<int64_t> Integer(const json& value, std::string_view key) {
    if (value.is_number_integer()) return value.get<int64_t>();
    if (value.is_number_float() && std::isfinite(value.get<double>())) return std::llround(value.get<double>());
    if (value.is_string()) {  // some listeners stringify every value
      const std::string& s = value.get_ref<const std::string&>();
      int64_t v = 0;
      auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      if (ec == std::errc() && p == s.data() + s.size()) return v;
    }
    if (!value.is_null()) Warn("matrix_field_bad_type", fmt::format("{} is not a number", key));
    return std::nullopt;
  }

  std::optional<double> Number(const json& value, std::string_view key) {
    if (value.is_number()) return value.get<double>();
    if (value.is_string()) {
      const std::string& s = value.get_ref<const std::string&>();
      double v = 0;
      auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      if (ec == std::errc() && p == s.data() + s.size()) return v;
    }
    if (!value.is_null()) Warn("matrix_field_bad_type", fmt::format("{} is not a number", key));
    return std::nullopt;
  }

  std::string Text(const json& value, std::string_view key) {
    if (value.is_string()) return value.get<std::string>();
    if (value.is_number() || value.is_boolean()) return value.dump();
    if (!value.is_null()) Warn("matrix_field_bad_type", fmt::format("{} is not a string", key));
    return {};
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

  void ThreadStack(const json& value, MatrixIssue* issue) {
    auto add = [&](std::string_view line) {
      std::string frame = Frame(line);
      if (!frame.empty()) issue->thread_stack.push_back(std::move(frame));
    };
    if (value.is_array()) {
      for (const json& line : value)
        if (line.is_string()) add(line.get_ref<const std::string&>());
      return;
    }
    if (!value.is_string()) {
      if (!value.is_null()) Warn("matrix_field_bad_type", "threadStack is not a string");
      return;
    }
    std::string_view text = value.get_ref<const std::string&>();
    size_t pos = 0;
    while (pos <= text.size()) {
      size_t end = text.find('\n', pos);
      if (end == std::string_view::npos) end = text.size();
      add(text.substr(pos, end - pos));
      pos = end + 1;
    }
  }

  void DropLevels(const json& value, std::string_view key, auto* out) {
    if (!value.is_object()) {
      if (!value.is_null()) Warn("matrix_field_bad_type", fmt::format("{} is not an object", key));
      return;
    }
    for (size_t i = 0; i < kMatrixDropLevelCount; ++i)
      if (auto it = value.find(kMatrixDropLevels[i]); it != value.end()) {
        if (auto v = Number(*it, key)) out[i] = static_cast<std::remove_pointer_t<decltype(out)>>(*v);
      }
  }

  void Decode(json& j, std::string_view logcat_tag) {
    MatrixIssue issue;
    issue.source = std::string(source_);
    if (auto it = j.find("tag"); it != j.end()) issue.tag = Text(*it, "tag");
    if (issue.tag.empty()) issue.tag = std::string(logcat_tag);
    if (issue.tag.empty()) {
      // No tag (a listener that sends the content alone): told by its keys.
      if (j.contains("stack") || j.contains("detail") || j.contains("threadStack"))
        issue.tag = "Trace_EvilMethod";
      else if (j.contains("dropLevel") || j.contains("fps"))
        issue.tag = "Trace_FPS";
      else if (j.contains("startup_duration") || j.contains("application_create"))
        issue.tag = "Trace_StartUp";
    }
    // looptrace's own JSON output: its Matrix records are issues, the others are not.
    if (auto it = j.find("type");
        it != j.end() && it->is_string() && !IsLooptraceIssueRecord(it->get_ref<const std::string&>())) {
      builder_.Warn("looptrace_records_skipped", fmt::format("{}: {}", source_, it->get<std::string>()));
      return;
    }
    if (issue.tag.empty()) {
      Warn("matrix_not_an_issue", "no tag and none of Matrix's keys");
      return;
    }
    if (!issue.tag.starts_with("Trace")) {
      Warn("matrix_other_plugin", issue.tag);
      return;
    }
    json other = json::object();
    for (auto it = j.begin(); it != j.end(); ++it)  // moved: the rest reads modelled keys only
      if (!IsModelledKey(it.key())) other[it.key()] = std::move(it.value());
    if (!other.empty()) issue.other_json = other.dump(-1, ' ', false, json::error_handler_t::replace);
    auto text = [&](const char* key) {
      auto it = j.find(key);
      return it == j.end() ? std::string() : Text(*it, key);
    };
    auto integer = [&](const char* key) -> std::optional<int64_t> {
      auto it = j.find(key);
      return it == j.end() ? std::nullopt : Integer(*it, key);
    };
    issue.detail = text("detail");
    issue.process = text("process");
    issue.scene = text("scene");
    issue.machine = text("machine");
    for (const char* key : {"device", "device_model", "model"})
      if (issue.device.empty()) issue.device = text(key);
    for (const char* key : {"app_version", "appVersion", "versionName", "version_name"})
      if (issue.app_version.empty()) issue.app_version = text(key);
    issue.time_ms = integer("time");
    issue.cost_ms = integer("cost");
    if (auto it = j.find("stack"); it != j.end()) {
      const std::string stack = Text(*it, "stack");
      issue.tree = ParseMatrixStack(stack, [&](std::string_view name, std::string_view line) { Warn(name, line); });
      for (NamedCallNode& n : issue.tree) n.name = MethodName(n.node.id);
    }
    issue.stack_key = text("stackKey");
    if (!issue.stack_key.empty()) {
      uint64_t id = 0;
      auto [p, ec] = std::from_chars(issue.stack_key.data(), issue.stack_key.data() + issue.stack_key.size(), id);
      if (ec == std::errc()) issue.stack_key_name = id == kDispatchMethodId ? "(the message itself)" : MethodName(id);
    }
    if (auto it = j.find("threadStack"); it != j.end())
      ThreadStack(*it, &issue);
    else if (auto ours = j.find("thread_stack"); ours != j.end())  // a matrix_issue record
      ThreadStack(*ours, &issue);
    if (auto it = j.find("fps"); it != j.end()) issue.fps = Number(*it, "fps");
    if (auto it = j.find("dropLevel"); it != j.end()) DropLevels(*it, "dropLevel", issue.drop_level);
    if (auto it = j.find("dropSum"); it != j.end()) DropLevels(*it, "dropSum", issue.drop_sum);
    issue.application_create_ms = integer("application_create");
    issue.first_activity_create_ms = integer("first_activity_create");
    issue.startup_duration_ms = integer("startup_duration");
    issue.application_create_scene = text("application_create_scene");
    if (auto it = j.find("is_warm_start_up"); it != j.end()) {
      if (it->is_boolean())
        issue.warm = it->get<bool>();
      else if (it->is_string())
        issue.warm = it->get_ref<const std::string&>() == "true";
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

// The tracer a Matrix logcat line comes from ("StartupTracer" of "Matrix.StartupTracer:"),
// "" for another component's line. Most of Matrix's tags start with "Matrix."; the signal
// ANR and thread-priority tracers' do not.
std::string_view MatrixLogTag(std::string_view line) {
  for (std::string_view tag : {"Matrix.", "SignalAnrTracer", "ThreadPriorityTracer"}) {
    const size_t at = line.find(tag);
    if (at == std::string_view::npos) continue;
    std::string_view tracer = line.substr(tag == "Matrix." ? at + tag.size() : at);
    tracer = tracer.substr(0, tracer.find_first_of(": ("));
    return tracer.empty() ? std::string_view("Matrix") : tracer;
  }
  return {};
}

// "tag[Trace_EvilMethod]" in an Issue.toString() a listener logged.
std::string_view IssueToStringTag(std::string_view line) {
  const size_t at = line.find("tag[");
  if (at == std::string_view::npos) return {};
  const size_t end = line.find(']', at);
  return end == std::string_view::npos ? std::string_view() : line.substr(at + 4, end - at - 4);
}

// The issue tag a Matrix tracer's logcat tag stands for.
std::string_view TagOfTracer(std::string_view tracer) {
  if (tracer.starts_with("FrameTracer") || tracer.starts_with("FPS")) return "Trace_FPS";
  if (tracer.starts_with("StartupTracer")) return "Trace_StartUp";
  if (tracer.find("Tracer") != std::string_view::npos) return "Trace_EvilMethod";
  return {};
}

// StartupTracer's "[report] applicationCost:42 firstScreenCost:244 allCost:2306
// isWarmStartUp:false" as a Trace_StartUp issue.
bool StartupReportLine(std::string_view line, std::string_view source, const MatrixNaming& naming,
                       MatrixFleetBuilder& builder) {
  const size_t at = line.find("[report] applicationCost:");
  if (at == std::string_view::npos) return false;
  json j{{"tag", "Trace_StartUp"}};
  std::string_view rest = line.substr(at + 9);
  bool ok = true;
  while (!rest.empty()) {
    const size_t space = rest.find(' ');
    std::string_view pair = rest.substr(0, space);
    rest = space == std::string_view::npos ? std::string_view() : rest.substr(space + 1);
    const size_t colon = pair.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view key = pair.substr(0, colon), value = pair.substr(colon + 1);
    if (value.ends_with(',')) value.remove_suffix(1);  // 2.1.0 appends ", createScene:N"
    int64_t number = 0;
    const bool is_number =
        std::from_chars(value.data(), value.data() + value.size(), number).ptr == value.data() + value.size() &&
        !value.empty();
    if (key == "isWarmStartUp") {
      j["is_warm_start_up"] = value == "true";
    } else if (!is_number) {
      ok = false;
    } else if (key == "applicationCost") {
      j["application_create"] = number;
    } else if (key == "firstScreenCost") {
      j["first_activity_create"] = number;
    } else if (key == "allCost") {
      j["startup_duration"] = number;
    } else if (key == "createScene") {
      j["application_create_scene"] = number;
    }
  }
  if (!ok || !j.contains("startup_duration")) {
    builder.Warn("matrix_logcat_unparsed", fmt::format("{}: {}", source, SafeText(line, kMaxQuotedBytes)));
    return true;
  }
  IssueDecoder(source, naming, builder).Decode(j, "Trace_StartUp");
  return true;
}

}  // namespace

InputKind DetectInputKind(std::string_view line) {
  if (line.starts_with("\xEF\xBB\xBF")) line.remove_prefix(3);
  while (!line.empty() && (line.front() == ' ' || line.front() == '\t' || line.front() == '\r')) line.remove_prefix(1);
  if (line.empty()) return InputKind::kEmpty;
  if (line.front() == '{') {
    auto j = json::parse(line, nullptr, false);
    if (j.is_object() && j.value("type", "") == "recording") return InputKind::kRecording;
    return InputKind::kMatrixJson;
  }
  if (line.front() == '[') return InputKind::kMatrixJson;
  return InputKind::kLogcat;
}

void AddMatrixIssueJson(std::string_view text, std::string_view source, std::string_view logcat_tag,
                        const MatrixNaming& naming, MatrixFleetBuilder& builder) {
  IssueDecoder decoder(source, naming, builder);
  std::string safe;
  if (!IsValidUtf8(text)) {
    decoder.Warn("matrix_invalid_utf8", "bytes that are not UTF-8");
    safe = SafeText(text, 3 * text.size() + 16);  // each bad byte may become 3 (U+FFFD)
    text = safe;
  }
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) {
    j = json::parse(EscapeRawControls(text), nullptr, false);
    if (j.is_discarded()) {
      decoder.Warn("matrix_not_json", text);
      return;
    }
  }
  if (!j.is_object()) {
    decoder.Warn("matrix_not_an_issue", text);
    return;
  }
  decoder.Decode(j, logcat_tag);
}

void AddMatrixLogcatLine(std::string_view line, std::string_view source, const MatrixNaming& naming,
                         MatrixFleetBuilder& builder) {
  std::string_view tracer = MatrixLogTag(line);
  if (tracer.empty()) return;  // another component's line
  tracer = tracer.substr(0, tracer.find_first_of(": ("));
  if (StartupReportLine(line, source, naming, builder)) return;
  const size_t open = line.find('{');
  const size_t close = line.rfind('}');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) return;  // a log line
  std::string_view tag = IssueToStringTag(line);
  if (tag.empty()) tag = TagOfTracer(tracer);
  AddMatrixIssueJson(line.substr(open, close - open + 1), source, tag, naming, builder);
}

Result<MatrixInputRead> ReadMatrixInput(const std::string& path, const MatrixNaming& naming,
                                        MatrixFleetBuilder& builder) {
  const bool is_stdin = path == "-";
  UniqueFd fd;
  if (is_stdin) {
    fd = UniqueFd(dup(STDIN_FILENO));
    if (!fd) return SystemError("cannot read the standard input", errno, ExitCode::kUsage);
  } else {
    ASSIGN_OR_RETURN(OpenedFile file, OpenRegularFile(path, "", kMaxRecordingBytes, ExitCode::kUsage));
    fd = std::move(file.fd);
  }
  gzFile gz = gzdopen(fd.get(), "rb");
  if (!gz) return MakeError(fmt::format("cannot read {}: out of memory", path));
  fd.Release();  // gzclose closes it
  struct Closer {
    gzFile gz;
    ~Closer() { gzclose(gz); }
  } closer{gz};
  const std::string name = is_stdin ? "<stdin>" : path;
  builder.AddInput(name);

  InputKind kind = InputKind::kEmpty;
  uint64_t items = 0;
  JsonObjectSplitter splitter;
  std::string logcat_line;  // a logcat line across chunks
  bool logcat_line_too_long = false;
  uint64_t line_no = 1;
  std::string source;
  auto emit = [&](std::string_view text, uint64_t line) {
    ++items;
    source = fmt::format("{}:{}", name, line);
    AddMatrixIssueJson(text, source, {}, naming, builder);
  };
  auto problem = [&](std::string_view warning, uint64_t line) {
    builder.Warn(warning, warning == "matrix_issue_too_large"
                              ? fmt::format("{}:{}: an issue over {}", name, line, FormatBytes(kMaxMatrixIssueBytes))
                              : fmt::format("{}:{}: the issue ends before its closing brace", name, line));
  };
  auto end_logcat_line = [&] {
    if (!logcat_line_too_long && !MatrixLogTag(logcat_line).empty()) {
      ++items;
      source = fmt::format("{}:{}", name, line_no);
      AddMatrixLogcatLine(logcat_line, source, naming, builder);
    }
    logcat_line.clear();
    logcat_line_too_long = false;
  };
  auto process = [&](std::string_view data) {
    size_t pos = 0;
    while (pos < data.size()) {
      const size_t newline = data.find('\n', pos);
      const bool ends_line = newline != std::string_view::npos;
      const std::string_view piece = data.substr(pos, (ends_line ? newline : data.size()) - pos);
      pos = ends_line ? newline + 1 : data.size();
      if (kind == InputKind::kMatrixJson) {
        splitter.Feed(piece, line_no, ends_line, emit, problem);
      } else if (!logcat_line_too_long) {
        if (logcat_line.size() + piece.size() > kMaxLogcatLineBytes) {
          builder.Warn("matrix_logcat_unparsed",
                       fmt::format("{}:{}: a line over {}", name, line_no, FormatBytes(kMaxLogcatLineBytes)));
          logcat_line_too_long = true;
          logcat_line.clear();
          logcat_line.shrink_to_fit();
        } else {
          logcat_line.append(piece);
        }
      }
      if (ends_line) {
        if (kind == InputKind::kLogcat) end_logcat_line();
        ++line_no;
      }
    }
  };

  std::string chunk(1 << 16, '\0');
  std::string head;  // the input's start, held until its first non-blank line says its kind
  bool truncated = false;
  while (true) {
    const int n = gzread(gz, chunk.data(), static_cast<unsigned>(chunk.size()));
    if (n < 0) {
      int err = 0;
      const char* message = gzerror(gz, &err);
      if (err == Z_ERRNO) return SystemError(fmt::format("cannot read {}", name), errno, ExitCode::kUsage);
      return MakeError(fmt::format("cannot read {}: {}", name, message), ExitCode::kUsage);
    }
    if (n == 0) {
      // zlib says a cut-off stream only through gzerror (see LineReader::Fill).
      if (int err = Z_OK; (gzerror(gz, &err), err == Z_BUF_ERROR)) truncated = true;
      break;
    }
    const std::string_view data(chunk.data(), static_cast<size_t>(n));
    if (kind != InputKind::kEmpty) {
      process(data);
      continue;
    }
    head.append(data);
    const size_t start = head.find_first_not_of(" \t\r\n");
    if (start == std::string::npos) {  // blank so far: only its line count is kept
      line_no += static_cast<uint64_t>(std::count(head.begin(), head.end(), '\n'));
      head.clear();
      continue;
    }
    const size_t end = head.find('\n', start);
    if (end == std::string::npos && head.size() - start < (1 << 16)) continue;
    kind = DetectInputKind(std::string_view(head).substr(start, end == std::string::npos ? 1 << 16 : end - start));
    if (kind == InputKind::kRecording) return MatrixInputRead{kind, 0};
    process(head);
    head.clear();
    head.shrink_to_fit();
  }
  if (kind == InputKind::kEmpty) {
    kind = DetectInputKind(head);
    if (kind == InputKind::kRecording) return MatrixInputRead{kind, 0};
    if (kind != InputKind::kEmpty) process(head);
  }
  if (kind == InputKind::kLogcat && !logcat_line.empty()) end_logcat_line();
  if (splitter.inside_object())
    builder.Warn("matrix_truncated_input",
                 fmt::format("{}:{}: the input ends inside an issue", name, splitter.object_line()));
  else if (truncated)
    builder.Warn("matrix_truncated_input", fmt::format("{}: the compressed data ends early", name));
  return MatrixInputRead{kind, items};
}

}  // namespace looptrace::loader
