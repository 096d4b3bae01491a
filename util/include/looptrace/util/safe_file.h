// Reading files looptrace is given (profiles, mapping files, recordings, BTF, ELF and
// debug files): never blocks on a FIFO or device, never reads without bound, and fails
// with one message naming the file and the cause.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "looptrace/util/result.h"
#include "looptrace/util/unique_fd.h"

namespace looptrace {

// Size caps of input files (docs/security.md).
inline constexpr uint64_t kMiB = uint64_t{1} << 20;
inline constexpr uint64_t kMaxProfileBytes = 1 * kMiB;            // --profile FILE
inline constexpr uint64_t kMaxMappingBytes = 1024 * kMiB;         // methodMapping.txt, ProGuard
inline constexpr uint64_t kMaxBtfBytes = 512 * kMiB;              // --btf FILE
inline constexpr uint64_t kMaxElfBytes = 64 * 1024 * kMiB;        // binaries and debug files
inline constexpr uint64_t kMaxProcFileBytes = 256 * kMiB;         // /proc/PID/maps and friends
inline constexpr uint64_t kMaxRecordingLineBytes = 512 * kMiB;    // one decompressed line
inline constexpr uint64_t kMaxRecordingBytes = 64 * 1024 * kMiB;  // a whole decompressed recording

// open(2) for reading that cannot block or take a controlling terminal:
// O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY. Returns -1 with errno set.
int OpenForReading(const std::string& path);

// "a FIFO", "a directory", "a character device", ... for an st_mode.
std::string_view FileTypeName(unsigned mode);

struct OpenedFile {
  UniqueFd fd;
  uint64_t size = 0;  // st_size at open (0 for most /proc files)
};

// Opens `path` with OpenForReading and checks that it is a regular file of at most
// `max_bytes`. Errors read "cannot read WHAT PATH: CAUSE" (WHAT may be empty) with
// `code`, or kPermission for EACCES/EPERM; `*error_number` (optional) gets the errno of
// the failure, or 0 when the file is of the wrong type or too big.
Result<OpenedFile> OpenRegularFile(const std::string& path, std::string_view what, uint64_t max_bytes,
                                   ExitCode code = ExitCode::kRuntime, std::string hint = {},
                                   int* error_number = nullptr);

// The rest of an opened file, at most `max_bytes` (errors as ReadRegularFile's).
Result<std::string> ReadOpenedFile(OpenedFile& file, const std::string& path, std::string_view what, uint64_t max_bytes,
                                   ExitCode code = ExitCode::kRuntime, std::string hint = {},
                                   int* error_number = nullptr);

// OpenRegularFile, then the whole content; a file that grows past `max_bytes` while it is
// read is an error too. Works for /proc files (size 0 in stat).
Result<std::string> ReadRegularFile(const std::string& path, std::string_view what, uint64_t max_bytes,
                                    ExitCode code = ExitCode::kRuntime, std::string hint = {},
                                    int* error_number = nullptr);

// Refuses a file of the kernel's pseudo file systems (proc, sysfs, debugfs, tracefs,
// securityfs, cgroup, bpf, configfs, efivarfs, pstore) or one under /dev, /proc or /sys:
// their content is the system's state (environments, keys, tokens), never a file someone
// wrote for looptrace. `fd` is the opened file, `path` how it was named. Error: "cannot
// read WHAT PATH: it is a kernel file (proc), not a file of its own" with `code`.
Result<void> CheckNotKernelFile(int fd, const std::string& path, std::string_view what, ExitCode code);

// Whether user `uid` could read the file behind `fd` by its mode bits: read permission on
// the file and search permission on every directory of its real path, as owner, as a
// member of the file's group (the user's groups from the user database) or as anyone.
// uid 0 reads everything. ACLs are not consulted: a file only an ACL opens counts as
// unreadable.
bool ReadableBy(int fd, uid_t uid);

// "512 MiB", "1.5 GiB", "300 bytes": for messages about caps.
std::string FormatBytes(uint64_t bytes);

}  // namespace looptrace
