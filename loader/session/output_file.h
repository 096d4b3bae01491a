// Report and recording files (docs/security.md, output files). looptrace runs as root and
// may be asked to write into a directory others can write to, so -o/--save never open a
// name someone else could have planted:
//   - "-" (or empty) is stdout; "/dev/stdout", "/dev/stderr", "/dev/fd/N" and
//     "/proc/self/fd/N" write to that descriptor directly.
//   - An existing character device or FIFO (/dev/null, a terminal, a named pipe) is written
//     directly: opened without O_CREAT or O_TRUNC and with O_NOFOLLOW; a FIFO must already
//     have a reader and be trusted like a symbolic link (below). /dev/full fails with
//     ENOSPC like any full disk.
//   - A new name or an existing regular file is replaced atomically: the data goes to an
//     anonymous O_TMPFILE file in the target directory, which Commit() links under an
//     unpredictable name (O_EXCL semantics) and rename(2)s over PATH. An error, a signal or
//     even SIGKILL before Commit() leaves nothing behind. File systems without O_TMPFILE get a
//     random ".NAME.looptrace-XXXXXXXXXXXX" file created with O_CREAT|O_EXCL|O_NOFOLLOW,
//     removed on every error path and on SIGINT/SIGTERM/SIGHUP.
//   - An existing symbolic link at PATH is followed only when it is trusted: owned by root
//     or by the user running looptrace, or by the owner of its directory when nobody else
//     may write to that directory (the kernel's protected_symlinks rule, applied to group-
//     and world-writable directories alike). Otherwise looptrace refuses (exit 7).
//   - Anything else (a directory, a block device, a socket) is refused.
// A name ending in ".gz" is gzip-compressed. Reading such files back: line_reader.h.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

#include "looptrace/util/result.h"
#include "looptrace/util/safe_file.h"

namespace looptrace::loader {

class OutputFile {
 public:
  enum class Kind {
    kStdout,   // "-": standard output
    kDirect,   // a device, FIFO or open descriptor, written in place
    kReplace,  // a regular file, replaced atomically on Commit()
  };

  // Where a replaced file's data waits until Commit(): kAnonymous, an O_TMPFILE file, or a
  // named one on file systems without O_TMPFILE; kNamed, always a named one.
  enum class Temporary { kAnonymous, kNamed };

  static Result<std::unique_ptr<OutputFile>> Create(const std::string& path,
                                                    Temporary temporary = Temporary::kAnonymous);
  ~OutputFile();

  std::ostream& stream() { return *stream_; }
  const std::string& path() const { return path_; }
  bool is_stdout() const { return path_.empty(); }
  Kind kind() const { return kind_; }

  // A write failed: the stream discards everything from then on, and Commit() returns
  // error() (which names the file and the errno of the failed call).
  bool failed() const { return error_.has_value(); }
  const std::optional<Error>& error() const { return error_; }
  // Called once, from inside the failing write, so a caller can warn during a session and
  // carry on with its other outputs.
  void set_on_failure(std::function<void(const Error&)> callback) { on_failure_ = std::move(callback); }

  // Writes `text` after what the stream holds with as few write(2) calls as the descriptor
  // takes (one, on a terminal, a file or a pipe with room): for a report that shares stdout
  // with another process's output and must not have its lines fall inside.
  void WriteWhole(std::string_view text);

  // Flushes (and for kReplace syncs, links and renames); the first error wins.
  Result<void> Commit();

 private:
  class Buffer;
  OutputFile() = default;
  static Result<std::unique_ptr<OutputFile>> Open(const std::string& shown_path, const std::string& path,
                                                  Temporary temporary, int depth);
  void Start(UniqueFd fd, bool owned, bool compress);
  void Fail(int err);
  Result<void> Publish();

  std::string path_;  // as given (empty for stdout)
  Kind kind_ = Kind::kStdout;
  UniqueFd fd_;            // owned descriptor (direct or the temporary)
  UniqueFd dir_fd_;        // kReplace: the target directory
  std::string name_;       // kReplace: final name in dir_fd_
  std::string temp_name_;  // kReplace without O_TMPFILE: the named temporary
  int temp_slot_ = -1;     // its slot in the signal cleanup table
  std::unique_ptr<Buffer> buffer_;
  std::unique_ptr<std::ostream> owned_stream_;
  std::ostream* stream_ = nullptr;
  std::optional<Error> error_;
  std::function<void(const Error&)> on_failure_;
  bool committed_ = false;
};

}  // namespace looptrace::loader
