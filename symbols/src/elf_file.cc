#include "looptrace/symbols/elf_file.h"
#include <fmt/format.h>
#include "looptrace/util/safe_file.h"

#include <cxxabi.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <tuple>
#include <utility>

#include "looptrace/symbols/demangle.h"
#include "looptrace/util/log.h"

namespace looptrace::symbols {
namespace {

constexpr uint32_t kNtStapsdt = 3;
constexpr std::string_view kStapsdtOwner = "stapsdt";
constexpr std::string_view kGnuOwner = "GNU";
constexpr std::string_view kStapsdtBaseSection = ".stapsdt.base";

void EnsureLibelfInitialized() {
  static const bool initialized = [] { return elf_version(EV_CURRENT) != EV_NONE; }();
  (void)initialized;
}

std::string ElfErrorMessage() {
  const char* message = elf_errmsg(-1);
  return message != nullptr ? message : "unknown libelf error";
}

std::string Hex(uint64_t value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "0x%llx", static_cast<unsigned long long>(value));
  return buffer;
}

ExitCode CodeForErrno(int err) { return (err == EACCES || err == EPERM) ? ExitCode::kPermission : ExitCode::kProfile; }

// A note's owner: its n_namesz bytes, which end with the terminating NUL (gABI), without
// it; a name without one owns nothing. Compared as elfutils, the kernel and libbpf do, so
// "GNU" is only a 4-byte "GNU\0" (not "GNU" of n_namesz 3, nor "GNU\0" padded to 8).
std::string_view NoteOwner(const Elf_Data* data, const GElf_Nhdr& nhdr, size_t name_offset) {
  if (nhdr.n_namesz == 0) return {};
  const char* name = static_cast<const char*>(data->d_buf) + name_offset;
  if (name[nhdr.n_namesz - 1] != '\0') return {};
  return std::string_view(name, nhdr.n_namesz - 1);
}

// Calls visit(owner, type, desc, descsz) for each note of a note section or segment.
template <typename Visit>
void ForEachNote(Elf_Data* data, Visit&& visit) {
  GElf_Nhdr nhdr;
  size_t name_offset = 0;
  size_t desc_offset = 0;
  size_t offset = 0;
  while (offset < data->d_size) {
    const size_t next = gelf_getnote(data, offset, &nhdr, &name_offset, &desc_offset);
    if (next == 0) break;
    offset = next;
    visit(NoteOwner(data, nhdr, name_offset), nhdr.n_type, static_cast<const uint8_t*>(data->d_buf) + desc_offset,
          size_t{nhdr.n_descsz});
  }
}

bool IsSymbolGlob(std::string_view pattern) { return pattern.find_first_of("*?[") != std::string_view::npos; }

// Binding order for symbols sharing an address: global, weak, then local and others.
int BindingRank(uint8_t binding) {
  switch (binding) {
    case STB_GLOBAL:
      return 0;
    case STB_WEAK:
      return 1;
    default:
      return 2;
  }
}

// Version names by version index, from .gnu.version_d; the base (file) entry is left
// empty since it does not version a symbol.
std::vector<std::string> ReadVersionDefinitions(Elf* elf, Elf_Scn* scn, size_t* malformed) {
  std::vector<std::string> names;
  GElf_Shdr shdr;
  Elf_Data* data = elf_getdata(scn, nullptr);
  if (gelf_getshdr(scn, &shdr) == nullptr || data == nullptr) {
    ++*malformed;
    return names;
  }
  size_t offset = 0;
  for (size_t n = 0; n < 0x10000; ++n) {
    GElf_Verdef verdef;
    GElf_Verdaux aux;
    if (gelf_getverdef(data, static_cast<int>(offset), &verdef) == nullptr ||
        gelf_getverdaux(data, static_cast<int>(offset + verdef.vd_aux), &aux) == nullptr) {
      ++*malformed;
      break;
    }
    const char* name = elf_strptr(elf, shdr.sh_link, aux.vda_name);
    if (verdef.vd_ndx >= names.size()) names.resize(verdef.vd_ndx + 1u);
    if (name != nullptr && (verdef.vd_flags & VER_FLG_BASE) == 0) names[verdef.vd_ndx] = name;
    if (verdef.vd_next == 0) break;
    offset += verdef.vd_next;
  }
  return names;
}

// Appends the defined functions of one symbol table to `out`.
Result<void> ReadFunctionSymbols(Elf* elf, Elf_Scn* scn, Elf_Data* versym,
                                 const std::vector<std::string>& version_names, const std::string& path,
                                 std::vector<Symbol>* out, size_t* malformed) {
  GElf_Shdr shdr;
  if (gelf_getshdr(scn, &shdr) == nullptr) {
    return MakeError("cannot read symbol table header of " + path + ": " + ElfErrorMessage(), ExitCode::kProfile);
  }
  const char* table = shdr.sh_type == SHT_DYNSYM ? ".dynsym" : ".symtab";
  Elf_Data* data = elf_getdata(scn, nullptr);
  if (data == nullptr) {
    return MakeError(std::string("cannot read ") + table + " of " + path + ": " + ElfErrorMessage(),
                     ExitCode::kProfile);
  }
  const size_t entry_size = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
  const size_t count = entry_size == 0 ? 0 : data->d_size / entry_size;
  if (count > kMaxSymbolTableEntries) {
    return MakeError(std::string("cannot read ") + table + " of " + path + ": " + std::to_string(count) +
                         " entries exceed the limit of " + std::to_string(kMaxSymbolTableEntries),
                     ExitCode::kProfile);
  }
  size_t versym_count = 0;
  if (versym != nullptr) {
    const size_t half = gelf_fsize(elf, ELF_T_HALF, 1, EV_CURRENT);
    versym_count = half == 0 ? 0 : versym->d_size / half;
  }
  for (size_t i = 1; i < count; ++i) {
    GElf_Sym sym;
    if (gelf_getsym(data, static_cast<int>(i), &sym) == nullptr) {
      ++*malformed;
      continue;
    }
    const int type = GELF_ST_TYPE(sym.st_info);
    if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym.st_shndx == SHN_UNDEF) continue;
    const char* raw = elf_strptr(elf, shdr.sh_link, sym.st_name);
    if (raw == nullptr) {
      ++*malformed;
      continue;
    }
    std::string_view full(raw);
    if (full.empty()) continue;

    Symbol symbol;
    // "memcpy@GLIBC_2.2.5" / "foo@@VERS_2" in static symbol tables of versioned libraries.
    if (size_t at = full.find('@'); at != std::string_view::npos && at > 0) {
      symbol.name = std::string(full.substr(0, at));
      std::string_view version = full.substr(at + 1);
      symbol.is_default_version = version.starts_with('@');
      if (symbol.is_default_version) version.remove_prefix(1);
      symbol.version = std::string(version);
    } else {
      symbol.name = std::string(full);
    }
    if (symbol.version.empty() && i < versym_count) {
      GElf_Versym index;
      if (gelf_getversym(versym, static_cast<int>(i), &index) != nullptr) {
        const size_t ndx = index & 0x7fff;
        if (ndx >= 2 && ndx < version_names.size()) {
          symbol.version = version_names[ndx];
          symbol.is_default_version = (index & 0x8000) == 0;  // high bit: hidden
        }
      }
    }
    symbol.address = sym.st_value;
    symbol.size = sym.st_size;
    symbol.is_ifunc = type == STT_GNU_IFUNC;
    symbol.binding = static_cast<uint8_t>(GELF_ST_BIND(sym.st_info));
    symbol.section = sym.st_shndx;
    out->push_back(std::move(symbol));
  }
  return {};
}

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

