// Names addresses: (pid, address) or (module path, ELF address) -> module, offset, function
// and, with DWARF (in the file or in a separate debug file), file:line and the chain of
// inlined frames, innermost first, as `eu-addr2line -f -i -C` prints them.
//
// Modules (ELF files) live in a ModuleCache keyed by file identity (device, inode, size,
// mtime) and by GNU build id, so one run loads each library once however many processes
// or sessions map it. Every address that cannot be named fully carries the cause
// (Degradation) and is counted in SymbolizerStats; bad input never crashes, it degrades to
// module + offset.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "looptrace/symbols/debug_file.h"
#include "looptrace/symbols/elf_file.h"
#include "looptrace/symbols/proc_maps.h"

namespace looptrace::symbols {

// Why an address was named less than fully (function and file:line). The first cause
// that applies, in this order.
enum class Degradation : uint8_t {
  kNone = 0,              // function and file:line
  kUnmapped,              // no mapping of the process holds the address
  kNotFileBacked,         // anonymous memory, [heap], [stack], [vdso], JIT code
  kModuleMissing,         // the mapped file is gone (deleted and unreachable, other namespace)
  kModuleUnreadable,      // the file exists but cannot be read (permissions, I/O)
  kModuleCorrupt,         // not an ELF file, truncated, malformed headers or symbol tables
  kNoSymbols,             // the module has no function symbols at all: module + offset
  kNoSymbolForAddress,    // no symbol covers the address: module + offset
  kNoDebugInfo,           // function only: no DWARF in the file and no debug file found
  kDebugCrcMismatch,      // function only: the debuglink file's CRC-32 differs
  kDebugBuildIdMismatch,  // function only: the debug file found has another build id
  kDebugFileUnreadable,   // function only: the debug file is not a readable ELF file
  kCorruptDwarf,          // function only: the DWARF could not be read
  kNoLineInfo,            // function only: the DWARF has no line for this address
};
inline constexpr size_t kDegradationCount = static_cast<size_t>(Degradation::kNoLineInfo) + 1;

// "none", "unmapped", "not-file-backed", "module-missing", ... "no-line-info".
std::string_view DegradationName(Degradation degradation);

// One function at an address: the physical function, or one inlined into the next frame.
struct SymbolFrame {
  std::string function;  // demangled, C++ with its parameter list; "" if unknown
  std::string file;      // source file as the line table names it; "" if unknown
  uint32_t line = 0;
  uint32_t column = 0;
  bool inlined = false;  // this frame was inlined into the next one

  // "file:line[:column]" or "??:0", like eu-addr2line.
  std::string Location() const;
};

struct Symbolization {
  std::string module;            // the module's path ("" when unmapped)
  std::string build_id;          // lower-case hex, "" if none
  uint64_t module_offset = 0;    // file offset of the address
  uint64_t elf_address = 0;      // link-time virtual address (what eu-addr2line -e takes)
  std::string function;          // demangled ELF symbol covering the address, "" if none
  uint64_t function_offset = 0;  // elf_address - the symbol's start
  // No symbol covers the address: where the function holding it starts (link-time address),
  // from the module's .eh_frame, so one function's addresses share a name.
  std::optional<uint64_t> unnamed_function_address;
  // Innermost first; the last frame is the physical (outermost) function. Without DWARF a
  // single frame named from the symbol table; empty when the function is unknown.
  std::vector<SymbolFrame> frames;
  Degradation degradation = Degradation::kNone;
};

// Counters for a Symbolizer (lookups) and its ModuleCache (modules). Plain data.
struct SymbolizerStats {
  // Per lookup.
  uint64_t lookups = 0;
  uint64_t cache_hits = 0;                                   // answered from a module's address cache
  std::array<uint64_t, kDegradationCount> by_degradation{};  // [kNone] = fully named

