#include "looptrace/symbols/proc_maps.h"

#include "looptrace/util/safe_file.h"
#include "text_util.h"

#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "looptrace/symbols/debug_file.h"
#include "looptrace/symbols/elf_file.h"

namespace looptrace::symbols {
namespace {

constexpr std::string_view kDeletedSuffix = " (deleted)";

constexpr std::string_view kStandardLibraryDirs[] = {
    "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/usr/lib", "/lib", "/usr/local/lib",
};

// Consumes a number in `base` from the front of `s`.
template <typename T>
bool TakeNumber(std::string_view* s, int base, T* out) {
  const char* begin = s->data();
  const char* end = begin + s->size();
  auto [ptr, ec] = std::from_chars(begin, end, *out, base);
  if (ec != std::errc() || ptr == begin) return false;
  s->remove_prefix(static_cast<size_t>(ptr - begin));
  return true;
}

bool TakeChar(std::string_view* s, char c) {
  if (s->empty() || s->front() != c) return false;
  s->remove_prefix(1);
  return true;
}

void SkipSpaces(std::string_view* s) {
  while (!s->empty() && (s->front() == ' ' || s->front() == '\t')) s->remove_prefix(1);
}

std::string_view TakeToken(std::string_view* s) {
  SkipSpaces(s);
  size_t n = 0;
  while (n < s->size() && (*s)[n] != ' ' && (*s)[n] != '\t') ++n;
  std::string_view token = s->substr(0, n);
  s->remove_prefix(n);
  return token;
}

std::optional<MapEntry> ParseLine(std::string_view line) {
  MapEntry entry;
  if (!TakeNumber(&line, 16, &entry.start) || !TakeChar(&line, '-') || !TakeNumber(&line, 16, &entry.end) ||
      entry.end < entry.start) {
    return std::nullopt;
  }
  std::string_view perms = TakeToken(&line);
  if (perms.size() != 4) return std::nullopt;
  entry.perms = std::string(perms);
  SkipSpaces(&line);
  if (!TakeNumber(&line, 16, &entry.offset)) return std::nullopt;
  SkipSpaces(&line);
  if (!TakeNumber(&line, 16, &entry.dev_major) || !TakeChar(&line, ':') || !TakeNumber(&line, 16, &entry.dev_minor)) {
    return std::nullopt;
  }
  SkipSpaces(&line);
  if (!TakeNumber(&line, 10, &entry.inode)) return std::nullopt;
  if (!line.empty() && line.front() != ' ' && line.front() != '\t') return std::nullopt;
  SkipSpaces(&line);
  // The rest of the line is the path; it may contain spaces.
  if (line.ends_with(kDeletedSuffix)) {
    line.remove_suffix(kDeletedSuffix.size());
    entry.deleted = true;
  }
  entry.path = std::string(line);
  return entry;
}

std::string_view Basename(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

// A 64-bit ELF file (skips linker scripts such as /usr/lib/x86_64-linux-gnu/libc.so).
bool IsElf64(const std::string& path) {
  const int fd = OpenForReading(path);
  if (fd < 0) return false;
  unsigned char ident[EI_NIDENT] = {};
  const ssize_t n = pread(fd, ident, sizeof(ident), 0);
  close(fd);
  return n == static_cast<ssize_t>(sizeof(ident)) && std::memcmp(ident, ELFMAG, SELFMAG) == 0 &&
         ident[EI_CLASS] == ELFCLASS64;
}

// Index of the mapping `name` refers to, or nullopt.
std::optional<size_t> FindMappedIndex(const std::vector<MapEntry>& maps, std::string_view name) {
  const bool has_slash = name.find('/') != std::string_view::npos;
  std::optional<size_t> exact_deleted;
  std::optional<size_t> prefix;
  std::optional<size_t> prefix_deleted;
  for (size_t i = 0; i < maps.size(); ++i) {
    const MapEntry& entry = maps[i];
    if (!entry.is_file()) continue;
    if (has_slash) {
      // Absolute: the same path. Relative ("lib/libfoo.so"): a path ending with it.
      const bool match = name.front() == '/' ? entry.path == name
                                             : entry.path.size() > name.size() && entry.path.ends_with(name) &&
                                                   entry.path[entry.path.size() - name.size() - 1] == '/';
      if (!match) continue;
      if (!entry.deleted) return i;
      if (!exact_deleted) exact_deleted = i;
      continue;
    }
    const std::string_view base = Basename(entry.path);
    if (base == name) {
      if (!entry.deleted) return i;
      if (!exact_deleted) exact_deleted = i;
    } else if (base.starts_with(name)) {
      std::optional<size_t>& slot = entry.deleted ? prefix_deleted : prefix;
      if (!slot || base.size() < Basename(maps[*slot].path).size()) slot = i;
    }
  }
  if (prefix) return prefix;
  if (exact_deleted) return exact_deleted;
  return prefix_deleted;
}

std::string HexRange(const MapEntry& entry) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%llx-%llx", static_cast<unsigned long long>(entry.start),
                static_cast<unsigned long long>(entry.end));
  return buffer;
}

std::vector<std::string> SplitPath(std::string_view list) {
  std::vector<std::string> dirs;
  while (!list.empty()) {
    const size_t colon = list.find_first_of(":;");
    std::string_view dir = list.substr(0, colon);
    if (!dir.empty()) dirs.emplace_back(dir);
    if (colon == std::string_view::npos) break;
    list.remove_prefix(colon + 1);
  }
  return dirs;
}

// Expands $ORIGIN / ${ORIGIN} (the exe's directory) and $LIB / ${LIB}.
std::string ExpandDynamicTokens(std::string_view dir, std::string_view origin) {
  std::string out;
  for (size_t i = 0; i < dir.size();) {
    if (dir[i] == '$') {
      std::string_view rest = dir.substr(i + 1);
      auto take = [&](std::string_view token, std::string_view value) {
        const std::string braced = "{" + std::string(token) + "}";
        if (rest.starts_with(braced)) {
          out += value;
          i += 1 + braced.size();
          return true;
        }
        if (rest.starts_with(token)) {
          out += value;
          i += 1 + token.size();
          return true;
        }
        return false;
      };
      if (take("ORIGIN", origin) || take("LIB", "lib64")) continue;
    }
    out.push_back(dir[i]);
    ++i;
  }
  return out;
}

// Directories listed in an ld.so.conf file, following "include" globs.
void ReadLdSoConf(const std::string& path, int depth, std::vector<std::string>* dirs) {
  if (depth > 8) return;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::string_view text(line);
    text = text.substr(0, text.find('#'));
    SkipSpaces(&text);
    while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) {
      text.remove_suffix(1);
    }
    if (text.empty()) continue;
    if (text.starts_with("include") && text.size() > 7 && (text[7] == ' ' || text[7] == '\t')) {
      text.remove_prefix(7);
      SkipSpaces(&text);
      std::string pattern(text);
      if (!pattern.starts_with('/')) {
        const size_t slash = path.rfind('/');
        pattern = path.substr(0, slash + 1) + pattern;
      }
      glob_t matches{};
      if (glob(pattern.c_str(), 0, nullptr, &matches) == 0) {
        for (size_t i = 0; i < matches.gl_pathc; ++i) ReadLdSoConf(matches.gl_pathv[i], depth + 1, dirs);
      }
      globfree(&matches);
      continue;
    }
    if (text.starts_with('/')) dirs->emplace_back(text);
  }
}

}  // namespace