uint64_t ReadAddress(const uint8_t* p, bool is64, bool swap) {
  if (is64) {
    uint64_t v;
    std::memcpy(&v, p, sizeof(v));
    return swap ? __builtin_bswap64(v) : v;
  }
  uint32_t v;
  std::memcpy(&v, p, sizeof(v));
  return swap ? __builtin_bswap32(v) : v;
}

// Levenshtein distance with adjacent transpositions (optimal string alignment).
size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev2(b.size() + 1), prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        cur[j] = std::min(cur[j], prev2[j - 2] + 1);
      }
    }
    std::swap(prev2, prev);
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string ToLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
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

// The functions of the .symtab inside .gnu_debugdata.
Result<void> ReadMiniDebugInfo(Elf_Scn* scn, const std::string& path, std::vector<Symbol>* out, size_t* malformed) {
  constexpr size_t kMaxMiniDebugInfo = size_t{256} << 20;
  Elf_Data* data = elf_rawdata(scn, nullptr);
  if (data == nullptr || data->d_buf == nullptr) {
    return MakeError("cannot read .gnu_debugdata of " + path + ": " + ElfErrorMessage(), ExitCode::kProfile);
  }
  auto decompressed = DecompressXz(static_cast<const uint8_t*>(data->d_buf), data->d_size, kMaxMiniDebugInfo);
  if (!decompressed) {
    return MakeError("cannot read .gnu_debugdata of " + path + ": " + decompressed.error().message, ExitCode::kProfile);
  }
  Elf* mini = elf_memory(reinterpret_cast<char*>(decompressed->data()), decompressed->size());
  if (mini == nullptr) {
    return MakeError("cannot read .gnu_debugdata of " + path + ": " + ElfErrorMessage(), ExitCode::kProfile);
  }
  Result<void> status;
  if (elf_kind(mini) != ELF_K_ELF) {
    status = MakeError("cannot read .gnu_debugdata of " + path + ": not an ELF file", ExitCode::kProfile);
  } else {
    for (Elf_Scn* s = elf_nextscn(mini, nullptr); s != nullptr; s = elf_nextscn(mini, s)) {
      GElf_Shdr shdr;
      if (gelf_getshdr(s, &shdr) != nullptr && shdr.sh_type == SHT_SYMTAB) {
        status = ReadFunctionSymbols(mini, s, nullptr, {}, path + " (.gnu_debugdata)", out, malformed);
        break;
      }
    }
  }
  elf_end(mini);
  return status;
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

// What ScanSections finds: the sections the later steps read.
struct ElfFile::SectionRefs {
  Elf_Scn* symtab = nullptr;
  Elf_Scn* dynsym = nullptr;
  Elf_Scn* versym = nullptr;
  Elf_Scn* verdef = nullptr;
  Elf_Scn* debuglink = nullptr;
  Elf_Scn* gnu_debugdata = nullptr;
  std::vector<Elf_Scn*> notes;
  uint64_t stapsdt_base = 0;  // sh_addr of .stapsdt.base (0 if none)
  size_t count = 0;           // sections seen
};

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

// Notes: the GNU build id and USDT probes, from the note sections if the file has any
// sections, else from the PT_NOTE segments.
Result<void> ElfFile::ReadNotes(const SectionRefs& refs, const std::vector<NoteSegment>& note_segments,
                                const Layout& layout) {
  auto add_note = [&](std::string_view owner, uint32_t type, const uint8_t* desc, size_t size) {
    AddNote(owner, type, desc, size, layout, refs.stapsdt_base);
  };
  for (Elf_Scn* scn : refs.notes) {
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (data == nullptr) {
      return MakeError("cannot read note section of " + path_ + ": " + ElfErrorMessage(), ExitCode::kProfile);
    }
    ForEachNote(data, add_note);
  }
  if (refs.count == 0) {
    for (const NoteSegment& segment : note_segments) {
      Elf_Data* data = elf_getdata_rawchunk(handle_.elf, static_cast<int64_t>(segment.offset), segment.size,
                                            segment.align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
      if (data == nullptr) {
        ++malformed_entries_;
        continue;
      }
      ForEachNote(data, add_note);
    }
  }
  return {};
}

// One note: the first GNU build id, or a USDT probe.
void ElfFile::AddNote(std::string_view owner, uint32_t type, const uint8_t* desc, size_t size, const Layout& layout,
                      uint64_t stapsdt_base) {
  if (owner == kGnuOwner && type == NT_GNU_BUILD_ID && build_id_.empty()) {
    SetBuildId(desc, size);
  } else if (owner == kStapsdtOwner && type == kNtStapsdt) {
    AddUsdtNote(desc, size, layout.is64, layout.swap, stapsdt_base);
  }
}

// NT_GNU_BUILD_ID: the descriptor bytes as lower-case hex.
void ElfFile::SetBuildId(const uint8_t* desc, size_t size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  build_id_.reserve(size * 2);
  for (size_t i = 0; i < size; ++i) {
    build_id_.push_back(kDigits[desc[i] >> 4]);
    build_id_.push_back(kDigits[desc[i] & 0xf]);
  }
}

// The defined functions of .symtab and .dynsym (with its symbol versions) and, for a file
// without .symtab, of the MiniDebugInfo: an xz-compressed ELF whose .symtab holds the local
// functions that stripping removed (Fedora's "mini debuginfo").
Result<std::vector<Symbol>> ElfFile::ReadSymbols(const SectionRefs& refs) {
  Elf* elf = handle_.elf;
  std::vector<Symbol> symbols;
  if (refs.symtab != nullptr) {
    RETURN_IF_ERROR(ReadFunctionSymbols(elf, refs.symtab, nullptr, {}, path_, &symbols, &malformed_entries_));
  }
  if (refs.dynsym != nullptr) {
    std::vector<std::string> version_names;
    if (refs.verdef != nullptr) {
      version_names = ReadVersionDefinitions(elf, refs.verdef, &malformed_entries_);
    }
    Elf_Data* versym_data = refs.versym != nullptr ? elf_getdata(refs.versym, nullptr) : nullptr;
    RETURN_IF_ERROR(
        ReadFunctionSymbols(elf, refs.dynsym, versym_data, version_names, path_, &symbols, &malformed_entries_));
  }
  if (refs.symtab == nullptr && refs.gnu_debugdata != nullptr) {
    const size_t before = symbols.size();
    if (auto status = ReadMiniDebugInfo(refs.gnu_debugdata, path_, &symbols, &malformed_entries_); !status) {
      minidebuginfo_error_ = status.error().message;
      log::V1("{}", minidebuginfo_error_);
    }
    minidebuginfo_functions_ = symbols.size() - before;
  }
  return symbols;
}

// functions_ from the symbols of all tables: one entry per (address, name), ordered by
// address then binding; demangled names, file offsets and the lookup indexes.
void ElfFile::IndexFunctions(std::vector<Symbol> symbols) {
  // One entry per (address, name); the .dynsym copy contributes the version.
  std::sort(symbols.begin(), symbols.end(),
            [](const Symbol& a, const Symbol& b) { return std::tie(a.address, a.name) < std::tie(b.address, b.name); });
  functions_.reserve(symbols.size());
  for (Symbol& symbol : symbols) {
    if (!functions_.empty() && functions_.back().address == symbol.address && functions_.back().name == symbol.name) {
      Symbol& kept = functions_.back();
      if (kept.version.empty() || (!kept.is_default_version && symbol.is_default_version && !symbol.version.empty())) {
        kept.version = std::move(symbol.version);
        kept.is_default_version = symbol.is_default_version;
      }
      kept.size = std::max(kept.size, symbol.size);
      if (BindingRank(symbol.binding) < BindingRank(kept.binding)) kept.binding = symbol.binding;
      kept.is_ifunc = kept.is_ifunc || symbol.is_ifunc;
      continue;
    }
    functions_.push_back(std::move(symbol));
  }
  // Within one address: global, weak, then local (already by name within each).
  for (size_t begin = 0; begin < functions_.size();) {
    size_t end = begin + 1;
    while (end < functions_.size() && functions_[end].address == functions_[begin].address) ++end;
    if (end - begin > 1) {
      std::stable_sort(
          functions_.begin() + static_cast<ptrdiff_t>(begin), functions_.begin() + static_cast<ptrdiff_t>(end),
          [](const Symbol& a, const Symbol& b) { return BindingRank(a.binding) < BindingRank(b.binding); });
    }
    begin = end;
  }

  // Demangle (reusing one buffer), file offsets, indexes.
  char* buffer = nullptr;
  size_t buffer_size = 0;
  const Segment* segment = nullptr;
  max_end_.reserve(functions_.size());
  by_name_.reserve(functions_.size() + functions_.size() / 4);
  uint64_t max_end = 0;
  for (uint32_t i = 0; i < functions_.size(); ++i) {
    Symbol& symbol = functions_[i];
    if (IsMangled(symbol.name)) {
      int status = 0;
      char* out = abi::__cxa_demangle(symbol.name.c_str(), buffer, &buffer_size, &status);
      if (status == 0 && out != nullptr) {
        buffer = out;
        symbol.demangled = out;
      } else {
        symbol.demangled = symbol.name;
      }
    } else {
      symbol.demangled = symbol.name;
    }
    if (segment == nullptr || symbol.address < segment->vaddr || symbol.address - segment->vaddr >= segment->memsz) {
      segment = SegmentFor(symbol.address);
    }
    symbol.file_offset = segment != nullptr ? symbol.address - segment->vaddr + segment->offset : 0;
    max_end = std::max(max_end, symbol.address + symbol.size);
    max_end_.push_back(max_end);
  }
  std::free(buffer);
  // Raw names and, for C++, the demangled name without parameters; a full demangled
  // name is found through its parameter-less prefix (see FindFunctions).
  for (uint32_t i = 0; i < functions_.size(); ++i) {
    const Symbol& symbol = functions_[i];
    by_name_.emplace(symbol.name, i);
    if (symbol.demangled != symbol.name) {
      const std::string_view stripped = StripParameters(symbol.demangled);
      if (stripped != symbol.name) by_name_.emplace(stripped, i);
    }
  }
}

std::optional<uint64_t> ElfFile::ReadPointer(uint64_t address) const {
  auto bytes = ReadAtAddress(address, 8);
  if (!bytes || bytes->size() != 8) return std::nullopt;
  uint64_t value = 0;
  std::memcpy(&value, bytes->data(), 8);
  Elf* elf = handle_.elf;
  if (!is_dyn_ || elf == nullptr) return value;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr || shdr.sh_type != SHT_RELA || shdr.sh_entsize == 0) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (data == nullptr) continue;
    const size_t count = data->d_size / shdr.sh_entsize;
    for (size_t i = 0; i < count; ++i) {
      GElf_Rela rela;
      if (gelf_getrela(data, static_cast<int>(i), &rela) == nullptr || rela.r_offset != address) continue;
      const uint32_t type = GELF_R_TYPE(rela.r_info);
      if (type == R_X86_64_RELATIVE) return static_cast<uint64_t>(rela.r_addend);
      if (type != R_X86_64_64) return std::nullopt;
      // Against a symbol of this file (its dynamic symbol table, sh_link).
      Elf_Scn* symscn = elf_getscn(elf, shdr.sh_link);
      Elf_Data* syms = symscn ? elf_getdata(symscn, nullptr) : nullptr;
      GElf_Sym sym;
      if (syms == nullptr || gelf_getsym(syms, static_cast<int>(GELF_R_SYM(rela.r_info)), &sym) == nullptr ||
          sym.st_shndx == SHN_UNDEF)
        return std::nullopt;
      return sym.st_value + static_cast<uint64_t>(rela.r_addend);
    }
  }
  return value;
}

