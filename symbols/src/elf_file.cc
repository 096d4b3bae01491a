// ElfFile: opening a file and loading it in one pass, one step per part of it; the parts
// are read in elf_notes.cc, elf_symbols.cc and elf_minidebuginfo.cc (elf_internal.h).
#include "looptrace/symbols/elf_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <tuple>
#include <utility>

#include "elf_internal.h"
#include "looptrace/util/log.h"
#include "looptrace/util/safe_file.h"

namespace looptrace::symbols {
namespace internal {

std::string ElfErrorMessage() {
  const char* message = elf_errmsg(-1);
  return message != nullptr ? message : "unknown libelf error";
}

std::string Hex(uint64_t value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "0x%llx", static_cast<unsigned long long>(value));
  return buffer;
}

}  // namespace internal

namespace {

using internal::ElfErrorMessage;

constexpr std::string_view kStapsdtBaseSection = ".stapsdt.base";

void EnsureLibelfInitialized() {
  static const bool initialized = [] { return elf_version(EV_CURRENT) != EV_NONE; }();
  (void)initialized;
}

ExitCode CodeForErrno(int err) { return (err == EACCES || err == EPERM) ? ExitCode::kPermission : ExitCode::kProfile; }

Result<void> ReadDynamicSection(Elf* elf, Elf_Scn* scn, const std::string& path, DynamicInfo* out) {
  GElf_Shdr shdr;
  Elf_Data* data = elf_getdata(scn, nullptr);
  if (gelf_getshdr(scn, &shdr) == nullptr || data == nullptr) {
    return MakeError("cannot read .dynamic of " + path + ": " + ElfErrorMessage(), ExitCode::kProfile);
  }
  const size_t entry_size = gelf_fsize(elf, ELF_T_DYN, 1, EV_CURRENT);
  const size_t count = entry_size == 0 ? 0 : data->d_size / entry_size;
  for (size_t i = 0; i < count; ++i) {
    GElf_Dyn dyn;
    if (gelf_getdyn(data, static_cast<int>(i), &dyn) == nullptr || dyn.d_tag == DT_NULL) break;
    if (dyn.d_tag != DT_SONAME && dyn.d_tag != DT_NEEDED && dyn.d_tag != DT_RPATH && dyn.d_tag != DT_RUNPATH) {
      continue;
    }
    const char* value = elf_strptr(elf, shdr.sh_link, dyn.d_un.d_val);
    if (value == nullptr) continue;
    switch (dyn.d_tag) {
      case DT_SONAME:
        out->soname = value;
        break;
      case DT_NEEDED:
        out->needed.emplace_back(value);
        break;
      case DT_RPATH:
        out->rpath = value;
        break;
      case DT_RUNPATH:
        out->runpath = value;
        break;
      default:
        break;
    }
  }
  return {};
}

// .gnu_debuglink: a NUL-terminated file name, padding to 4 bytes, a 4-byte CRC in the
// file's byte order.
std::optional<DebugLink> ReadDebugLink(Elf_Scn* scn, bool swap, size_t* malformed) {
  Elf_Data* data = elf_getdata(scn, nullptr);
  if (data == nullptr || data->d_buf == nullptr) {
    ++*malformed;
    return std::nullopt;
  }
  const char* bytes = static_cast<const char*>(data->d_buf);
  const size_t length = strnlen(bytes, data->d_size);
  const size_t crc_offset = (length + 4) & ~size_t{3};
  if (length == 0 || length == data->d_size || crc_offset + 4 > data->d_size) {
    ++*malformed;
    return std::nullopt;
  }
  DebugLink link;
  link.name.assign(bytes, length);
  std::memcpy(&link.crc, bytes + crc_offset, sizeof(link.crc));
  if (swap) link.crc = __builtin_bswap32(link.crc);
  if (link.name.find('/') != std::string::npos) {  // a name, never a path
    ++*malformed;
    return std::nullopt;
  }
  return link;
}

// The dynamic section: the SHT_DYNAMIC section the PT_DYNAMIC segment points at (what the
// dynamic linker reads), else the first one. A file has one; a malformed file with more
// must still give ElfFile and ReadDynamicInfo the same answer.
Elf_Scn* FindDynamicSection(Elf* elf) {
  std::optional<uint64_t> segment_offset;
  size_t phnum = 0;
  if (elf_getphdrnum(elf, &phnum) == 0) {
    for (size_t i = 0; i < phnum && !segment_offset; ++i) {
      GElf_Phdr phdr;
      if (gelf_getphdr(elf, static_cast<int>(i), &phdr) != nullptr && phdr.p_type == PT_DYNAMIC) {
        segment_offset = phdr.p_offset;
      }
    }
  }
  Elf_Scn* first = nullptr;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr || shdr.sh_type != SHT_DYNAMIC) continue;
    if (segment_offset && shdr.sh_offset == *segment_offset) return scn;
    if (first == nullptr) first = scn;
  }
  return first;
}