std::vector<MapEntry> ParseProcMaps(std::string_view text, size_t* malformed_lines) {
  std::vector<MapEntry> entries;
  size_t malformed = 0;
  while (!text.empty()) {
    const size_t newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    if (line.empty()) continue;
    if (auto entry = ParseLine(line)) {
      entries.push_back(std::move(*entry));
    } else {
      ++malformed;
    }
  }
  if (malformed_lines != nullptr) *malformed_lines = malformed;
  return entries;
}

Result<std::vector<MapEntry>> ReadProcMaps(int pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/maps";
  int err = 0;
  auto text = ReadRegularFile(path, "", kMaxProcFileBytes, ExitCode::kRuntime, {}, &err);
  if (!text) {
    Error error = text.error();
    if (err == ENOENT || err == ESRCH) {
      error.code = ExitCode::kTarget;
      error.hint = "is process " + std::to_string(pid) + " still running?";
    }
    return std::unexpected(error);
  }
  return ParseProcMaps(*text);
}

std::string ProcRootPath(int pid, std::string_view path) {
  std::string out = "/proc/" + std::to_string(pid) + "/root";
  if (!path.starts_with('/')) out.push_back('/');
  out += path;
  return out;
}

std::optional<std::string> FindMappedFile(const std::vector<MapEntry>& maps, std::string_view name) {
  if (name.empty()) return std::nullopt;
  if (auto index = FindMappedIndex(maps, name)) return maps[*index].path;
  if (name.front() == '/' && Exists(std::string(name))) return std::string(name);
  return std::nullopt;
}

std::optional<std::string> FindMappedFile(const std::vector<MapEntry>& maps, std::string_view name, int pid,
                                          bool via_proc_root) {
  if (name.empty()) return std::nullopt;
  if (auto index = FindMappedIndex(maps, name)) {
    const MapEntry& entry = maps[*index];
    if (entry.deleted) {
      return "/proc/" + std::to_string(pid) + "/map_files/" + HexRange(entry);
    }
    return via_proc_root ? ProcRootPath(pid, entry.path) : entry.path;
  }
  if (name.front() == '/') {
    std::string path = via_proc_root ? ProcRootPath(pid, name) : std::string(name);
    if (Exists(path)) return path;
  }
  return std::nullopt;
}