std::optional<uint64_t> ElfFile::FindObject(std::string_view name) const {
  Elf* elf = handle_.elf;
  if (elf == nullptr) return std::nullopt;
  for (Elf64_Word wanted : {SHT_SYMTAB, SHT_DYNSYM}) {
    for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
      GElf_Shdr shdr;
      if (gelf_getshdr(scn, &shdr) == nullptr || shdr.sh_type != wanted || shdr.sh_entsize == 0) continue;
      Elf_Data* data = elf_getdata(scn, nullptr);
      if (data == nullptr) continue;
      const size_t count = std::min<size_t>(data->d_size / shdr.sh_entsize, kMaxSymbolTableEntries);
      for (size_t i = 1; i < count; ++i) {
        GElf_Sym sym;
        if (gelf_getsym(data, static_cast<int>(i), &sym) == nullptr) continue;
        if (GELF_ST_TYPE(sym.st_info) != STT_OBJECT || sym.st_shndx == SHN_UNDEF) continue;
        const char* raw = elf_strptr(elf, shdr.sh_link, sym.st_name);
        if (raw != nullptr && name == raw) return sym.st_value;
      }
    }
  }
  return std::nullopt;
}

void ElfFile::AddUsdtNote(const uint8_t* desc, size_t size, bool is64, bool swap, uint64_t stapsdt_base) {
  const size_t address_size = is64 ? 8 : 4;
  if (size < 3 * address_size + 2) {
    ++malformed_entries_;
    return;
  }
  UsdtProbe probe;
  const uint64_t pc = ReadAddress(desc, is64, swap);
  const uint64_t base = ReadAddress(desc + address_size, is64, swap);
  probe.semaphore_address = ReadAddress(desc + 2 * address_size, is64, swap);
  // Three NUL-terminated strings follow: provider, name, arguments (may be missing).
  const char* cursor = reinterpret_cast<const char*>(desc + 3 * address_size);
  const char* end = reinterpret_cast<const char*>(desc + size);
  std::string* fields[] = {&probe.provider, &probe.name, &probe.arguments};
  for (std::string* field : fields) {
    if (cursor >= end) break;
    const size_t length = strnlen(cursor, static_cast<size_t>(end - cursor));
    field->assign(cursor, length);
    cursor += length + 1;
  }
  if (probe.provider.empty() || probe.name.empty()) {
    ++malformed_entries_;
    return;
  }
  // Prelink moves .stapsdt.base; the note keeps the link-time base (libbpf does the same).
  probe.address = pc;
  if (stapsdt_base != 0 && base != 0) probe.address += stapsdt_base - base;
  const Segment* segment = SegmentFor(probe.address);
  if (segment == nullptr) {
    ++malformed_entries_;
    log::V1("{}: USDT probe {}:{} at {} is outside every loadable segment", path_, probe.provider, probe.name,
            Hex(probe.address));
    return;
  }
  probe.file_offset = probe.address - segment->vaddr + segment->offset;
  if (probe.semaphore_address != 0) {
    if (const Segment* sema = SegmentFor(probe.semaphore_address); sema != nullptr) {
      probe.semaphore_file_offset = probe.semaphore_address - sema->vaddr + sema->offset;
    }
  }
  usdt_probes_.push_back(std::move(probe));
}

