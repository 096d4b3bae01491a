#include "looptrace/loader/output_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <iostream>
#include <streambuf>
#include <vector>

namespace looptrace::loader {
namespace {

// A streambuf over a file descriptor or a gzFile.
class FileStreambuf : public std::streambuf {
 public:
  FileStreambuf(int fd, bool compress) : fd_(fd), buffer_(1 << 16) {
    if (compress) gz_ = gzdopen(dup(fd), "wb6");
    setp(buffer_.data(), buffer_.data() + buffer_.size());
  }
  ~FileStreambuf() override {
    if (gz_) gzclose(gz_);
    if (fd_ >= 0) close(fd_);
  }
  bool failed() const { return failed_; }
  // Flushes everything and closes; returns false if any write failed.
  bool Finish() {
    FlushBuffer();
    if (gz_) {
      if (gzclose(gz_) != Z_OK) failed_ = true;
      gz_ = nullptr;
    }
    if (fd_ >= 0) {
      if (fsync(fd_) != 0 && errno != EINVAL) failed_ = true;
      if (close(fd_) != 0) failed_ = true;
      fd_ = -1;
    }
    return !failed_;
  }

 protected:
  int_type overflow(int_type ch) override {
    if (!FlushBuffer()) return traits_type::eof();
    if (ch != traits_type::eof()) {
      *pptr() = static_cast<char>(ch);
      pbump(1);
    }
    return ch;
  }
  int sync() override { return FlushBuffer() ? 0 : -1; }

 private:
  bool FlushBuffer() {
    size_t n = pptr() - pbase();
    const char* data = pbase();
    while (n > 0 && !failed_) {
      ssize_t written;
      if (gz_) {
        written = gzwrite(gz_, data, static_cast<unsigned>(n));
        if (written <= 0) written = -1;
      } else {
        written = write(fd_, data, n);
        if (written < 0 && errno == EINTR) continue;
      }
      if (written < 0) {
        failed_ = true;
        break;
      }
      data += written;
      n -= written;
    }
    setp(buffer_.data(), buffer_.data() + buffer_.size());
    return !failed_;
  }

  int fd_;
  gzFile gz_ = nullptr;
  std::vector<char> buffer_;
  bool failed_ = false;
};

}  // namespace

Result<std::unique_ptr<OutputFile>> OutputFile::Create(const std::string& path) {
  std::unique_ptr<OutputFile> out(new OutputFile());
  if (path.empty() || path == "-") {
    out->stream_ = &std::cout;
    return out;
  }
  out->path_ = path;
  out->temp_path_ = fmt::format("{}.tmp.{}", path, getpid());
  int fd = open(out->temp_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return SystemError(fmt::format("cannot write {}", path), errno, ExitCode::kOutput,
                       "check that the directory exists and is writable");
  bool compress = path.size() > 3 && path.ends_with(".gz");
  out->buffer_ = std::make_unique<FileStreambuf>(fd, compress);
  out->owned_stream_ = std::make_unique<std::ostream>(out->buffer_.get());
  out->stream_ = out->owned_stream_.get();
  return out;
}

Result<void> OutputFile::Commit() {
  if (is_stdout()) {
    std::cout.flush();
    if (!std::cout) return MakeError("cannot write the report to stdout", ExitCode::kOutput);
    return {};
  }
  stream_->flush();
  auto* file = static_cast<FileStreambuf*>(buffer_.get());
  if (!file->Finish() || !*stream_)
    return SystemError(fmt::format("cannot write {}", path_), errno ? errno : EIO, ExitCode::kOutput);
  if (rename(temp_path_.c_str(), path_.c_str()) != 0)
    return SystemError(fmt::format("cannot write {}", path_), errno, ExitCode::kOutput);
  committed_ = true;
  return {};
}

OutputFile::~OutputFile() {
  if (!is_stdout() && !committed_) unlink(temp_path_.c_str());
}

Result<std::unique_ptr<LineReader>> LineReader::Open(const std::string& path) {
  std::unique_ptr<LineReader> reader(new LineReader());
  reader->path_ = path;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return SystemError(fmt::format("cannot read {}", path), errno, ExitCode::kUsage);
  reader->gz_ = gzdopen(fd, "rb");
  if (!reader->gz_) {
    close(fd);
    return MakeError(fmt::format("cannot read {}: out of memory", path));
  }
  return reader;
}

LineReader::~LineReader() {
  if (gz_) gzclose(static_cast<gzFile>(gz_));
}

Result<bool> LineReader::Next(std::string* line) {
  line->clear();
  char chunk[4096];
  auto* gz = static_cast<gzFile>(gz_);
  while (true) {
    if (!gzgets(gz, chunk, sizeof(chunk))) {
      int err = 0;
      const char* message = gzerror(gz, &err);
      if (err != Z_OK && err != Z_BUF_ERROR)
        return MakeError(fmt::format("cannot read {}: {}", path_, message));
      return !line->empty();
    }
    line->append(chunk);
    if (!line->empty() && line->back() == '\n') {
      line->pop_back();
      return true;
    }
  }
}

}  // namespace looptrace::loader
