// Report and recording files: written to a temporary file next to the target and
// renamed on Commit(), so an error or a kill never leaves a half-written file.
// A name ending in ".gz" is compressed with zlib. "-" (or empty) is stdout.
#pragma once

#include <memory>
#include <ostream>
#include <string>

#include "looptrace/util/result.h"

namespace looptrace::loader {

class OutputFile {
 public:
  static Result<std::unique_ptr<OutputFile>> Create(const std::string& path);
  ~OutputFile();

  std::ostream& stream() { return *stream_; }
  const std::string& path() const { return path_; }
  bool is_stdout() const { return path_.empty(); }
  Result<void> Commit();

 private:
  OutputFile() = default;
  std::string path_;
  std::string temp_path_;
  std::unique_ptr<std::streambuf> buffer_;
  std::unique_ptr<std::ostream> owned_stream_;
  std::ostream* stream_ = nullptr;
  bool committed_ = false;
};

// Reads a text file line by line, transparently gunzipping ".gz" (or any gzip) input.
class LineReader {
 public:
  static Result<std::unique_ptr<LineReader>> Open(const std::string& path);
  ~LineReader();
  // False at end of file; an I/O error is returned as an error.
  Result<bool> Next(std::string* line);

 private:
  LineReader() = default;
  void* gz_ = nullptr;
  std::string path_;
};

}  // namespace looptrace::loader
