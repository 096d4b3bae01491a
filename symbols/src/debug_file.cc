#include "looptrace/symbols/debug_file.h"
#include "looptrace/util/safe_file.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <vector>

namespace looptrace::symbols {
namespace {

struct CandidateInfo {
  std::string build_id;
  bool has_debug_info = false;
};

std::string HexBytes(const uint8_t* bytes, size_t size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(size * 2);
  for (size_t i = 0; i < size; ++i) {
    out.push_back(kDigits[bytes[i] >> 4]);
    out.push_back(kDigits[bytes[i] & 0xf]);
  }
  return out;
}

// Build id (from note sections, else PT_NOTE segments) and DWARF presence of an ELF file.
Result<CandidateInfo> Inspect(const std::string& path) {
  const int fd = OpenForReading(path);
  if (fd < 0) return SystemError("cannot open " + path, errno);
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || static_cast<uint64_t>(st.st_size) > kMaxElfBytes) {
    close(fd);
    return MakeError("cannot open " + path + ": not a regular file of at most " + FormatBytes(kMaxElfBytes));
  }
  elf_version(EV_CURRENT);
  Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
  if (elf == nullptr || elf_kind(elf) != ELF_K_ELF) {
    if (elf != nullptr) elf_end(elf);
    close(fd);
    return MakeError("cannot read " + path + ": not an ELF file");
  }
  CandidateInfo info;
  auto scan = [&](Elf_Data* data) {
    size_t offset = 0;
    GElf_Nhdr nhdr;
    size_t name_offset = 0;
    size_t desc_offset = 0;
    while (data != nullptr && offset < data->d_size && info.build_id.empty()) {
      const size_t next = gelf_getnote(data, offset, &nhdr, &name_offset, &desc_offset);
      if (next == 0) break;
      offset = next;
      const char* name = static_cast<const char*>(data->d_buf) + name_offset;
      if (nhdr.n_type == NT_GNU_BUILD_ID && nhdr.n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0) {
        info.build_id = HexBytes(static_cast<const uint8_t*>(data->d_buf) + desc_offset, nhdr.n_descsz);
      }
    }
  };
  size_t shstrndx = 0;
  const bool have_names = elf_getshdrstrndx(elf, &shstrndx) == 0;
  size_t sections = 0;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
    ++sections;
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr) continue;
    if (shdr.sh_type == SHT_NOTE && info.build_id.empty()) scan(elf_getdata(scn, nullptr));
    if (shdr.sh_type == SHT_PROGBITS && shdr.sh_size > 0 && have_names) {
      const char* name = elf_strptr(elf, shstrndx, shdr.sh_name);
      if (name != nullptr && (std::strcmp(name, ".debug_info") == 0 || std::strcmp(name, ".zdebug_info") == 0)) {
        info.has_debug_info = true;
      }
    }
  }
  if (sections == 0 && info.build_id.empty()) {
    size_t phnum = 0;
    if (elf_getphdrnum(elf, &phnum) == 0) {
      for (size_t i = 0; i < phnum && info.build_id.empty(); ++i) {
        GElf_Phdr phdr;
        if (gelf_getphdr(elf, static_cast<int>(i), &phdr) == nullptr || phdr.p_type != PT_NOTE) {
          continue;
        }
        scan(elf_getdata_rawchunk(elf, static_cast<int64_t>(phdr.p_offset), phdr.p_filesz,
                                  phdr.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR));
      }
    }
  }
  elf_end(elf);
  close(fd);
  return info;
}

