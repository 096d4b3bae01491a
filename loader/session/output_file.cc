#include "loader/session/output_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <streambuf>
#include <vector>

namespace looptrace::loader {
namespace {

// --- Named temporaries (file systems without O_TMPFILE) are removed on SIGINT/SIGTERM/SIGHUP
// when those are not blocked (a session blocks them and ends through the normal path).
constexpr int kTempSlots = 8;
struct TempSlot {
  std::atomic<bool> used{false};
  std::atomic<int> dir_fd{-1};
  pid_t owner = 0;
  char name[NAME_MAX + 1] = {};
};
TempSlot g_temp_slots[kTempSlots];

void RemoveTemporariesAndDie(int sig) {
  const pid_t self = getpid();
  for (TempSlot& slot : g_temp_slots) {
    if (slot.owner != self) continue;  // a forked child must not remove its parent's files
    const int dir_fd = slot.dir_fd.exchange(-1);
    if (dir_fd >= 0) unlinkat(dir_fd, slot.name, 0);
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

void InstallTemporaryCleanup() {
  static std::atomic<bool> installed{false};
  if (installed.exchange(true)) return;
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction old {};
    if (sigaction(sig, nullptr, &old) != 0 || old.sa_handler != SIG_DFL) continue;  // keep SIG_IGN
    struct sigaction action {};
    action.sa_handler = RemoveTemporariesAndDie;
    sigemptyset(&action.sa_mask);
    sigaction(sig, &action, nullptr);
  }
}

int RegisterTemporary(int dir_fd, const std::string& name) {
  if (name.size() > NAME_MAX) return -1;
  InstallTemporaryCleanup();
  for (int i = 0; i < kTempSlots; ++i) {
    TempSlot& slot = g_temp_slots[i];
    if (slot.used.exchange(true)) continue;
    std::memcpy(slot.name, name.c_str(), name.size() + 1);
    slot.owner = getpid();
    slot.dir_fd.store(dir_fd);
    return i;
  }
  return -1;
}

void UnregisterTemporary(int slot) {
  if (slot < 0) return;
  g_temp_slots[slot].dir_fd.store(-1);
  g_temp_slots[slot].used.store(false);
}

// ".NAME.looptrace-" + 12 random hex digits: unpredictable, never reused.
std::string RandomTempName(const std::string& name) {
  uint8_t random[6];
  if (getrandom(random, sizeof(random), 0) != static_cast<ssize_t>(sizeof(random))) {
    // No entropy source: still unique enough with O_EXCL retries.
    uint64_t fallback = static_cast<uint64_t>(getpid()) * 0x9E3779B97F4A7C15ull ^ reinterpret_cast<uintptr_t>(&name);
    std::memcpy(random, &fallback, sizeof(random));
  }
  std::string out = "." + name.substr(0, 200) + ".looptrace-";
  for (uint8_t b : random) out += fmt::format("{:02x}", b);
  return out;
}

// "/dev/stdout" -> 1, "/dev/stderr" -> 2, "/dev/fd/N" and "/proc/self/fd/N" -> N.
std::optional<int> DescriptorOfPath(const std::string& path) {
  if (path == "/dev/stdout") return 1;
  if (path == "/dev/stderr") return 2;
  std::string_view digits;
  for (std::string_view prefix : {"/dev/fd/", "/proc/self/fd/"})
    if (path.starts_with(prefix)) digits = std::string_view(path).substr(prefix.size());
  int fd = -1;
  if (digits.empty() ||
      std::from_chars(digits.data(), digits.data() + digits.size(), fd).ptr != digits.data() + digits.size())
    return std::nullopt;
  return fd;
}

// The kernel's protected_symlinks rule, also for group-writable directories: a link (or a
// FIFO) is used if its owner is root or us, or owns its directory and nobody else may write
// there. Others could have planted it.
bool TrustedEntry(const struct stat& link, const struct stat& dir) {
  if (link.st_uid == 0 || link.st_uid == geteuid()) return true;
  const bool others_may_write = (dir.st_mode & (S_IWGRP | S_IWOTH)) != 0;
  return !others_may_write && link.st_uid == dir.st_uid;
}

std::string WriteHint(int err) {
  switch (err) {
    case ENOSPC:
      return "the file system is full: free space or write elsewhere";
    case EDQUOT:
      return "the disk quota is exhausted";
    case EPIPE:
      return "the reading end of the pipe was closed";
    case EROFS:
      return "the file system is read-only: write elsewhere";
    case EACCES:
    case EPERM:
      return "check that the directory exists and is writable";
    default:
      return "";
  }
}

}  // namespace

// A streambuf over a descriptor: buffered, optionally gzip-compressed with zlib's deflate
// (so every failed write(2) is seen with its own errno), reporting the first failure.
class OutputFile::Buffer : public std::streambuf {
 public:
  Buffer(int fd, bool compress, std::function<void(int)> on_error)
      : fd_(fd), buffer_(1 << 16), on_error_(std::move(on_error)) {
    if (compress) {
      gz_ = deflateInit2(&z_, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK;
      if (!gz_)
        Fail(ENOMEM);
      else
        deflate_out_.resize(1 << 16);
    }
    setp(buffer_.data(), buffer_.data() + buffer_.size());
  }
  ~Buffer() override {
    if (gz_) deflateEnd(&z_);
  }

  // What is buffered, then `text` in one go (compressed or not).
  void WriteWhole(std::string_view text) {
    FlushBuffer();
    if (failed_) return;
    if (gz_)
      Deflate(text.data(), text.size(), Z_NO_FLUSH);
    else
      WriteAll(text.data(), text.size());
  }

  // Flushes everything (and ends the gzip stream). Returns false if any write failed.
  bool Finish() {
    FlushBuffer();
    if (gz_ && !failed_) Deflate(nullptr, 0, Z_FINISH);
    return !failed_;
  }
  bool failed() const { return failed_; }

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
  void Fail(int err) {
    if (failed_) return;
    failed_ = true;
    on_error_(err ? err : EIO);
  }

  bool FlushBuffer() {
    const size_t n = pptr() - pbase();
    if (n > 0 && !failed_) {
      if (gz_)
        Deflate(pbase(), n, Z_NO_FLUSH);
      else
        WriteAll(pbase(), n);
    }
    setp(buffer_.data(), buffer_.data() + buffer_.size());
    return !failed_;
  }

  void Deflate(const char* data, size_t n, int flush) {
    z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data));
    z_.avail_in = static_cast<uInt>(n);
    while (!failed_) {
      z_.next_out = reinterpret_cast<Bytef*>(deflate_out_.data());
      z_.avail_out = static_cast<uInt>(deflate_out_.size());
      const int ret = deflate(&z_, flush);
      if (ret == Z_STREAM_ERROR) {
        Fail(EIO);
        return;
      }
      const size_t produced = deflate_out_.size() - z_.avail_out;
      if (produced) WriteAll(deflate_out_.data(), produced);
      if (flush == Z_FINISH ? ret == Z_STREAM_END : (z_.avail_out != 0 && z_.avail_in == 0)) return;
    }
  }

