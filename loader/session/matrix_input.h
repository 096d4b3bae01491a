// Reading what the Matrix SDK writes on phones into report data: the JSON issues a
// PluginListener.onReportIssue gets (one a line, a JSON array, or pretty-printed), the
// logcat lines its tracers print, and looptrace's own JSON output (its Matrix records), told
// apart by content. Every problem is a counted, named warning of the report's data quality
// (MatrixFleetBuilder::Warn); the rest of the input is still read.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "loader/session/matrix_decoder.h"
#include "looptrace/report/matrix_issues.h"
#include "looptrace/symbols/proguard_mapping.h"
#include "looptrace/tracers/method_tree.h"
#include "looptrace/util/result.h"

namespace looptrace::loader {

// The largest single issue read (a `stack` of 30 lines and a thread stack are a few KB).
inline constexpr size_t kMaxMatrixIssueBytes = 4 << 20;

enum class InputKind {
  kRecording,   // looptrace's own event recording (record --save)
  kMatrixJson,  // JSON objects: Matrix issues, or looptrace's -f json output
  kLogcat,      // text lines, some of them Matrix's
  kEmpty,
};

// From the first non-blank line of an input.
InputKind DetectInputKind(std::string_view first_line);

// Reads one logcat line: a Matrix JSON issue in it, or StartupTracer's "[report]" line.
// Other lines are no issue (ignored).
void AddMatrixLogcatLine(std::string_view line, std::string_view source, const MatrixNaming& naming,
                         MatrixFleetBuilder& builder);

struct MatrixInputRead {
  InputKind kind = InputKind::kEmpty;
  uint64_t items = 0;  // JSON objects, or logcat lines of Matrix's
};

// Reads a whole input, a file (gzip or not) or "-" (stdin), in bounded memory: its kind is
// detected from its first line. Returns kRecording, having read nothing, for a looptrace
// recording (the caller replays it).
Result<MatrixInputRead> ReadMatrixInput(const std::string& path, const MatrixNaming& naming,
                                        MatrixFleetBuilder& builder);

// Splits a stream of JSON text into its top-level objects (one per line, inside an array, or
// spread over lines), string-aware; object texts over the limit are reported, not kept.
class JsonObjectSplitter {
 public:
  // Calls `emit(text, start_line)` per complete object, and `problem(warning, start_line)` for
  // an object over the limit ("matrix_issue_too_large") or one cut short: a line starting with
  // `{"` inside an object begins the next issue ("matrix_not_json"), so one cut-off issue
  // costs itself only. `ends_line`: the chunk is the end of a line (a raw line break inside
  // an object is kept).
  template <typename Emit, typename Problem>
  void Feed(std::string_view chunk, uint64_t line_no, bool ends_line, Emit&& emit, Problem&& problem);
  bool inside_object() const { return depth_ > 0; }
  uint64_t object_line() const { return start_line_; }

 private:
  std::string current_;
  int depth_ = 0;
  bool in_string_ = false;
  bool escaped_ = false;
  bool oversized_ = false;
  bool at_line_start_ = true;
  uint64_t start_line_ = 0;
};

template <typename Emit, typename Problem>
void JsonObjectSplitter::Feed(std::string_view chunk, uint64_t line_no, bool ends_line, Emit&& emit,
                              Problem&& problem) {
  auto too_large = [&](uint64_t line) { problem("matrix_issue_too_large", line); };
  if (at_line_start_ && depth_ > 0) {
    const size_t first = chunk.find_first_not_of(" \t");
    if (first != std::string_view::npos && chunk.substr(first).starts_with("{\"")) {
      problem("matrix_not_json", start_line_);
      depth_ = 0;
      in_string_ = escaped_ = oversized_ = false;
      current_.clear();
    }
  }
  at_line_start_ = ends_line;
  size_t begin = 0;  // of the object's part in this chunk
  for (size_t i = 0; i < chunk.size(); ++i) {
    const char c = chunk[i];
    if (depth_ == 0) {
      if (c == '{') {
        depth_ = 1;
        begin = i;
        start_line_ = line_no;
        current_.clear();
        oversized_ = false;
      }
      continue;  // whitespace, commas, '[' and ']' of an array, stray text between objects
    }
    if (in_string_) {
      if (escaped_)
        escaped_ = false;
      else if (c == '\\')
        escaped_ = true;
      else if (c == '"')
        in_string_ = false;
      continue;
    }
    if (c == '"') {
      in_string_ = true;
    } else if (c == '{' || c == '[') {
      ++depth_;
    } else if (c == '}' || c == ']') {
      if (--depth_ == 0) {
        if (!oversized_) {
          if (current_.size() + (i + 1 - begin) > kMaxMatrixIssueBytes) {
            too_large(start_line_);
          } else if (current_.empty()) {
            emit(chunk.substr(begin, i + 1 - begin), start_line_);
          } else {
            current_.append(chunk.substr(begin, i + 1 - begin));
            emit(std::string_view(current_), start_line_);
          }
        } else {
          too_large(start_line_);
        }
        current_.clear();
      }
    }
  }
  if (depth_ > 0 && !oversized_) {
    // The object goes on in the next chunk (a pretty-printed issue, or raw newlines in a
    // string as the write-ups print `stack`): kept with the line break.
    current_.append(chunk.substr(begin));
    if (ends_line) current_.push_back('\n');
    if (current_.size() > kMaxMatrixIssueBytes) {
      oversized_ = true;
      current_.clear();
      current_.shrink_to_fit();
    }
  }
}

}  // namespace looptrace::loader
