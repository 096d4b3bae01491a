// One ELF file (executable, shared library or object): its functions, USDT probes,
// build id and address-to-file-offset mapping, read in one pass with libelf.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "looptrace/util/result.h"

struct Elf;  // libelf's handle (<libelf.h> declares `typedef struct Elf Elf;`)

namespace looptrace::symbols {

struct Symbol {
  std::string name;                // raw (mangled) name, without @version suffix
  std::string demangled;           // abi::__cxa_demangle result, or == name if not mangled
  std::string version;             // from .gnu.version/.gnu.version_d (or a name@VERSION suffix)
  bool is_default_version = true;  // false for a hidden version (name@VERSION, not @@)
  uint64_t address = 0;            // st_value (virtual address in the ELF)
  uint64_t size = 0;
  uint64_t file_offset = 0;  // file offset of `address`; 0 if no PT_LOAD segment holds it
  bool is_ifunc = false;
  uint8_t binding = 0;   // STB_LOCAL (0), STB_GLOBAL (1), STB_WEAK (2), ...
  uint32_t section = 0;  // st_shndx
};

struct UsdtProbe {
  std::string provider;
  std::string name;
  uint64_t address = 0;                // note pc, adjusted for prelink via .stapsdt.base like libbpf
  uint64_t file_offset = 0;            // what the kernel's uprobe wants
  uint64_t semaphore_address = 0;      // 0 if none
  uint64_t semaphore_file_offset = 0;  // ref_ctr_offset for the kernel; 0 if none
  std::string arguments;               // the note's argument string, e.g. "8@%rdi -8@%rax"
};

// The parts of the dynamic section a library search needs.
struct DynamicInfo {
  std::string soname;               // DT_SONAME
  std::vector<std::string> needed;  // DT_NEEDED, in order
  std::string rpath;                // DT_RPATH, unexpanded ("$ORIGIN/../lib")
  std::string runpath;              // DT_RUNPATH, unexpanded
};

// The .gnu_debuglink section: the name of the separate debug file and the CRC-32 of its
// contents (zlib's crc32, as gdb and elfutils compute it).
struct DebugLink {
  std::string name;
  uint32_t crc = 0;
};

// Immutable after Open: const methods may be called from several threads.
class ElfFile {
 public:
  // Reads .symtab and .dynsym, the USDT notes, the GNU build-id note and the dynamic
  // section in one pass. Errors name the file: "cannot open /x: No such file or
  // directory", "cannot read /x: not an ELF file", ...
  static Result<ElfFile> Open(const std::string& path);

  ElfFile(ElfFile&& other) noexcept = default;
  ElfFile& operator=(ElfFile&& other) noexcept = default;
  ElfFile(const ElfFile&) = delete;
  ElfFile& operator=(const ElfFile&) = delete;
  ~ElfFile() = default;

  const std::string& path() const { return path_; }
  const std::string& build_id() const { return build_id_; }  // lower-case hex, "" if none
  bool is_pie_or_shared() const { return is_dyn_; }          // ET_DYN
  const DynamicInfo& dynamic() const { return dynamic_; }
  // .gnu_debuglink, if the file has a well-formed one.
  const std::optional<DebugLink>& debuglink() const { return debuglink_; }
  // The file carries DWARF: a .debug_info (or legacy .zdebug_info) section with contents.
  bool has_debug_info() const { return has_debug_info_; }
  // The file has a .symtab (it is not stripped of its static symbols).
  bool has_symtab() const { return has_symtab_; }
  // Functions taken from the MiniDebugInfo (.gnu_debugdata, xz) embedded symbol table,
  // read when the file has no .symtab of its own. 0 when none.
  size_t minidebuginfo_functions() const { return minidebuginfo_functions_; }
  // Why the embedded MiniDebugInfo could not be read ("" if it was read or is absent).
  const std::string& minidebuginfo_error() const { return minidebuginfo_error_; }
  // Symbols and notes skipped because they were malformed (bad string offsets, short
  // USDT notes, probes outside every segment).
  size_t malformed_entries() const { return malformed_entries_; }

  // STT_FUNC and STT_GNU_IFUNC symbols with st_shndx != SHN_UNDEF from both symbol
  // tables, one entry per (name, address), sorted by address (then global before weak
  // before local, then name). When one address carries several versions of a name
  // (dlopen@GLIBC_2.2.5, dlopen@@GLIBC_2.34), the entry keeps the default version.
  const std::vector<Symbol>& functions() const { return functions_; }

  // FindFunctionByAddress, and when no function with a size covers `address`, the nearest
  // preceding size-0 function (an assembly label without .size) in the same section that
  // no sized function reaches past, as elfutils' dwfl_module_addrsym picks it. nullptr in
  // padding after a sized function.
  const Symbol* FindFunctionOrLabel(uint64_t address) const;

  // Exact match on the raw name, the demangled name, or the demangled name without its
  // parameter list ("ns::Foo::bar" finds "ns::Foo::bar(int) const"). If the pattern
  // contains '*', '?' or '[', an fnmatch(3) glob on the raw and demangled names instead.
  // Sorted by address, unique.
  std::vector<const Symbol*> FindFunctions(std::string_view name_or_glob) const;

  // The nearest preceding function that contains `address` (address < start + size;
  // size-0 symbols match only their exact address); nullptr if none.
  const Symbol* FindFunctionByAddress(uint64_t address) const;

