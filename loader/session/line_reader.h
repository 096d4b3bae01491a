// Reading back what an OutputFile wrote (recordings): text line by line, gzip or not.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "looptrace/util/result.h"
#include "looptrace/util/safe_file.h"

namespace looptrace::loader {

// Reads a text file line by line, transparently gunzipping ".gz" (or any gzip) input.
// The file must be a regular file (never blocks); a decompressed line longer than
// kMaxRecordingLineBytes or a file decompressing to more than kMaxRecordingBytes is an error;
// gzip data that ends before its trailer is told apart (truncated()).
class LineReader {
 public:
  static Result<std::unique_ptr<LineReader>> Open(const std::string& path,
                                                  uint64_t max_line_bytes = kMaxRecordingLineBytes,
                                                  uint64_t max_total_bytes = kMaxRecordingBytes);
  ~LineReader();
  // False at end of file; an I/O error is returned as an error. A line never takes more
  // than `max_line_bytes` of memory, however it grows.
  Result<bool> Next(std::string* line);
  // At the end: whether the gzip data stopped short of its end (a copy cut off, or a writer
  // killed). The incomplete last line is then not returned.
  bool truncated() const { return truncated_; }
  // Decompressed bytes read so far.
  uint64_t bytes_read() const { return total_bytes_; }

 private:
  LineReader() = default;
  Result<void> Fill();
  void* gz_ = nullptr;
  std::string path_;
  uint64_t max_line_bytes_ = 0;
  uint64_t max_total_bytes_ = 0;
  uint64_t total_bytes_ = 0;
  std::string pending_;  // decompressed bytes not yet returned
  size_t pending_pos_ = 0;
  bool eof_ = false;
  bool truncated_ = false;
};

}  // namespace looptrace::loader
