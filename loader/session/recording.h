// Saved event streams (JSON lines, optionally .gz): written live by `record --save`,
// replayed by `report FILE` and by golden tests.
#pragma once

#include <memory>
#include <string>

#include "loader/session/output_file.h"
#include "looptrace/report/stats.h"
#include "looptrace/tracers/event.h"
#include "looptrace/util/result.h"

namespace looptrace::loader {

class RecordingWriter : public EventSink {
 public:
  static Result<std::unique_ptr<RecordingWriter>> Create(const std::string& path);
  void OnEvent(const Event& event) override;
  Result<void> Commit() { return file_->Commit(); }
  // A write failed (already warned about on stderr); Commit() returns the error.
  bool failed() const { return file_->failed(); }
  OutputFile& file() { return *file_; }

 private:
  explicit RecordingWriter(std::unique_ptr<OutputFile> file) : file_(std::move(file)) {}
  std::unique_ptr<OutputFile> file_;
};

// Feeds every event of the file to `sink`. Lines that do not parse are counted in
// `stats` (recording_bad_lines) and reported once on stderr with their line number;
// a file that is not a recording at all is an error.
Result<void> ReplayRecording(const std::string& path, EventSink& sink, Stats* stats);

}  // namespace looptrace::loader