// Open file descriptor + ELF handle with errors naming the path.
Result<std::pair<int, Elf*>> OpenElf(const std::string& path, uint64_t* file_size) {
  const int fd = OpenForReading(path);
  if (fd < 0) {
    const int err = errno;
    return SystemError("cannot open " + path, err, CodeForErrno(err));
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    const int err = errno;
    close(fd);
    return SystemError("cannot stat " + path, err, CodeForErrno(err));
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return MakeError(
        "cannot open " + path + ": it is " + std::string(FileTypeName(st.st_mode)) + ", not a regular file",
        ExitCode::kProfile);
  }
  if (static_cast<uint64_t>(st.st_size) > kMaxElfBytes) {
    close(fd);
    return MakeError("cannot open " + path + ": " + FormatBytes(static_cast<uint64_t>(st.st_size)) + " is over the " +
                         FormatBytes(kMaxElfBytes) + " limit for ELF files",
                     ExitCode::kProfile);
  }
  if (file_size != nullptr) *file_size = static_cast<uint64_t>(st.st_size);
  EnsureLibelfInitialized();
  Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
  if (elf == nullptr) {
    std::string message = "cannot read " + path + ": " + ElfErrorMessage();
    close(fd);
    return MakeError(std::move(message), ExitCode::kProfile);
  }
  if (elf_kind(elf) != ELF_K_ELF) {
    const bool archive = elf_kind(elf) == ELF_K_AR;
    elf_end(elf);
    close(fd);
    return MakeError("cannot read " + path + (archive ? ": an ar archive, not an ELF file" : ": not an ELF file"),
                     ExitCode::kProfile);
  }
  return std::make_pair(fd, elf);
}

}  // namespace

ElfFile::Handle::Handle(Handle&& other) noexcept
    : fd(std::exchange(other.fd, -1)), elf(std::exchange(other.elf, nullptr)) {}

ElfFile::Handle& ElfFile::Handle::operator=(Handle&& other) noexcept {
  if (this != &other) {
    if (elf != nullptr) elf_end(elf);
    if (fd >= 0) close(fd);
    fd = std::exchange(other.fd, -1);
    elf = std::exchange(other.elf, nullptr);
  }
  return *this;
}

ElfFile::Handle::~Handle() {
  if (elf != nullptr) elf_end(elf);
  if (fd >= 0) close(fd);
}

Result<ElfFile> ElfFile::Open(const std::string& path) {
  ElfFile file;
  file.path_ = path;
  ASSIGN_OR_RETURN(auto opened, OpenElf(path, &file.file_size_));
  file.handle_.fd = opened.first;
  file.handle_.elf = opened.second;
  RETURN_IF_ERROR(file.Load());
  return file;
}

// Loads the file in one pass, one step per part of it: header, program headers, section
// headers, notes (build id, USDT), dynamic section, debuglink, symbol tables (with
// versions and MiniDebugInfo), then the function index.
Result<void> ElfFile::Load() {
  ASSIGN_OR_RETURN(const Layout layout, ReadHeader());
  std::vector<NoteSegment> note_segments;
  RETURN_IF_ERROR(ReadProgramHeaders(&note_segments));
  SectionRefs sections;
  RETURN_IF_ERROR(ScanSections(&sections));
  RETURN_IF_ERROR(ReadNotes(sections, note_segments, layout));
  if (Elf_Scn* dynamic = FindDynamicSection(handle_.elf)) {
    RETURN_IF_ERROR(ReadDynamicSection(handle_.elf, dynamic, path_, &dynamic_));
  }
  if (sections.debuglink != nullptr) {
    debuglink_ = ReadDebugLink(sections.debuglink, layout.swap, &malformed_entries_);
  }
  has_symtab_ = sections.symtab != nullptr;
  ASSIGN_OR_RETURN(std::vector<Symbol> symbols, ReadSymbols(sections));
  std::sort(sections_.begin(), sections_.end(),
            [](const Section& a, const Section& b) { return a.address < b.address; });
  IndexFunctions(std::move(symbols));
  std::sort(usdt_probes_.begin(), usdt_probes_.end(), [](const UsdtProbe& a, const UsdtProbe& b) {
    return std::tie(a.address, a.provider, a.name) < std::tie(b.address, b.provider, b.name);
  });
  if (malformed_entries_ > 0) {
    log::V1("{}: skipped {} malformed symbol or note entries", path_, malformed_entries_);
  }
  return {};
}

