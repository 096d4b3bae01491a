#include "looptrace/util/safe_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <grp.h>
#include <linux/magic.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <vector>

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

// The pseudo file systems whose files are the kernel's state, by their statfs magic.
std::string_view KernelFileSystem(long type) {
  switch (static_cast<unsigned long>(type)) {
    case PROC_SUPER_MAGIC:
      return "proc";
    case SYSFS_MAGIC:
      return "sysfs";
    case DEBUGFS_MAGIC:
      return "debugfs";
    case TRACEFS_MAGIC:
      return "tracefs";
    case SECURITYFS_MAGIC:
      return "securityfs";
    case CGROUP_SUPER_MAGIC:
    case CGROUP2_SUPER_MAGIC:
      return "cgroup";
    case BPF_FS_MAGIC:
      return "bpf";
    case 0x62656570:  // configfs
      return "configfs";
    case EFIVARFS_MAGIC:
      return "efivarfs";
    case PSTOREFS_MAGIC:
      return "pstore";
    default:
      return {};
  }
}

// The path the kernel knows `fd` by (symbolic links resolved), "" if it cannot say.
std::string RealPath(int fd) {
  std::error_code ec;
  auto path = std::filesystem::read_symlink(fmt::format("/proc/self/fd/{}", fd), ec);
  return ec ? std::string() : path.string();
}

// The groups of `uid` from the user database (empty for a uid it does not know).
std::vector<gid_t> GroupsOf(uid_t uid) {
  std::vector<char> buffer(16384);
  passwd pw{};
  passwd* found = nullptr;
  if (getpwuid_r(uid, &pw, buffer.data(), buffer.size(), &found) != 0 || !found) return {};
  std::vector<gid_t> groups(64);
  int count = static_cast<int>(groups.size());
  if (getgrouplist(pw.pw_name, pw.pw_gid, groups.data(), &count) < 0) {
    groups.resize(static_cast<size_t>(count));
    if (getgrouplist(pw.pw_name, pw.pw_gid, groups.data(), &count) < 0) return {pw.pw_gid};
  }
  groups.resize(static_cast<size_t>(count));
  return groups;
}

// The permission bit `user_bit` (S_IRUSR or S_IXUSR) for uid with `groups` on `st`.
bool Permits(const struct stat& st, uid_t uid, const std::vector<gid_t>& groups, unsigned user_bit) {
  if (st.st_uid == uid) return st.st_mode & user_bit;
  if (std::find(groups.begin(), groups.end(), st.st_gid) != groups.end()) return st.st_mode & (user_bit >> 3);
  return st.st_mode & (user_bit >> 6);
}

}  // namespace

Result<void> CheckNotKernelFile(int fd, const std::string& path, std::string_view what, ExitCode code) {
  struct statfs fs {};
  if (fstatfs(fd, &fs) != 0) return SystemError(Prefix(path, what), errno, code);
  std::string_view kind = KernelFileSystem(fs.f_type);
  if (kind.empty()) {
    // /dev is a tmpfs (devtmpfs) like any other: tell it by where the file really is.
    const std::string real = RealPath(fd);
    for (std::string_view dir : {"/dev/", "/proc/", "/sys/"})
      if (real.starts_with(dir)) kind = dir.substr(1, dir.size() - 2);
  }
  if (kind.empty()) return {};
  return MakeError(fmt::format("{}: it is a kernel file ({}), not a file of its own", Prefix(path, what), kind), code,
                   "give a copy of the file in an ordinary directory");
}

bool ReadableBy(int fd, uid_t uid) {
  if (uid == 0) return true;
  struct stat st {};
  if (fstat(fd, &st) != 0) return false;
  const std::vector<gid_t> groups = GroupsOf(uid);
  if (!Permits(st, uid, groups, S_IRUSR)) return false;
  const std::string real = RealPath(fd);
  if (real.empty() || real.front() != '/') return false;
  for (std::filesystem::path dir = std::filesystem::path(real).parent_path();; dir = dir.parent_path()) {
    struct stat dst {};
    if (stat(dir.c_str(), &dst) != 0 || !Permits(dst, uid, groups, S_IXUSR)) return false;
    if (dir == dir.root_path()) return true;
  }
}

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

Result<std::string> ReadOpenedFile(OpenedFile& file, const std::string& path, std::string_view what, uint64_t max_bytes,
                                   ExitCode code, std::string hint, int* error_number) {
  std::string text;
  text.reserve(static_cast<size_t>(std::min(file.size, max_bytes)));
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

Result<std::string> ReadRegularFile(const std::string& path, std::string_view what, uint64_t max_bytes, ExitCode code,
                                    std::string hint, int* error_number) {
  ASSIGN_OR_RETURN(OpenedFile file, OpenRegularFile(path, what, max_bytes, code, hint, error_number));
  return ReadOpenedFile(file, path, what, max_bytes, code, std::move(hint), error_number);
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