const ElfFile::Segment* ElfFile::SegmentFor(uint64_t address) const {
  for (const Segment& segment : segments_) {
    if (address >= segment.vaddr && address - segment.vaddr < segment.memsz) return &segment;
  }
  return nullptr;
}

std::vector<const Symbol*> ElfFile::FindFunctions(std::string_view name_or_glob) const {
  std::vector<const Symbol*> result;
  if (IsSymbolGlob(name_or_glob)) {
    const std::string pattern(name_or_glob);
    for (const Symbol& symbol : functions_) {
      if (fnmatch(pattern.c_str(), symbol.name.c_str(), 0) == 0 ||
          (symbol.demangled != symbol.name && fnmatch(pattern.c_str(), symbol.demangled.c_str(), 0) == 0)) {
        result.push_back(&symbol);
      }
    }
    return result;  // already in address order, each symbol once
  }
  auto [begin, end] = by_name_.equal_range(name_or_glob);
  for (auto it = begin; it != end; ++it) result.push_back(&functions_[it->second]);
  // "ns::Foo::bar(int) const": the symbols indexed under "ns::Foo::bar" with exactly
  // that demangled name.
  if (const std::string_view stripped = StripParameters(name_or_glob); stripped != name_or_glob) {
    auto [sbegin, send] = by_name_.equal_range(stripped);
    for (auto it = sbegin; it != send; ++it) {
      const Symbol& symbol = functions_[it->second];
      if (symbol.demangled == name_or_glob) result.push_back(&symbol);
    }
  }
  // functions_ is sorted by address, so pointer order is address order.
  std::sort(result.begin(), result.end());
  result.erase(std::unique(result.begin(), result.end()), result.end());
  return result;
}