  // Per module load.
  uint64_t modules_loaded = 0;    // ELF files opened and read
  uint64_t modules_shared = 0;    // reused through the cache (same identity or build id)
  uint64_t modules_replaced = 0;  // mapped files replaced on disk since (read through map_files)
  uint64_t module_missing = 0;
  uint64_t module_unreadable = 0;
  uint64_t module_corrupt = 0;
  uint64_t module_no_symbols = 0;        // loaded, but without any function symbol
  uint64_t minidebuginfo_used = 0;       // symbols taken from .gnu_debugdata
  uint64_t dwarf_in_file = 0;            // DWARF read from the module itself
  uint64_t debug_file_found = 0;         // separate debug file accepted
  uint64_t debug_file_missing = 0;       // no DWARF in the file and no debug file found
  uint64_t debug_crc_mismatch = 0;       // debuglink candidates rejected for their CRC
  uint64_t debug_build_id_mismatch = 0;  // candidates rejected for their build id
  uint64_t debug_file_unreadable = 0;    // candidates that are not readable ELF files
  uint64_t corrupt_dwarf = 0;            // DWARF that libdw could not open or read

  // "name=value" pairs of the non-zero counters, in declaration order, for display.
  std::vector<std::pair<std::string, uint64_t>> NonZero() const;
  // One line: "lookups=10 none=7 no-debug-info=3 modules_loaded=2 ...".
  std::string ToString() const;
};

struct ModuleCacheOptions {
  DebugSearchOptions debug;
  // Results remembered per module (each (offset, dwarf) pair once); the cache is emptied
  // when it reaches this size.
  size_t address_cache_entries = size_t{1} << 18;
};

class DwarfLookup;       // internal (src/dwarf_lookup.h)
class EhFrameFunctions;  // internal (src/eh_frame_functions.h)

// Where a module's file is read from and what it is called.
struct ModuleLocation {
  std::string open_path;     // where to read it: /proc/PID/map_files/.., /proc/PID/root/..
  std::string display_path;  // its path as the process sees it
  std::string root;          // prefix for module-relative debug files ("" or /proc/PID/root)
};

// One ELF file and what is known about it. Thread-safe: lookups take a per-module lock.
class Module {
 public:
  Module(ModuleLocation location, Result<std::shared_ptr<const ElfFile>> elf, ModuleCacheOptions options);
  ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  const std::string& path() const { return location_.display_path; }
  const std::string& build_id() const { return build_id_; }
  // Null when the file could not be read; load_error() says why.
  const ElfFile* elf() const { return elf_.get(); }
  const std::string& load_error() const { return load_error_; }
  Degradation load_degradation() const { return load_degradation_; }
  // The accepted separate debug file, "" if none (or not searched yet).
  std::string debug_file() const;

  // Names the file offset `offset` (with DWARF when `use_dwarf`). Results are cached.
  std::shared_ptr<const Symbolization> SymbolizeOffset(uint64_t offset, bool use_dwarf, bool* cache_hit);
  // Same for a link-time virtual address.
  std::shared_ptr<const Symbolization> SymbolizeAddress(uint64_t elf_address, bool use_dwarf, bool* cache_hit);

 private:
  friend class ModuleCache;
  std::shared_ptr<const Symbolization> Compute(uint64_t offset, uint64_t elf_address, bool address_known,
                                               bool use_dwarf);
  void LoadDwarfLocked();

  ModuleLocation location_;
  std::shared_ptr<const ElfFile> elf_;  // shared with ModuleCache::Elf callers
  std::string build_id_;
  std::string load_error_;
  Degradation load_degradation_ = Degradation::kNone;
  const ModuleCacheOptions options_;

  mutable std::mutex mutex_;
  bool dwarf_loaded_ = false;
  std::unique_ptr<DwarfLookup> dwarf_;
  std::unique_ptr<EhFrameFunctions> eh_frame_;  // read at the first address no symbol names
  std::optional<ElfFile> debug_elf_;            // symbols of the debug file when the module has no .symtab
  Degradation dwarf_degradation_ = Degradation::kNoDebugInfo;
  std::string debug_file_;
  DebugFileSearch debug_search_;
  std::unordered_map<uint64_t, std::shared_ptr<const Symbolization>> cache_;
  // Counters to add to the ModuleCache's stats once DWARF is loaded.
  SymbolizerStats dwarf_stats_;
};

// Modules shared across processes and sessions of one run.
class ModuleCache {
 public:
  explicit ModuleCache(ModuleCacheOptions options = {});
  ModuleCache(const ModuleCache&) = delete;
  ModuleCache& operator=(const ModuleCache&) = delete;