  void WriteAll(const char* data, size_t n) {
    while (n > 0 && !failed_) {
      const ssize_t written = write(fd_, data, n);
      if (written < 0) {
        const int err = errno;  // read before any other call can change it
        if (err == EINTR) continue;
        if (err == EAGAIN) {  // an inherited non-blocking descriptor (stdout): wait for room
          pollfd p{fd_, POLLOUT, 0};
          poll(&p, 1, -1);
          continue;
        }
        Fail(err);
        return;
      }
      if (written == 0) {
        Fail(ENOSPC);
        return;
      }
      data += written;
      n -= static_cast<size_t>(written);
    }
  }

  int fd_;
  std::vector<char> buffer_;
  std::function<void(int)> on_error_;
  bool gz_ = false;
  z_stream z_{};
  std::vector<char> deflate_out_;
  bool failed_ = false;
};

void OutputFile::Start(UniqueFd fd, bool owned, bool compress) {
  const int raw = owned ? fd.get() : STDOUT_FILENO;
  if (owned) fd_ = std::move(fd);
  buffer_ = std::make_unique<Buffer>(raw, compress, [this](int err) { Fail(err); });
  owned_stream_ = std::make_unique<std::ostream>(buffer_.get());
  stream_ = owned_stream_.get();
}

void OutputFile::Fail(int err) {
  if (error_) return;
  error_ = SystemError(fmt::format("cannot write {}", path_.empty() ? "the report to stdout" : path_), err,
                       ExitCode::kOutput, WriteHint(err))
               .error();
  if (on_failure_) on_failure_(*error_);
}

Result<std::unique_ptr<OutputFile>> OutputFile::Create(const std::string& path, Temporary temporary) {
  const bool compress = path.size() > 3 && path.ends_with(".gz");
  if (path.empty() || path == "-") {
    std::unique_ptr<OutputFile> out(new OutputFile());
    out->kind_ = Kind::kStdout;
    std::cout.flush();  // anything written through std::cout so far comes first
    out->Start(UniqueFd(), /*owned=*/false, /*compress=*/false);
    return out;
  }
  if (auto fd = DescriptorOfPath(path)) {
    const int flags = fcntl(*fd, F_GETFL);
    if (flags < 0) return SystemError(fmt::format("cannot write {}", path), errno, ExitCode::kOutput);
    if ((flags & O_ACCMODE) == O_RDONLY)
      return MakeError(fmt::format("cannot write {}: descriptor {} is open for reading only", path, *fd),
                       ExitCode::kOutput);
    UniqueFd copy(fcntl(*fd, F_DUPFD_CLOEXEC, 3));
    if (!copy.valid()) return SystemError(fmt::format("cannot write {}", path), errno, ExitCode::kOutput);
    if (*fd == STDOUT_FILENO) std::cout.flush();
    std::unique_ptr<OutputFile> out(new OutputFile());
    out->path_ = path;
    out->kind_ = Kind::kDirect;
    out->Start(std::move(copy), /*owned=*/true, compress);
    return out;
  }
  return Open(path, path, temporary, 0);
}

Result<std::unique_ptr<OutputFile>> OutputFile::Open(const std::string& shown_path, const std::string& path,
                                                     Temporary temporary, int depth) {
  const std::string what = fmt::format("cannot write {}", shown_path);
  const bool compress = shown_path.size() > 3 && shown_path.ends_with(".gz");
  const size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  if (name.empty() || name == "." || name == "..") return SystemError(what, EISDIR, ExitCode::kOutput);

  UniqueFd dir_fd(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir_fd.valid())
    return SystemError(fmt::format("{}: directory {}", what, dir), errno, ExitCode::kOutput,
                       "check that the directory exists and is writable");
  struct stat st;
  bool exists = true;
  if (fstatat(dir_fd.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno != ENOENT) return SystemError(what, errno, ExitCode::kOutput);
    exists = false;
  }

  std::unique_ptr<OutputFile> out(new OutputFile());
  out->path_ = shown_path;
  struct stat dir_st;
  if (fstat(dir_fd.get(), &dir_st) != 0) return SystemError(what, errno, ExitCode::kOutput);
  if (exists && S_ISFIFO(st.st_mode) && !TrustedEntry(st, dir_st))
    return MakeError(fmt::format("{}: it is a FIFO owned by uid {} in {}, a directory others may write to; "
                                 "refusing to write to it",
                                 what, st.st_uid, dir),
                     ExitCode::kOutput, "remove it, or write elsewhere");
  if (exists && S_ISLNK(st.st_mode)) {
    if (!TrustedEntry(st, dir_st))
      return MakeError(fmt::format("{}: it is a symbolic link owned by uid {} in {}, a directory others may "
                                   "write to; refusing to follow it",
                                   what, st.st_uid, dir),
                       ExitCode::kOutput, "remove the link, or give the path it should point to");
    if (depth > 0) return SystemError(what, ELOOP, ExitCode::kOutput);  // changed while resolving
    char* resolved = realpath(path.c_str(), nullptr);
    if (!resolved)
      return SystemError(fmt::format("{}: cannot resolve the symbolic link", what), errno, ExitCode::kOutput,
                         errno == ENOENT ? "the link points to a missing file or directory" : "");
    std::string target(resolved);
    free(resolved);
    return Open(shown_path, target, temporary, depth + 1);
  }
  if (exists && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))) {
    UniqueFd fd(openat(dir_fd.get(), name.c_str(), O_WRONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC | O_NONBLOCK));
    if (!fd.valid()) {
      const int err = errno;
      if (err == ENXIO && S_ISFIFO(st.st_mode))
        return MakeError(fmt::format("{}: the FIFO has no reader", what), ExitCode::kOutput,
                         "start the reading end first");
      return SystemError(what, err, ExitCode::kOutput);
    }
    struct stat opened;
    if (fstat(fd.get(), &opened) != 0) return SystemError(what, errno, ExitCode::kOutput);
    if (!S_ISCHR(opened.st_mode) && !S_ISFIFO(opened.st_mode))
      return MakeError(fmt::format("{}: it changed while being opened", what), ExitCode::kOutput);
    fcntl(fd.get(), F_SETFL, fcntl(fd.get(), F_GETFL) & ~O_NONBLOCK);
    out->kind_ = Kind::kDirect;
    out->Start(std::move(fd), /*owned=*/true, compress);
    return out;
  }
  if (exists && !S_ISREG(st.st_mode)) {
    if (S_ISDIR(st.st_mode)) return SystemError(what, EISDIR, ExitCode::kOutput);
    return MakeError(fmt::format("{}: it is {}; looptrace only replaces regular files and writes to character "
                                 "devices and FIFOs",
                                 what, FileTypeName(st.st_mode)),
                     ExitCode::kOutput);
  }

  // A regular file or a new name: an anonymous temporary in the same directory.
  out->kind_ = Kind::kReplace;
  out->name_ = name;
  UniqueFd fd;
  if (temporary == Temporary::kNamed)
    errno = EOPNOTSUPP;  // as on a file system without O_TMPFILE
  else
    fd = UniqueFd(openat(dir_fd.get(), ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644));
  if (!fd.valid() && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
    for (int attempt = 0; attempt < 100 && !fd.valid(); ++attempt) {
      std::string temp = RandomTempName(name);
      fd = UniqueFd(openat(dir_fd.get(), temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
      if (fd.valid()) {
        out->temp_name_ = temp;
        out->temp_slot_ = RegisterTemporary(dir_fd.get(), temp);
      } else if (errno != EEXIST) {
        break;
      }
    }
  }
  if (!fd.valid()) {
    const int err = errno;
    return SystemError(what, err, ExitCode::kOutput, WriteHint(err));
  }
  out->dir_fd_ = std::move(dir_fd);
  out->Start(std::move(fd), /*owned=*/true, compress);
  return out;
}

Result<void> OutputFile::Publish() {
  const std::string what = fmt::format("cannot write {}", path_);
  if (fsync(fd_.get()) != 0 && errno != EINVAL) {
    const int err = errno;
    return SystemError(what, err, ExitCode::kOutput, WriteHint(err));
  }
  std::string linked = temp_name_;
  if (linked.empty()) {
    // Give the O_TMPFILE file a name no one can predict or have planted, then rename it.
    for (int attempt = 0; attempt < 100 && linked.empty(); ++attempt) {
      std::string candidate = RandomTempName(name_);
      int ok = linkat(fd_.get(), "", dir_fd_.get(), candidate.c_str(), AT_EMPTY_PATH);
      if (ok != 0 && errno == ENOENT) {  // AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH
        const std::string self = fmt::format("/proc/self/fd/{}", fd_.get());
        ok = linkat(AT_FDCWD, self.c_str(), dir_fd_.get(), candidate.c_str(), AT_SYMLINK_FOLLOW);
      }
      if (ok == 0) {
        linked = candidate;
      } else if (const int err = errno; err != EEXIST) {
        return SystemError(what, err, ExitCode::kOutput, WriteHint(err));
      }
    }
    if (linked.empty()) return SystemError(what, EEXIST, ExitCode::kOutput);
  }
  if (renameat(dir_fd_.get(), linked.c_str(), dir_fd_.get(), name_.c_str()) != 0) {
    const int err = errno;
    unlinkat(dir_fd_.get(), linked.c_str(), 0);
    return SystemError(what, err, ExitCode::kOutput, WriteHint(err));
  }
  UnregisterTemporary(temp_slot_);
  temp_slot_ = -1;
  temp_name_.clear();
  (void)fsync(dir_fd_.get());  // the rename itself survives a crash
  return {};
}

void OutputFile::WriteWhole(std::string_view text) {
  stream_->flush();
  buffer_->WriteWhole(text);
}

Result<void> OutputFile::Commit() {
  if (committed_) return {};
  stream_->flush();
  buffer_->Finish();
  if (error_) return std::unexpected(*error_);
  if (kind_ == Kind::kReplace) {
    if (auto ok = Publish(); !ok) {
      error_ = ok.error();
      return ok;
    }
  }
  if (fd_.valid() && close(fd_.Release()) != 0 && errno != EINTR && kind_ == Kind::kDirect) {
    Fail(errno);  // some devices and network file systems report a lost write only here
    return std::unexpected(*error_);
  }
  committed_ = true;
  return {};
}

OutputFile::~OutputFile() {
  owned_stream_.reset();
  buffer_.reset();
  if (!temp_name_.empty() && dir_fd_.valid()) unlinkat(dir_fd_.get(), temp_name_.c_str(), 0);
  UnregisterTemporary(temp_slot_);
}

}  // namespace looptrace::loader
