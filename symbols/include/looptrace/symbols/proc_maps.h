// /proc/PID/maps parsing and library lookup for a running or not-yet-started process.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "looptrace/util/result.h"

namespace looptrace::symbols {

struct MapEntry {
  uint64_t start = 0;
  uint64_t end = 0;
  uint64_t offset = 0;
  std::string perms;  // "r-xp"
  uint32_t dev_major = 0;
  uint32_t dev_minor = 0;
  uint64_t inode = 0;
  std::string path;      // "" for anonymous mappings; "[heap]", "[vdso]", "/memfd:x", ...
  bool deleted = false;  // path had a " (deleted)" suffix, which is stripped

  bool is_executable() const { return perms.size() > 2 && perms[2] == 'x'; }
  bool is_file() const { return !path.empty() && path[0] == '/'; }
};

// Reads /proc/PID/maps. Errors name the file ("cannot read /proc/42/maps: ...").
Result<std::vector<MapEntry>> ReadProcMaps(int pid);

// Pure parser for the text of /proc/PID/maps. Malformed lines are skipped and counted
// in *malformed_lines when given.
std::vector<MapEntry> ParseProcMaps(std::string_view text, size_t* malformed_lines = nullptr);

// The file `name` refers to among the mapped files: an absolute path is returned if it
// is mapped or exists; otherwise `name` ("libc.so.6", "libglib-2.0.so") is matched
// against the basenames of mapped files, exact basename first, then the shortest
// basename starting with `name`. Mappings of deleted files are used only when nothing
// else matches.
std::optional<std::string> FindMappedFile(const std::vector<MapEntry>& maps, std::string_view name);

// Same, for process `pid`. With `via_proc_root` the result is the path as seen through
// /proc/PID/root (the process's mount namespace), and an unmapped absolute path is checked
// there; a deleted mapped file is returned as /proc/PID/map_files/START-END.
std::optional<std::string> FindMappedFile(const std::vector<MapEntry>& maps, std::string_view name, int pid,
                                          bool via_proc_root);

// "/proc/PID/root" + path.
std::string ProcRootPath(int pid, std::string_view path);

// Where to open the file of a file mapping of `pid`: /proc/PID/map_files/START-END for a
// deleted file or one replaced on disk since it was mapped (another inode at the path),
// else the path through /proc/PID/root when that exists, else the path as seen from here
// (the process may be gone, its files may remain).
struct MappedFileLocation {
  std::string path;
  bool replaced = false;  // another file now lies at the path (and is another program)
  bool trusted = true;    // false: replaced, and the mapped file cannot be reached (do not name)
};
MappedFileLocation LocateMappedFile(int pid, const MapEntry& map);
std::string MappedFileOpenPath(int pid, const MapEntry& map);

// For a process not started yet (looptrace run): finds the shared library `name` the
// dynamic loader would pick. A name containing '/' is returned if it exists. Otherwise
// searches, like ld.so, the exe's DT_RPATH (only without DT_RUNPATH), `ld_library_path`
// (colon-separated), the exe's DT_RUNPATH ($ORIGIN expanded), the directories of
// /etc/ld.so.conf (and its includes; /etc/ld.so.cache is not read), then
// /lib/x86_64-linux-gnu, /usr/lib/x86_64-linux-gnu, /lib64, /usr/lib64, /usr/lib, /lib,
// /usr/local/lib: first an
// exact file name in all of them, then the shortest ".so" file name starting with `name`.
// Only 64-bit ELF files count (linker scripts such as libc.so are skipped).
// `exe_path` may be empty.
std::optional<std::string> SearchLibrary(std::string_view name, std::string_view ld_library_path,
                                         std::string_view exe_path);

}  // namespace looptrace::symbols