  // The process-wide cache with default options (used by ProcessSymbolizer).
  static std::shared_ptr<ModuleCache> Default();

  // The module at `location`, loaded once per file identity and per build id. Never null:
  // a file that cannot be read gives a module whose elf() is null.
  std::shared_ptr<Module> Get(const ModuleLocation& location);
  // Same, for a plain path.
  std::shared_ptr<Module> Get(const std::string& path);
  // The ELF file at `path`, read once per file identity and shared with the module made for
  // that file (whose name and debug search stay the symbolizer's: a planner's path such as
  // /proc/PID/exe names no frame). Errors are ElfFile::Open's, never cached (a file missing
  // now may be there at the next call).
  Result<std::shared_ptr<const ElfFile>> Elf(const std::string& path);

  // Module-level counters (lookup counters are zero).
  SymbolizerStats stats() const;
  size_t size() const;
  const ModuleCacheOptions& options() const { return options_; }

 private:
  ModuleCacheOptions options_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<Module>> by_identity_;
  std::unordered_map<std::string, std::shared_ptr<Module>> by_build_id_;
  std::vector<std::shared_ptr<Module>> modules_;
  std::unordered_map<std::string, std::shared_ptr<const ElfFile>> elves_;  // by identity
  SymbolizerStats stats_;

  // The file of `identity` at `open_path`, read once (elves_).
  Result<std::shared_ptr<const ElfFile>> OpenShared(const std::string& identity, const std::string& open_path);
};

struct SymbolizerOptions {
  bool use_dwarf = true;  // false: ELF symbols only (function + offset)
  // A lookup outside every known mapping re-reads /proc/PID/maps at most this often.
  std::chrono::milliseconds maps_refresh_interval{200};
};

// Not thread-safe (one per thread); the ModuleCache may be shared between threads.
class Symbolizer {
 public:
  explicit Symbolizer(SymbolizerOptions options = {}, std::shared_ptr<ModuleCache> cache = ModuleCache::Default());

  // An address of process `pid`. /proc/PID/maps is read on first use (or SetMaps).
  std::shared_ptr<const Symbolization> Symbolize(int pid, uint64_t address) {
    return Symbolize(pid, address, options_.use_dwarf);
  }
  // Same, with or without DWARF whatever the options say.
  std::shared_ptr<const Symbolization> Symbolize(int pid, uint64_t address, bool use_dwarf);
  // A link-time virtual address of the ELF file at `path` (like eu-addr2line -e PATH).
  std::shared_ptr<const Symbolization> SymbolizeModule(const std::string& path, uint64_t elf_address);

  // Uses `maps` for `pid` (e.g. recorded ones) instead of reading /proc/PID/maps.
  void SetMaps(int pid, std::vector<MapEntry> maps);
  // Reads /proc/PID/maps now (keeps the old maps if the process is gone).
  void RefreshMaps(int pid);
  const std::vector<MapEntry>* Maps(int pid) const;
  void ForgetProcess(int pid);

  // Lookup counters of this symbolizer plus the module counters of its cache.
  SymbolizerStats stats() const;
  ModuleCache& cache() { return *cache_; }
  const SymbolizerOptions& options() const { return options_; }

 private:
  struct Process {
    std::vector<MapEntry> maps;                    // sorted by start
    std::vector<std::shared_ptr<Module>> modules;  // parallel to maps, loaded lazily
    std::chrono::steady_clock::time_point read_at{};
    bool fixed = false;  // from SetMaps: never re-read
  };
  Process& GetProcess(int pid);
  static void SortMaps(Process* process);
  std::shared_ptr<const Symbolization> Count(std::shared_ptr<const Symbolization> result, bool cache_hit);

  SymbolizerOptions options_;
  std::shared_ptr<ModuleCache> cache_;
  std::unordered_map<int, Process> processes_;
  std::unordered_map<std::string, std::shared_ptr<Module>> by_path_;
  std::set<std::pair<std::string, uint64_t>> replaced_seen_;  // (path, inode) counted in modules_replaced
  SymbolizerStats stats_;
};

}  // namespace looptrace::symbols