std::string_view DirName(std::string_view path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string_view::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string Join(std::string_view a, std::string_view b) {
  std::string out(a);
  if (out.empty() || out.back() != '/') out.push_back('/');
  while (!b.empty() && b.front() == '/') b.remove_prefix(1);
  out.append(b);
  return out;
}

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

bool SameFile(const std::string& a, const std::string& b) {
  struct stat sa;
  struct stat sb;
  return stat(a.c_str(), &sa) == 0 && stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

}  // namespace

std::string BuildIdDebugPath(std::string_view debug_directory, std::string_view build_id) {
  if (build_id.size() < 3) return {};
  std::string path = Join(debug_directory, ".build-id");
  path.push_back('/');
  path.append(build_id.substr(0, 2));
  path.push_back('/');
  path.append(build_id.substr(2));
  path.append(".debug");
  return path;
}

Result<uint32_t> DebuglinkCrc32(const std::string& path) {
  const int fd = OpenForReading(path);
  if (fd < 0) return SystemError("cannot open " + path, errno);
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || static_cast<uint64_t>(st.st_size) > kMaxElfBytes) {
    close(fd);
    return MakeError("cannot open " + path + ": not a regular file of at most " + FormatBytes(kMaxElfBytes));
  }
  uLong crc = crc32(0L, Z_NULL, 0);
  std::vector<unsigned char> buffer(1 << 16);
  while (true) {
    const ssize_t n = read(fd, buffer.data(), buffer.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      close(fd);
      return SystemError("cannot read " + path, err);
    }
    if (n == 0) break;
    crc = crc32(crc, buffer.data(), static_cast<uInt>(n));
  }
  close(fd);
  return static_cast<uint32_t>(crc);
}

Result<std::string> ReadBuildId(const std::string& path) {
  ASSIGN_OR_RETURN(CandidateInfo info, Inspect(path));
  return info.build_id;
}

DebugFileSearch FindDebugFile(const ElfFile& file, std::string_view path_in_root, std::string_view root,
                              const DebugSearchOptions& options) {
  DebugFileSearch search;
  const std::string& build_id = file.build_id();
  // Checks one candidate; true if accepted.
  auto consider = [&](const std::string& candidate, std::optional<uint32_t> crc) {
    if (candidate.empty()) return false;
    if (!Exists(candidate)) {
      ++search.candidates_missing;
      return false;
    }
    if (SameFile(candidate, file.path())) return false;  // the file itself
    auto info = Inspect(candidate);
    if (!info) {
      ++search.unreadable;
      search.rejected.push_back(candidate + ": " + info.error().message);
      return false;
    }
    if (!build_id.empty() && !info->build_id.empty() && info->build_id != build_id) {
      ++search.build_id_mismatches;
      search.rejected.push_back(candidate + ": build id " + info->build_id + " differs from " + build_id);
      return false;
    }
    if (crc && options.check_crc) {
      auto actual = DebuglinkCrc32(candidate);
      if (!actual) {
        ++search.unreadable;
        search.rejected.push_back(candidate + ": " + actual.error().message);
        return false;
      }
      if (*actual != *crc) {
        ++search.crc_mismatches;
        char message[96];
        std::snprintf(message, sizeof(message), ": CRC-32 %08x differs from the debuglink's %08x", *actual, *crc);
        search.rejected.push_back(candidate + message);
        return false;
      }
    }
    if (!info->has_debug_info) {
      ++search.without_debug_info;
      search.rejected.push_back(candidate + ": no DWARF");
      return false;
    }
    search.path = candidate;
    return true;
  };

  if (options.use_build_id && build_id.size() >= 3) {
    for (const std::string& dir : options.debug_directories) {
      if (consider(BuildIdDebugPath(dir, build_id), std::nullopt)) {
        search.via_build_id = true;
        return search;
      }
    }
  }
  if (options.use_debuglink && file.debuglink()) {
    const DebugLink& link = *file.debuglink();
    const std::string_view dir = DirName(path_in_root);
    std::vector<std::string> candidates = {
        Join(std::string(root) + std::string(dir), link.name),
        Join(Join(std::string(root) + std::string(dir), ".debug"), link.name),
    };
    for (const std::string& debug_dir : options.debug_directories) {
      candidates.push_back(Join(Join(debug_dir, dir), link.name));
    }
    for (const std::string& candidate : candidates) {
      if (consider(candidate, link.crc)) return search;
    }
  }
  return search;
}

}  // namespace looptrace::symbols
