#include "loader/session/line_reader.h"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>

namespace looptrace::loader {

Result<std::unique_ptr<LineReader>> LineReader::Open(const std::string& path, uint64_t max_line_bytes,
                                                     uint64_t max_total_bytes) {
  std::unique_ptr<LineReader> reader(new LineReader());
  reader->path_ = path;
  reader->max_line_bytes_ = max_line_bytes;
  reader->max_total_bytes_ = max_total_bytes;
  ASSIGN_OR_RETURN(OpenedFile file, OpenRegularFile(path, "", max_total_bytes, ExitCode::kUsage));
  reader->gz_ = gzdopen(file.fd.get(), "rb");
  if (!reader->gz_) return MakeError(fmt::format("cannot read {}: out of memory", path));
  file.fd.Release();  // gzclose closes it
  return reader;
}

LineReader::~LineReader() {
  if (gz_) gzclose(static_cast<gzFile>(gz_));
}

Result<void> LineReader::Fill() {
  pending_.resize(1 << 16);
  const int n = gzread(static_cast<gzFile>(gz_), pending_.data(), static_cast<unsigned>(pending_.size()));
  if (n < 0) {
    int err = 0;
    const char* message = gzerror(static_cast<gzFile>(gz_), &err);
    if (err == Z_ERRNO) return SystemError(fmt::format("cannot read {}", path_), errno, ExitCode::kUsage);
    return MakeError(fmt::format("cannot read {}: {}", path_, message), ExitCode::kUsage);
  }
  pending_.resize(static_cast<size_t>(n));
  pending_pos_ = 0;
  eof_ = n == 0;
  // zlib reads what a cut-off stream holds and then says "unexpected end of file" as a
  // Z_BUF_ERROR, never as a failed read: asked here, or the loss would be silent.
  if (int err = Z_OK; eof_ && (gzerror(static_cast<gzFile>(gz_), &err), err == Z_BUF_ERROR)) truncated_ = true;
  total_bytes_ += static_cast<uint64_t>(n);
  if (total_bytes_ > max_total_bytes_)
    return MakeError(
        fmt::format("cannot read {}: it decompresses to more than the {} limit", path_, FormatBytes(max_total_bytes_)),
        ExitCode::kUsage);
  return {};
}

Result<bool> LineReader::Next(std::string* line) {
  line->clear();
  while (true) {
    const size_t newline = pending_.find('\n', pending_pos_);
    const size_t end = newline == std::string::npos ? pending_.size() : newline;
    const size_t size = line->size() + (end - pending_pos_);
    // Checked before it grows, and grown no further than the cap: a one-line gzip bomb costs
    // the cap, not the doubling of a string past it.
    if (size > max_line_bytes_)
      return MakeError(
          fmt::format("cannot read {}: a line is longer than the {} limit", path_, FormatBytes(max_line_bytes_)),
          ExitCode::kUsage);
    if (size > line->capacity())
      line->reserve(static_cast<size_t>(std::min<uint64_t>(max_line_bytes_, std::max(size, 2 * line->capacity()))));
    line->append(pending_, pending_pos_, end - pending_pos_);
    pending_pos_ = newline == std::string::npos ? pending_.size() : newline + 1;
    if (newline != std::string::npos) return true;
    if (eof_) return !line->empty() && !truncated_;
    RETURN_IF_ERROR(Fill());
  }
}

}  // namespace looptrace::loader
