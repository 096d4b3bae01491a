// The fuzz input as a file: an anonymous memfd opened through /proc/self/fd/N, as a file of
// a target process would be. Shared by the harnesses whose entry point takes a path.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

class FuzzFile {
 public:
  FuzzFile(const uint8_t* data, size_t size) : fd_(memfd_create("fuzz", MFD_CLOEXEC)) {
    while (fd_ >= 0 && size > 0) {
      const ssize_t n = write(fd_, data, size);
      if (n <= 0) {
        close(fd_);
        fd_ = -1;
        break;
      }
      data += n;
      size -= static_cast<size_t>(n);
    }
    if (fd_ >= 0) path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ~FuzzFile() {
    if (fd_ >= 0) close(fd_);
  }
  FuzzFile(const FuzzFile&) = delete;
  FuzzFile& operator=(const FuzzFile&) = delete;

  bool ok() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  const std::string& path() const { return path_; }

 private:
  int fd_;
  std::string path_;
};
