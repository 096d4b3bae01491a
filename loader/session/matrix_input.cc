#include "loader/session/matrix_input.h"

#include <fmt/format.h>
#include <unistd.h>
#include <zlib.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>

#include "looptrace/util/safe_file.h"
#include "looptrace/util/text_safety.h"

namespace looptrace::loader {
namespace {

using nlohmann::json;

constexpr size_t kMaxLogcatLineBytes = 1 << 20;

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
  AddMatrixIssueJson(j.dump(), source, "Trace_StartUp", naming, builder);
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
  std::string source;  // "NAME:LINE" of the issue read, its buffer reused
  auto set_source = [&](uint64_t line) {
    source.assign(name);
    source.push_back(':');
    fmt::format_to(std::back_inserter(source), "{}", line);
  };
  auto emit = [&](std::string_view text, uint64_t line) {
    ++items;
    set_source(line);
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
      set_source(line_no);
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