std::optional<std::string> SearchLibrary(std::string_view name, std::string_view ld_library_path,
                                         std::string_view exe_path) {
  if (name.empty()) return std::nullopt;
  if (name.find('/') != std::string_view::npos) {
    std::string path(name);
    if (Exists(path)) return path;
    return std::nullopt;
  }

  // ld.so order: DT_RPATH (ignored when DT_RUNPATH exists), LD_LIBRARY_PATH, DT_RUNPATH,
  // then the system directories.
  std::vector<std::string> dirs;
  DynamicInfo dynamic;
  std::string origin;
  if (!exe_path.empty()) {
    if (auto info = ReadDynamicInfo(std::string(exe_path))) dynamic = std::move(*info);
    const size_t slash = exe_path.rfind('/');
    origin = slash == std::string_view::npos ? "." : std::string(exe_path.substr(0, slash));
    if (origin.empty()) origin = "/";
  }
  if (dynamic.runpath.empty()) {
    for (const std::string& dir : SplitPath(dynamic.rpath)) {
      dirs.push_back(ExpandDynamicTokens(dir, origin));
    }
  }
  for (std::string& dir : SplitPath(ld_library_path)) dirs.push_back(std::move(dir));
  for (const std::string& dir : SplitPath(dynamic.runpath)) {
    dirs.push_back(ExpandDynamicTokens(dir, origin));
  }
  ReadLdSoConf("/etc/ld.so.conf", 0, &dirs);
  for (std::string_view dir : kStandardLibraryDirs) dirs.emplace_back(dir);

  auto join = [](const std::string& dir, std::string_view file) {
    std::string path = dir;
    if (!path.ends_with('/')) path.push_back('/');
    path += file;
    return path;
  };

  for (const std::string& dir : dirs) {
    std::string path = join(dir, name);
    if (IsElf64(path)) return path;
  }
  for (const std::string& dir : dirs) {
    DIR* d = opendir(dir.c_str());
    if (d == nullptr) continue;
    std::vector<std::string> candidates;
    while (const dirent* entry = readdir(d)) {
      std::string_view file(entry->d_name);
      if (file.size() > name.size() && file.starts_with(name) && file.find(".so") != std::string_view::npos) {
        candidates.emplace_back(file);
      }
    }
    closedir(d);
    std::sort(candidates.begin(), candidates.end(), [](const std::string& a, const std::string& b) {
      return std::make_pair(a.size(), a) < std::make_pair(b.size(), b);
    });
    for (const std::string& file : candidates) {
      std::string path = join(dir, file);
      if (IsElf64(path)) return path;
    }
  }
  return std::nullopt;
}

}  // namespace looptrace::symbols

namespace looptrace::symbols {

MappedFileLocation LocateMappedFile(int pid, const MapEntry& map) {
  struct stat st;
  char map_files[96];
  std::snprintf(map_files, sizeof(map_files), "/proc/%d/map_files/%llx-%llx", pid,
                static_cast<unsigned long long>(map.start), static_cast<unsigned long long>(map.end));
  const bool have_map_files = pid > 0 && stat(map_files, &st) == 0;
  std::string rooted = ProcRootPath(pid, map.path);
  const bool at_path = pid > 0 && stat(rooted.c_str(), &st) == 0;
  MappedFileLocation location;
  if (map.deleted) {
    // Deleted since it was mapped; another file at the path replaced it (an upgrade).
    location.replaced = at_path;
    if (have_map_files) {
      location.path = map_files;
    } else if (at_path) {
      location.trusted = false;  // the file there is not the one mapped
      location.path = std::move(rooted);
    } else {
      location.path = map.path;
    }
    return location;
  }
  if (at_path) {
    if (map.inode == 0 || st.st_ino == map.inode) {
      location.path = std::move(rooted);
      return location;
    }
    // Another file now lies at the path (installed over the mapped one, which is still
    // linked elsewhere, or seen through another mount). The mapped file is read through
    // map_files; the one at the path counts as a replacement unless its build id proves
    // it is the same program (the same file through another inode, e.g. an overlay mount).
    auto now = ReadBuildId(rooted);
    if (have_map_files) {
      auto mapped = ReadBuildId(map_files);
      location.replaced = !now || !mapped || *now != *mapped;
      location.path = map_files;
      return location;
    }
    location.replaced = true;
    location.trusted = false;
    location.path = std::move(rooted);
    return location;
  }
  location.path = map.path;
  return location;
}

std::string MappedFileOpenPath(int pid, const MapEntry& map) { return LocateMappedFile(pid, map).path; }

}  // namespace looptrace::symbols
