#include "looptrace/util/safe_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace looptrace {
namespace {

std::string Prefix(const std::string& path, std::string_view what) {
  return what.empty() ? fmt::format("cannot read {}", path) : fmt::format("cannot read {} {}", what, path);
}

std::unexpected<Error> Failure(const std::string& path, std::string_view what, int err, ExitCode code, std::string hint,
                               int* error_number) {
  if (error_number) *error_number = err;
  if (err == EACCES || err == EPERM) code = ExitCode::kPermission;
  return SystemError(Prefix(path, what), err, code, std::move(hint));
}

std::unexpected<Error> TooBig(const std::string& path, std::string_view what, uint64_t size, uint64_t max_bytes,
                              ExitCode code, int* error_number) {
  if (error_number) *error_number = 0;
  return MakeError(
      fmt::format("{}: {} is over the {} limit for {}", Prefix(path, what), size ? FormatBytes(size) : "the content",
                  FormatBytes(max_bytes), what.empty() ? "this file" : what),
      code);
}

}  // namespace

int OpenForReading(const std::string& path) { return open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY); }

std::string_view FileTypeName(unsigned mode) {
  switch (mode & S_IFMT) {
    case S_IFREG:
      return "a regular file";
    case S_IFDIR:
      return "a directory";
    case S_IFCHR:
      return "a character device";
    case S_IFBLK:
      return "a block device";
    case S_IFIFO:
      return "a FIFO";
    case S_IFSOCK:
      return "a socket";
    case S_IFLNK:
      return "a symbolic link";
    default:
      return "not a regular file";
  }
}

Result<OpenedFile> OpenRegularFile(const std::string& path, std::string_view what, uint64_t max_bytes, ExitCode code,
                                   std::string hint, int* error_number) {
  OpenedFile file;
  file.fd = UniqueFd(OpenForReading(path));
  if (!file.fd.valid()) return Failure(path, what, errno, code, std::move(hint), error_number);
  struct stat st;
  if (fstat(file.fd.get(), &st) != 0) return Failure(path, what, errno, code, std::move(hint), error_number);
  if (S_ISDIR(st.st_mode)) return Failure(path, what, EISDIR, code, std::move(hint), error_number);
  if (!S_ISREG(st.st_mode)) {
    if (error_number) *error_number = 0;
    return MakeError(fmt::format("{}: it is {}, not a regular file", Prefix(path, what), FileTypeName(st.st_mode)),
                     code, std::move(hint));
  }
  file.size = static_cast<uint64_t>(st.st_size);
  if (file.size > max_bytes) return TooBig(path, what, file.size, max_bytes, code, error_number);
  // Reads of a regular file never block; clear O_NONBLOCK anyway so callers see plain semantics.
  fcntl(file.fd.get(), F_SETFL, fcntl(file.fd.get(), F_GETFL) & ~O_NONBLOCK);
  return file;
}

Result<std::string> ReadRegularFile(const std::string& path, std::string_view what, uint64_t max_bytes, ExitCode code,
                                    std::string hint, int* error_number) {
  ASSIGN_OR_RETURN(OpenedFile file, OpenRegularFile(path, what, max_bytes, code, hint, error_number));
  std::string text;
  text.reserve(static_cast<size_t>(file.size));
  char buffer[65536];
  while (true) {
    const ssize_t n = read(file.fd.get(), buffer, sizeof(buffer));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Failure(path, what, errno, code, std::move(hint), error_number);
    }
    if (n == 0) break;
    if (text.size() + static_cast<size_t>(n) > max_bytes) return TooBig(path, what, 0, max_bytes, code, error_number);
    text.append(buffer, static_cast<size_t>(n));
  }
  if (error_number) *error_number = 0;
  return text;
}

std::string FormatBytes(uint64_t bytes) {
  if (bytes >= (uint64_t{1} << 30))
    return bytes % (uint64_t{1} << 30) ? fmt::format("{:.1f} GiB", bytes / double(uint64_t{1} << 30))
                                       : fmt::format("{} GiB", bytes >> 30);
  if (bytes >= (uint64_t{1} << 20))
    return bytes % (uint64_t{1} << 20) ? fmt::format("{:.1f} MiB", bytes / double(uint64_t{1} << 20))
                                       : fmt::format("{} MiB", bytes >> 20);
  if (bytes >= 1024)
    return bytes % 1024 ? fmt::format("{:.1f} KiB", bytes / 1024.0) : fmt::format("{} KiB", bytes >> 10);
  return fmt::format("{} bytes", bytes);
}

}  // namespace looptrace