const Symbol* ElfFile::FindFunctionByAddress(uint64_t address) const {
  auto it = std::upper_bound(functions_.begin(), functions_.end(), address,
                             [](uint64_t a, const Symbol& s) { return a < s.address; });
  // Walk back from the last symbol starting at or before `address` while some earlier
  // symbol may still reach it (max_end_ is a running maximum of the ends).
  size_t i = static_cast<size_t>(it - functions_.begin());
  const Symbol* exact_zero_size = nullptr;
  while (i > 0) {
    --i;
    if (max_end_[i] <= address && functions_[i].address != address) break;
    const Symbol& symbol = functions_[i];
    if (symbol.size == 0) {
      if (symbol.address == address && exact_zero_size == nullptr) exact_zero_size = &symbol;
      continue;
    }
    if (address - symbol.address < symbol.size) {
      // Prefer the first symbol of the nearest start address (global before local).
      size_t first = i;
      while (first > 0 && functions_[first - 1].address == symbol.address && functions_[first - 1].size > 0 &&
             address - functions_[first - 1].address < functions_[first - 1].size) {
        --first;
      }
      const Symbol* found = &functions_[first];
      if (exact_zero_size != nullptr && exact_zero_size->address > found->address) {
        return exact_zero_size;
      }
      return found;
    }
  }
  return exact_zero_size;
}