// The ELF header: file type, class and byte order; header tables must fit in the file.
Result<ElfFile::Layout> ElfFile::ReadHeader() {
  GElf_Ehdr ehdr;
  if (gelf_getehdr(handle_.elf, &ehdr) == nullptr) {
    return MakeError("cannot read ELF header of " + path_ + ": " + ElfErrorMessage(), ExitCode::kProfile);
  }
  // libelf quietly drops header tables that extend past the end of the file; a
  // truncated file must be an error, not an ELF without symbols.
  auto table_fits = [&](uint64_t offset, uint64_t count, uint64_t entry_size) {
    return offset <= file_size_ && count * entry_size <= file_size_ - offset;
  };
  if (ehdr.e_shoff != 0 && !table_fits(ehdr.e_shoff, std::max<uint64_t>(ehdr.e_shnum, 1), ehdr.e_shentsize)) {
    return MakeError("cannot read " + path_ + ": section headers extend past the end of the file", ExitCode::kProfile,
                     "the file may be truncated");
  }
  if (ehdr.e_phoff != 0 && ehdr.e_phnum != PN_XNUM && !table_fits(ehdr.e_phoff, ehdr.e_phnum, ehdr.e_phentsize)) {
    return MakeError("cannot read " + path_ + ": program headers extend past the end of the file", ExitCode::kProfile,
                     "the file may be truncated");
  }
  is_dyn_ = ehdr.e_type == ET_DYN;
  Layout layout;
  layout.is64 = ehdr.e_ident[EI_CLASS] == ELFCLASS64;
  layout.swap = (ehdr.e_ident[EI_DATA] == ELFDATA2MSB) != (std::endian::native == std::endian::big);
  return layout;
}

// Program headers: loadable segments (address -> file offset) and note segments.
Result<void> ElfFile::ReadProgramHeaders(std::vector<NoteSegment>* note_segments) {
  size_t phnum = 0;
  if (elf_getphdrnum(handle_.elf, &phnum) != 0) {
    return MakeError("cannot read program headers of " + path_ + ": " + ElfErrorMessage(), ExitCode::kProfile);
  }
  for (size_t i = 0; i < phnum; ++i) {
    GElf_Phdr phdr;
    if (gelf_getphdr(handle_.elf, static_cast<int>(i), &phdr) == nullptr) {
      return MakeError("cannot read program header " + std::to_string(i) + " of " + path_ + ": " + ElfErrorMessage(),
                       ExitCode::kProfile);
    }
    if (phdr.p_type == PT_LOAD) {
      segments_.push_back(
          Segment{phdr.p_vaddr, phdr.p_memsz, phdr.p_offset, phdr.p_filesz, (phdr.p_flags & PF_X) != 0});
    } else if (phdr.p_type == PT_NOTE) {
      note_segments->push_back(NoteSegment{phdr.p_offset, phdr.p_filesz, phdr.p_align});
    }
  }
  return {};
}

// One pass over the section headers: the sections later steps read, the allocated
// sections (labels, and segments when there are no program headers) and whether the file
// carries DWARF (.debug_info, or .zdebug_info compressed the legacy way).
Result<void> ElfFile::ScanSections(SectionRefs* refs) {
  Elf* elf = handle_.elf;
  const bool have_segments = !segments_.empty();
  size_t shstrndx = 0;
  const bool have_shstrndx = elf_getshdrstrndx(elf, &shstrndx) == 0;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
    ++refs->count;
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr) {
      return MakeError("cannot read section header of " + path_ + ": " + ElfErrorMessage(), ExitCode::kProfile);
    }
    switch (shdr.sh_type) {
      case SHT_SYMTAB:
        refs->symtab = scn;
        break;
      case SHT_DYNSYM:
        refs->dynsym = scn;
        break;
      case SHT_GNU_versym:
        refs->versym = scn;
        break;
      case SHT_GNU_verdef:
        refs->verdef = scn;
        break;
      case SHT_NOTE:
        refs->notes.push_back(scn);
        break;
      case SHT_PROGBITS:
        if (have_shstrndx) {
          const char* name = elf_strptr(elf, shstrndx, shdr.sh_name);
          if (name == nullptr) break;
          const std::string_view section_name(name);
          if (section_name == kStapsdtBaseSection) {
            refs->stapsdt_base = shdr.sh_addr;
          } else if (section_name == ".gnu_debuglink") {
            refs->debuglink = scn;
          } else if (section_name == ".gnu_debugdata") {
            refs->gnu_debugdata = scn;
          } else if ((section_name == ".debug_info" || section_name == ".zdebug_info") && shdr.sh_size > 0) {
            has_debug_info_ = true;
          }
        }
        break;
      default:
        break;
    }
    if ((shdr.sh_flags & SHF_ALLOC) != 0 && shdr.sh_addr != 0 && shdr.sh_size > 0) {
      sections_.push_back(Section{shdr.sh_addr, shdr.sh_size, static_cast<uint32_t>(elf_ndxscn(scn))});
    }
    if (!have_segments && (shdr.sh_flags & SHF_ALLOC) != 0 && shdr.sh_type != SHT_NOBITS) {
      segments_.push_back(
          Segment{shdr.sh_addr, shdr.sh_size, shdr.sh_offset, shdr.sh_size, (shdr.sh_flags & SHF_EXECINSTR) != 0});
    }
  }
  return {};
}

Result<DynamicInfo> ReadDynamicInfo(const std::string& path) {
  ASSIGN_OR_RETURN(auto opened, OpenElf(path, nullptr));
  auto [fd, elf] = opened;
  DynamicInfo info;
  Result<void> status;
  if (Elf_Scn* scn = FindDynamicSection(elf)) status = ReadDynamicSection(elf, scn, path, &info);
  elf_end(elf);
  close(fd);
  if (!status) return std::unexpected(status.error());
  return info;
}

}  // namespace looptrace::symbols
