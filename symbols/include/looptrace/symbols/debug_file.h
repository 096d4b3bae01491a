// Separate debug files: the GNU build-id tree (<dir>/.build-id/xx/rest.debug) and
// .gnu_debuglink (next to the file, in its .debug/ folder, or under a debug directory),
// checked by build id and by the debuglink's CRC-32 like gdb and elfutils do.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "looptrace/symbols/elf_file.h"
#include "looptrace/util/result.h"

namespace looptrace::symbols {

struct DebugSearchOptions {
  // Global debug directories (gdb's debug-file-directory). Each is searched for
  // <dir>/.build-id/<xx>/<rest>.debug and <dir>/<directory of the file>/<debuglink name>.
  // Tests point this at a local tree instead of /usr/lib/debug.
  std::vector<std::string> debug_directories = {"/usr/lib/debug"};
  bool use_build_id = true;
  bool use_debuglink = true;
  // Reject a debuglink candidate whose CRC-32 differs from the one in .gnu_debuglink.
  bool check_crc = true;
};

// What a search found, and what it rejected on the way.
struct DebugFileSearch {
  std::string path;                   // the accepted debug file, "" if none
  bool via_build_id = false;          // accepted through the build-id tree
  size_t candidates_missing = 0;      // candidate paths that do not exist
  size_t crc_mismatches = 0;          // debuglink candidates whose CRC-32 differs
  size_t build_id_mismatches = 0;     // candidates whose build id differs from the file's
  size_t unreadable = 0;              // candidates that exist but are not readable ELF files
  size_t without_debug_info = 0;      // ELF candidates without DWARF (e.g. another stripped copy)
  std::vector<std::string> rejected;  // "PATH: why", for diagnostics
};

// Searches the separate debug file of `file`. `path_in_root` is the file's path as the
// target process sees it (used for the debuglink locations and the debug-directory mirror);
// `root` is prepended to the module-relative candidates ("" or "/proc/PID/root").
// Candidates are taken in gdb's order: build id in each debug directory, then the debuglink
// name in the file's directory, its .debug/ subdirectory and each debug directory.
DebugFileSearch FindDebugFile(const ElfFile& file, std::string_view path_in_root, std::string_view root,
                              const DebugSearchOptions& options);

// CRC-32 of a file's contents as .gnu_debuglink records it (zlib's crc32).
Result<uint32_t> DebuglinkCrc32(const std::string& path);

// Lower-case hex GNU build id of an ELF file, "" if it has none; reads only the notes.
Result<std::string> ReadBuildId(const std::string& path);

// "<dir>/.build-id/<first two hex digits>/<rest>.debug".
std::string BuildIdDebugPath(std::string_view debug_directory, std::string_view build_id);

}  // namespace looptrace::symbols