const Symbol* ElfFile::FindFunctionOrLabel(uint64_t address) const {
  const Symbol* found = FindFunctionByAddress(address);
  if (found != nullptr) return found;
  auto it = std::upper_bound(functions_.begin(), functions_.end(), address,
                             [](uint64_t a, const Symbol& s) { return a < s.address; });
  if (it == functions_.begin()) return nullptr;
  const size_t last = static_cast<size_t>(it - functions_.begin()) - 1;
  // No sized function covers `address`; a label qualifies only at or above the end of
  // every function starting before it (max_end_ is that running maximum).
  const uint64_t min_label = max_end_[last];
  // The section holding `address`.
  auto section = std::upper_bound(sections_.begin(), sections_.end(), address,
                                  [](uint64_t a, const Section& s) { return a < s.address; });
  if (section == sections_.begin()) return nullptr;
  --section;
  if (address - section->address >= section->size) return nullptr;
  for (size_t i = last + 1; i-- > 0;) {
    const Symbol& symbol = functions_[i];
    if (symbol.address < min_label) break;
    if (symbol.size == 0 && symbol.section == section->index) return &symbol;
  }
  return nullptr;
}

std::vector<std::string> ElfFile::ClosestNames(std::string_view name, size_t max_count) const {
  std::vector<std::string> result;
  if (max_count == 0 || name.empty()) return result;
  std::vector<std::string_view> candidates;
  candidates.reserve(functions_.size());
  for (const Symbol& symbol : functions_) {
    candidates.push_back(symbol.demangled != symbol.name ? StripParameters(symbol.demangled)
                                                         : std::string_view(symbol.name));
  }
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());

  const std::string query = ToLower(name);
  const size_t max_distance = std::max<size_t>(2, query.size() / 3);
  struct Scored {
    size_t score;
    std::string_view name;
  };
  std::vector<Scored> scored;
  for (std::string_view candidate : candidates) {
    const std::string lower = ToLower(candidate);
    size_t score;
    if (lower == query) {
      score = 0;
    } else if (lower.find(query) != std::string::npos) {
      score = 1;  // substring bonus: "compute" suggests "ns::compute_frame"
    } else {
      const size_t length_gap = lower.size() > query.size() ? lower.size() - query.size() : query.size() - lower.size();
      if (length_gap > max_distance) continue;
      score = EditDistance(query, lower);
      if (score > max_distance) continue;
    }
    scored.push_back({score, candidate});
  }
  std::sort(scored.begin(), scored.end(), [](const Scored& a, const Scored& b) {
    return std::make_tuple(a.score, a.name.size(), a.name) < std::make_tuple(b.score, b.name.size(), b.name);
  });
  for (size_t i = 0; i < scored.size() && result.size() < max_count; ++i) {
    result.emplace_back(scored[i].name);
  }
  return result;
}

