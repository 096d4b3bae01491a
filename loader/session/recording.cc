#include "loader/session/recording.h"

#include <fmt/format.h>

#include "loader/session/line_reader.h"
#include "looptrace/tracers/event_json.h"
#include "looptrace/tracers/event_sanitize.h"
#include "looptrace/util/log.h"

namespace looptrace::loader {

Result<std::unique_ptr<RecordingWriter>> RecordingWriter::Create(const std::string& path) {
  ASSIGN_OR_RETURN(auto file, OutputFile::Create(path));
  // Said once, at the failed write, while the session still runs (the report is a separate file).
  file->set_on_failure([](const Error& error) {
    log::Warning("{}; the recording stops here (the report is still written)", error.message);
    log::Hint(error.hint);
  });
  file->stream() << RecordingHeaderLine() << '\n';
  return std::unique_ptr<RecordingWriter>(new RecordingWriter(std::move(file)));
}

void RecordingWriter::OnEvent(const Event& event) {
  if (file_->failed()) return;  // nothing more can be saved: do not format it
  file_->stream() << EventToJsonLine(event) << '\n';
}

Result<void> ReplayRecording(const std::string& path, EventSink& raw_sink, Stats* stats) {
  ASSIGN_OR_RETURN(auto reader, LineReader::Open(path));
  SanitizingSink sink(raw_sink);  // a recording is a file like any other: names are capped
  std::string line;
  size_t line_no = 0;
  bool saw_header = false;
  uint64_t bad_lines = 0;
  while (true) {
    ASSIGN_OR_RETURN(bool more, reader->Next(&line));
    if (!more) break;
    ++line_no;
    if (line.empty()) continue;
    auto parsed = EventFromJsonLine(line);
    if (!parsed) {
      if (!saw_header)
        return MakeError(fmt::format("{}:{}: not a looptrace recording: {}", path, line_no, parsed.error().message),
                         ExitCode::kUsage, "record one with: looptrace record -p PID --save FILE");
      if (bad_lines++ == 0) log::Warning("{}:{}: skipping bad line: {}", path, line_no, parsed.error().message);
      stats->Add(StatId::recording_bad_lines);
      continue;
    }
    if (!*parsed) {
      saw_header = true;
      continue;
    }
    if (!saw_header)
      return MakeError(fmt::format("{}:{}: not a looptrace recording (no header line)", path, line_no),
                       ExitCode::kUsage);
    sink.OnEvent(**parsed);
  }
  if (reader->truncated()) {
    // A cut-off .gz (a copy stopped short, a writer killed): said with where, counted.
    if (!saw_header)
      return MakeError(fmt::format("{}: truncated before its first complete line", path), ExitCode::kUsage,
                       "the file was cut short: copy it again");
    log::Warning(
        "{}: truncated after line {} ({} bytes decompressed): the compressed data ends early; the "
        "report covers the events up to there",
        path, line_no, reader->bytes_read());
    stats->Add(StatId::recording_truncated);
  }
  if (!saw_header) return MakeError(fmt::format("{}: empty recording", path), ExitCode::kUsage);
  if (bad_lines > 1) log::Warning("{}: {} bad lines skipped in all", path, bad_lines);
  return {};
}

}  // namespace looptrace::loader