  // Up to `max_count` function names close to `name` (edit distance, ignoring case, with
  // a bonus for substring matches), best first, ties by name. Returns the raw name for C
  // symbols and the demangled name without parameters for C++ ones. Names too far from
  // `name` are left out, so the result may be empty.
  std::vector<std::string> ClosestNames(std::string_view name, size_t max_count) const;

  // File offset of a virtual address, through the PT_LOAD segment containing it
  // (section headers for files without program headers, e.g. relocatable objects).
  Result<uint64_t> AddressToFileOffset(uint64_t address) const;

  // Virtual address of a file offset, through the PT_LOAD segment whose file contents
  // contain it (the inverse of AddressToFileOffset).
  Result<uint64_t> FileOffsetToAddress(uint64_t offset) const;

  // Up to `length` bytes of the file at virtual address `address`. The result is shorter
  // when the segment's file contents end earlier; an error if no byte is available.
  Result<std::vector<uint8_t>> ReadAtAddress(uint64_t address, size_t length) const;

  // The 8-byte pointer stored at virtual address `address` as the dynamic loader leaves it:
  // in a shared object or PIE, a R_X86_64_RELATIVE (or R_X86_64_64 against a defined
  // symbol) relocation at that address gives its value; otherwise the file's bytes.
  std::optional<uint64_t> ReadPointer(uint64_t address) const;

  // The address of a defined data symbol (STT_OBJECT, local ones included) named exactly
  // `name`, from .symtab then .dynsym: for reading a runtime's flag in a live process.
  std::optional<uint64_t> FindObject(std::string_view name) const;

  const std::vector<UsdtProbe>& usdt_probes() const { return usdt_probes_; }
  // Probes with this provider and name (empty provider: any provider), by address.
  std::vector<const UsdtProbe*> FindUsdt(std::string_view provider, std::string_view name) const;

  // The libelf handle, owned by this object (for DWARF readers layered on top).
  ::Elf* elf() const { return handle_.elf; }

 private:
  // Owns the file descriptor and the libelf handle.
  struct Handle {
    int fd = -1;
    ::Elf* elf = nullptr;
    Handle() = default;
    Handle(Handle&& other) noexcept;
    Handle& operator=(Handle&& other) noexcept;
    Handle(const Handle&) = delete;
    Handle& operator=(const Handle&) = delete;
    ~Handle();
  };
  struct Segment {
    uint64_t vaddr = 0;
    uint64_t memsz = 0;
    uint64_t offset = 0;
    uint64_t filesz = 0;
    bool executable = false;
  };

  // What every step needs from the ELF header.
  struct Layout {
    bool is64 = false;
    bool swap = false;  // the file's byte order differs from ours
  };
  struct NoteSegment {
    uint64_t offset = 0;
    uint64_t size = 0;
    uint64_t align = 0;
  };
  struct SectionRefs;  // the sections ScanSections found (src/elf_internal.h)

  ElfFile() = default;
  // Open's work, one step per part of the file (each documented where it is defined:
  // elf_file.cc, elf_notes.cc, elf_symbols.cc).
  Result<void> Load();
  Result<Layout> ReadHeader();
  Result<void> ReadProgramHeaders(std::vector<NoteSegment>* note_segments);
  Result<void> ScanSections(SectionRefs* refs);
  Result<void> ReadNotes(const SectionRefs& refs, const std::vector<NoteSegment>& note_segments, const Layout& layout);
  void AddNote(std::string_view owner, uint32_t type, const uint8_t* desc, size_t size, const Layout& layout,
               uint64_t stapsdt_base);
  void SetBuildId(const uint8_t* desc, size_t size);
  void AddUsdtNote(const uint8_t* desc, size_t size, bool is64, bool swap, uint64_t stapsdt_base);
  Result<std::vector<Symbol>> ReadSymbols(const SectionRefs& refs);
  void IndexFunctions(std::vector<Symbol> symbols);
  const Segment* SegmentFor(uint64_t address) const;

  std::string path_;
  Handle handle_;
  uint64_t file_size_ = 0;
  bool is_dyn_ = false;
  std::string build_id_;
  DynamicInfo dynamic_;
  struct Section {
    uint64_t address = 0;
    uint64_t size = 0;
    uint32_t index = 0;
  };
  std::vector<Segment> segments_;  // PT_LOAD, or SHF_ALLOC sections as a fallback
  std::vector<Section> sections_;  // SHF_ALLOC sections with an address, by address
  std::vector<Symbol> functions_;
  std::vector<uint64_t> max_end_;  // max(address + size) over functions_[0..i]
  // raw and parameter-less demangled names -> index into functions_. The keys view
  // strings owned by functions_, whose heap buffer survives moves of this object.
  std::unordered_multimap<std::string_view, uint32_t> by_name_;
  std::vector<UsdtProbe> usdt_probes_;
  size_t malformed_entries_ = 0;
  std::optional<DebugLink> debuglink_;
  bool has_debug_info_ = false;
  bool has_symtab_ = false;
  size_t minidebuginfo_functions_ = 0;
  std::string minidebuginfo_error_;
};

// Largest symbol table ElfFile reads (entries); larger tables are an error, so a corrupt or
// hostile sh_size cannot exhaust memory.
inline constexpr size_t kMaxSymbolTableEntries = 32u << 20;

// Decompresses an xz stream (MiniDebugInfo) of at most `max_output` bytes.
Result<std::vector<uint8_t>> DecompressXz(const uint8_t* data, size_t size, size_t max_output);

// Reads only the dynamic section of `path` (cheaper than ElfFile::Open).
Result<DynamicInfo> ReadDynamicInfo(const std::string& path);

}  // namespace looptrace::symbols