Result<uint64_t> ElfFile::AddressToFileOffset(uint64_t address) const {
  const Segment* segment = SegmentFor(address);
  if (segment == nullptr) {
    return MakeError("address " + Hex(address) + " is outside the loadable segments of " + path_, ExitCode::kProfile);
  }
  return address - segment->vaddr + segment->offset;
}

Result<std::vector<uint8_t>> ElfFile::ReadAtAddress(uint64_t address, size_t length) const {
  const Segment* segment = SegmentFor(address);
  if (segment == nullptr) {
    return MakeError("address " + Hex(address) + " is outside the loadable segments of " + path_, ExitCode::kProfile);
  }
  const uint64_t delta = address - segment->vaddr;
  if (delta >= segment->filesz) {
    return MakeError("address " + Hex(address) + " of " + path_ + " has no file contents", ExitCode::kProfile);
  }
  const uint64_t offset = segment->offset + delta;
  uint64_t available = std::min<uint64_t>(length, segment->filesz - delta);
  available = offset < file_size_ ? std::min(available, file_size_ - offset) : 0;
  std::vector<uint8_t> bytes(available);
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = pread(handle_.fd, bytes.data() + done, bytes.size() - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return SystemError("cannot read " + path_ + " at offset " + Hex(offset + done), errno);
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  bytes.resize(done);
  if (bytes.empty() && length > 0) {
    return MakeError("cannot read " + path_ + " at address " + Hex(address) + ": file is truncated",
                     ExitCode::kProfile);
  }
  return bytes;
}

std::vector<const UsdtProbe*> ElfFile::FindUsdt(std::string_view provider, std::string_view name) const {
  auto matches = [](std::string_view pattern, const std::string& value) {
    if (pattern.empty()) return true;
    if (!IsSymbolGlob(pattern)) return pattern == value;
    return fnmatch(std::string(pattern).c_str(), value.c_str(), 0) == 0;
  };
  std::vector<const UsdtProbe*> result;
  for (const UsdtProbe& probe : usdt_probes_) {
    if (matches(provider, probe.provider) && matches(name, probe.name)) result.push_back(&probe);
  }
  return result;
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

namespace looptrace::symbols {

Result<uint64_t> ElfFile::FileOffsetToAddress(uint64_t offset) const {
  for (const Segment& segment : segments_) {
    if (offset >= segment.offset && offset < segment.offset + segment.filesz)
      return segment.vaddr + (offset - segment.offset);
  }
  return MakeError(fmt::format("{}: file offset {:#x} is in no loadable segment", path_, offset));
}

}  // namespace looptrace::symbols
