#include "looptrace/symbols/symbolizer.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>

#include "dwarf_lookup.h"
#include "eh_frame_functions.h"
#include "looptrace/util/first_use_cost.h"
#include "looptrace/util/log.h"

namespace looptrace::symbols {
namespace {

constexpr std::string_view kDegradationNames[kDegradationCount] = {
    "none",
    "unmapped",
    "not-file-backed",
    "module-missing",
    "module-unreadable",
    "module-corrupt",
    "no-symbols",
    "no-symbol-for-address",
    "no-debug-info",
    "debug-crc-mismatch",
    "debug-build-id-mismatch",
    "debug-file-unreadable",
    "corrupt-dwarf",
    "no-line-info",
};

Degradation ClassifyOpenError(const Error& error) {
  if (error.message.find("No such file or directory") != std::string::npos ||
      error.message.find("Not a directory") != std::string::npos) {
    return Degradation::kModuleMissing;
  }
  if (error.code == ExitCode::kPermission || error.message.starts_with("cannot open") ||
      error.message.starts_with("cannot stat")) {
    return Degradation::kModuleUnreadable;
  }
  return Degradation::kModuleCorrupt;
}

std::shared_ptr<const Symbolization> Degraded(Degradation degradation) {
  auto result = std::make_shared<Symbolization>();
  result->degradation = degradation;
  return result;
}

// "dev:inode:size:mtime" of a file, "" if it cannot be stat'ed.
std::string FileIdentity(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return {};
  return fmt::format("{:x}:{:x}:{:x}:{}.{}", st.st_dev, st.st_ino, st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
}

void AddStats(const SymbolizerStats& from, SymbolizerStats* to) {
  to->modules_loaded += from.modules_loaded;
  to->modules_shared += from.modules_shared;
  to->module_missing += from.module_missing;
  to->module_unreadable += from.module_unreadable;
  to->module_corrupt += from.module_corrupt;
  to->module_no_symbols += from.module_no_symbols;
  to->minidebuginfo_used += from.minidebuginfo_used;
  to->dwarf_in_file += from.dwarf_in_file;
  to->debug_file_found += from.debug_file_found;
  to->debug_file_missing += from.debug_file_missing;
  to->debug_crc_mismatch += from.debug_crc_mismatch;
  to->debug_build_id_mismatch += from.debug_build_id_mismatch;
  to->debug_file_unreadable += from.debug_file_unreadable;
  to->corrupt_dwarf += from.corrupt_dwarf;
}

}  // namespace

std::string_view DegradationName(Degradation degradation) {
  const auto index = static_cast<size_t>(degradation);
  return index < kDegradationCount ? kDegradationNames[index] : "unknown";
}

std::string SymbolFrame::Location() const {
  if (file.empty()) return "??:0";
  if (column != 0) return fmt::format("{}:{}:{}", file, line, column);
  return fmt::format("{}:{}", file, line);
}

std::vector<std::pair<std::string, uint64_t>> SymbolizerStats::NonZero() const {
  std::vector<std::pair<std::string, uint64_t>> out;
  auto add = [&](std::string name, uint64_t value) {
    if (value != 0) out.emplace_back(std::move(name), value);
  };
  add("lookups", lookups);
  add("cache_hits", cache_hits);
  for (size_t i = 0; i < kDegradationCount; ++i) {
    add(std::string(kDegradationNames[i]), by_degradation[i]);
  }
  add("modules_loaded", modules_loaded);
  add("modules_shared", modules_shared);
  add("modules_replaced", modules_replaced);
  add("module_missing", module_missing);
  add("module_unreadable", module_unreadable);
  add("module_corrupt", module_corrupt);
  add("module_no_symbols", module_no_symbols);
  add("minidebuginfo_used", minidebuginfo_used);
  add("dwarf_in_file", dwarf_in_file);
  add("debug_file_found", debug_file_found);
  add("debug_file_missing", debug_file_missing);
  add("debug_crc_mismatch", debug_crc_mismatch);
  add("debug_build_id_mismatch", debug_build_id_mismatch);
  add("debug_file_unreadable", debug_file_unreadable);
  add("corrupt_dwarf", corrupt_dwarf);
  return out;
}

std::string SymbolizerStats::ToString() const {
  std::string out;
  for (const auto& [name, value] : NonZero()) {
    if (!out.empty()) out.push_back(' ');
    out += fmt::format("{}={}", name, value);
  }
  return out;
}

// ---------------------------------------------------------------------------------------
// Module

Module::Module(ModuleLocation location, Result<std::shared_ptr<const ElfFile>> elf, ModuleCacheOptions options)
    : location_(std::move(location)), options_(std::move(options)) {
  if (elf) {
    elf_ = std::move(*elf);
    build_id_ = elf_->build_id();
    if (elf_->functions().empty()) load_degradation_ = Degradation::kNoSymbols;
  } else {
    load_error_ = elf.error().message;
    load_degradation_ = ClassifyOpenError(elf.error());
    log::V1("symbolizer: {}", load_error_);
  }
}

Module::~Module() = default;

std::string Module::debug_file() const {
  std::lock_guard lock(mutex_);
  return debug_file_;
}

void Module::LoadDwarfLocked() {
  FirstUseScope first_use;
  dwarf_loaded_ = true;
  if (!elf_) return;
  DwarfLookup::OpenError error;
  if (elf_->has_debug_info()) {
    dwarf_ = DwarfLookup::Open(location_.open_path, &error);
    if (dwarf_) {
      ++dwarf_stats_.dwarf_in_file;
      dwarf_degradation_ = Degradation::kNone;
      return;
    }
    if (error.failure != DwarfLookup::OpenFailure::kNoDwarf) {
      ++dwarf_stats_.corrupt_dwarf;
      dwarf_degradation_ = Degradation::kCorruptDwarf;
      log::V1("symbolizer: {}", error.message);
      return;
    }
  }
  debug_search_ = FindDebugFile(*elf_, location_.display_path, location_.root, options_.debug);
  dwarf_stats_.debug_crc_mismatch += debug_search_.crc_mismatches;
  dwarf_stats_.debug_build_id_mismatch += debug_search_.build_id_mismatches;
  dwarf_stats_.debug_file_unreadable += debug_search_.unreadable;
  for (const std::string& rejected : debug_search_.rejected) {
    log::V1("symbolizer: debug file {} rejected: {}", location_.display_path, rejected);
  }
  if (!debug_search_.path.empty()) {
    dwarf_ = DwarfLookup::Open(debug_search_.path, &error);
    if (dwarf_) {
      ++dwarf_stats_.debug_file_found;
      debug_file_ = debug_search_.path;
      dwarf_degradation_ = Degradation::kNone;
      // A stripped module names its local functions from the debug file's .symtab.
      if (!elf_->has_symtab()) {
        if (auto debug_elf = ElfFile::Open(debug_search_.path)) debug_elf_.emplace(std::move(*debug_elf));
      }
      return;
    }
    ++dwarf_stats_.corrupt_dwarf;
    dwarf_degradation_ = Degradation::kCorruptDwarf;
    log::V1("symbolizer: {}", error.message);
    return;
  }
  if (debug_search_.crc_mismatches > 0) {
    dwarf_degradation_ = Degradation::kDebugCrcMismatch;
  } else if (debug_search_.build_id_mismatches > 0) {
    dwarf_degradation_ = Degradation::kDebugBuildIdMismatch;
  } else if (debug_search_.unreadable > 0) {
    dwarf_degradation_ = Degradation::kDebugFileUnreadable;
  } else {
    ++dwarf_stats_.debug_file_missing;
    dwarf_degradation_ = Degradation::kNoDebugInfo;
  }
}

std::shared_ptr<const Symbolization> Module::Compute(uint64_t offset, uint64_t elf_address, bool address_known,
                                                     bool use_dwarf) {
  auto result = std::make_shared<Symbolization>();
  result->module = location_.display_path;
  result->build_id = build_id_;
  result->module_offset = offset;
  result->elf_address = elf_address;
  if (!elf_) {
    result->degradation = load_degradation_;
    return result;
  }
  if (address_known) {
    if (auto file_offset = elf_->AddressToFileOffset(elf_address)) result->module_offset = *file_offset;
  } else {
    auto address = elf_->FileOffsetToAddress(offset);
    if (!address) {
      result->degradation = Degradation::kNoSymbolForAddress;
      return result;
    }
    result->elf_address = *address;
  }
  const uint64_t address = result->elf_address;

  if (use_dwarf && !dwarf_loaded_) LoadDwarfLocked();
  // The debug file's .symtab replaces the .dynsym of a stripped module (as in libdwfl).
  const ElfFile& symbols = debug_elf_ ? *debug_elf_ : *elf_;
  const Symbol* symbol = symbols.FindFunctionOrLabel(address);
  if (symbol != nullptr) {
    result->function = symbol->demangled;
    result->function_offset = address - symbol->address;
  }

  DwarfLookup::Answer answer;
  if (use_dwarf && dwarf_) answer = dwarf_->Lookup(address);
  if (answer.status != DwarfLookup::Status::kNoCu) {
    result->frames = std::move(answer.frames);
    if (!answer.has_function) result->frames.front().function = result->function;
  } else if (symbol != nullptr) {
    result->frames.emplace_back().function = result->function;
  }

  const bool named = !result->frames.empty() && !result->frames.front().function.empty();
  if (!named) {
    // Line information without a function (padding inside a compile unit) stays.
    if (!answer.has_line) result->frames.clear();
    if (!eh_frame_) eh_frame_ = std::make_unique<EhFrameFunctions>(elf_->elf());
    result->unnamed_function_address = eh_frame_->FunctionStart(address);
    // A rejected or broken debug file is the actionable cause; else the symbol table's.
    if (use_dwarf && !dwarf_ && dwarf_degradation_ != Degradation::kNoDebugInfo &&
        dwarf_degradation_ != Degradation::kNone) {
      result->degradation = dwarf_degradation_;
    } else {
      result->degradation = symbols.functions().empty() ? Degradation::kNoSymbols : Degradation::kNoSymbolForAddress;
    }
  } else if (!use_dwarf) {
    result->degradation = Degradation::kNone;
  } else if (!dwarf_) {
    result->degradation = dwarf_degradation_;
  } else if (answer.status == DwarfLookup::Status::kError) {
    result->degradation = Degradation::kCorruptDwarf;
  } else if (answer.status == DwarfLookup::Status::kNoCu || !answer.has_line) {
    result->degradation = Degradation::kNoLineInfo;
  }
  return result;
}

std::shared_ptr<const Symbolization> Module::SymbolizeOffset(uint64_t offset, bool use_dwarf, bool* cache_hit) {
  const uint64_t key = (offset << 2) | (use_dwarf ? 1 : 0);
  std::lock_guard lock(mutex_);
  if (auto it = cache_.find(key); it != cache_.end()) {
    *cache_hit = true;
    return it->second;
  }
  *cache_hit = false;
  auto result = Compute(offset, 0, false, use_dwarf);
  if (cache_.size() >= options_.address_cache_entries) cache_.clear();
  cache_.emplace(key, result);
  return result;
}

std::shared_ptr<const Symbolization> Module::SymbolizeAddress(uint64_t elf_address, bool use_dwarf, bool* cache_hit) {
  const uint64_t key = (elf_address << 2) | 2 | (use_dwarf ? 1 : 0);
  std::lock_guard lock(mutex_);
  if (auto it = cache_.find(key); it != cache_.end()) {
    *cache_hit = true;
    return it->second;
  }
  *cache_hit = false;
  auto result = Compute(0, elf_address, true, use_dwarf);
  if (cache_.size() >= options_.address_cache_entries) cache_.clear();
  cache_.emplace(key, result);
  return result;
}

// ---------------------------------------------------------------------------------------
// ModuleCache

ModuleCache::ModuleCache(ModuleCacheOptions options) : options_(std::move(options)) {}

std::shared_ptr<ModuleCache> ModuleCache::Default() {
  static const std::shared_ptr<ModuleCache> cache = std::make_shared<ModuleCache>();
  return cache;
}

std::shared_ptr<Module> ModuleCache::Get(const std::string& path) { return Get(ModuleLocation{path, path, ""}); }

std::shared_ptr<Module> ModuleCache::Get(const ModuleLocation& location) {
  const std::string identity = FileIdentity(location.open_path);
  const std::string key = identity.empty() ? "missing:" + location.open_path : identity;
  {
    std::lock_guard lock(mutex_);
    if (auto it = by_identity_.find(key); it != by_identity_.end()) {
      ++stats_.modules_shared;
      return it->second;
    }
  }
  // Another file with the same build id (a copy in a container, a hard link elsewhere).
  std::string build_id;
  if (!identity.empty()) {
    if (auto id = ReadBuildId(location.open_path)) build_id = std::move(*id);
  }
  if (!build_id.empty()) {
    std::lock_guard lock(mutex_);
    if (auto it = by_build_id_.find(build_id); it != by_build_id_.end()) {
      ++stats_.modules_shared;
      by_identity_.emplace(key, it->second);
      return it->second;
    }
  }
  auto module = std::make_shared<Module>(location, OpenShared(identity, location.open_path), options_);
  std::lock_guard lock(mutex_);
  if (auto it = by_identity_.find(key); it != by_identity_.end()) {
    ++stats_.modules_shared;  // loaded by another thread meanwhile
    return it->second;
  }
  switch (module->load_degradation()) {
    case Degradation::kModuleMissing:
      ++stats_.module_missing;
      break;
    case Degradation::kModuleUnreadable:
      ++stats_.module_unreadable;
      break;
    case Degradation::kModuleCorrupt:
      ++stats_.module_corrupt;
      break;
    case Degradation::kNoSymbols:
      ++stats_.module_no_symbols;
      break;
    default:
      break;
  }
  if (module->elf() != nullptr) {
    ++stats_.modules_loaded;
    if (module->elf()->minidebuginfo_functions() > 0) ++stats_.minidebuginfo_used;
  }
  by_identity_.emplace(key, module);
  // Only a module that loaded cleanly stands for its build id (a corrupt copy must not
  // shadow a good file with the same id).
  if (!module->build_id().empty() && module->load_degradation() == Degradation::kNone) {
    by_build_id_.emplace(module->build_id(), module);
  }
  modules_.push_back(module);
  return module;
}

Result<std::shared_ptr<const ElfFile>> ModuleCache::OpenShared(const std::string& identity,
                                                               const std::string& open_path) {
  if (!identity.empty()) {
    std::lock_guard lock(mutex_);
    if (auto it = elves_.find(identity); it != elves_.end()) return it->second;
  }
  FirstUseScope first_use;
  ASSIGN_OR_RETURN(ElfFile opened, ElfFile::Open(open_path));
  auto elf = std::make_shared<const ElfFile>(std::move(opened));
  if (identity.empty()) return elf;
  std::lock_guard lock(mutex_);
  return elves_.try_emplace(identity, std::move(elf)).first->second;  // another thread's, if first
}

Result<std::shared_ptr<const ElfFile>> ModuleCache::Elf(const std::string& path) {
  return OpenShared(FileIdentity(path), path);
}

SymbolizerStats ModuleCache::stats() const {
  std::vector<std::shared_ptr<Module>> modules;
  SymbolizerStats stats;
  {
    std::lock_guard lock(mutex_);
    stats = stats_;
    modules = modules_;
  }
  for (const auto& module : modules) {
    std::lock_guard lock(module->mutex_);
    AddStats(module->dwarf_stats_, &stats);
  }
  return stats;
}

size_t ModuleCache::size() const {
  std::lock_guard lock(mutex_);
  return modules_.size();
}

// ---------------------------------------------------------------------------------------
// Symbolizer

Symbolizer::Symbolizer(SymbolizerOptions options, std::shared_ptr<ModuleCache> cache)
    : options_(options), cache_(cache ? std::move(cache) : std::make_shared<ModuleCache>()) {}

void Symbolizer::SortMaps(Process* process) {
  std::stable_sort(process->maps.begin(), process->maps.end(),
                   [](const MapEntry& a, const MapEntry& b) { return a.start < b.start; });
  process->modules.assign(process->maps.size(), nullptr);
}

Symbolizer::Process& Symbolizer::GetProcess(int pid) {
  auto [it, inserted] = processes_.try_emplace(pid);
  if (inserted) RefreshMaps(pid);
  return it->second;
}

void Symbolizer::SetMaps(int pid, std::vector<MapEntry> maps) {
  Process& process = processes_[pid];
  process.maps = std::move(maps);
  process.fixed = true;
  SortMaps(&process);
}

void Symbolizer::RefreshMaps(int pid) {
  Process& process = processes_[pid];
  process.read_at = std::chrono::steady_clock::now();
  if (process.fixed) return;
  auto maps = ReadProcMaps(pid);
  if (!maps) return;  // gone: keep what we had, addresses stay nameable
  process.maps = std::move(*maps);
  SortMaps(&process);
}

const std::vector<MapEntry>* Symbolizer::Maps(int pid) const {
  auto it = processes_.find(pid);
  return it == processes_.end() ? nullptr : &it->second.maps;
}

void Symbolizer::ForgetProcess(int pid) { processes_.erase(pid); }

std::shared_ptr<const Symbolization> Symbolizer::Count(std::shared_ptr<const Symbolization> result, bool cache_hit) {
  ++stats_.lookups;
  if (cache_hit) ++stats_.cache_hits;
  ++stats_.by_degradation[static_cast<size_t>(result->degradation)];
  return result;
}

std::shared_ptr<const Symbolization> Symbolizer::Symbolize(int pid, uint64_t address, bool use_dwarf) {
  Process* process = &GetProcess(pid);
  auto find = [&]() -> ptrdiff_t {
    auto it = std::upper_bound(process->maps.begin(), process->maps.end(), address,
                               [](uint64_t a, const MapEntry& m) { return a < m.start; });
    if (it == process->maps.begin()) return -1;
    --it;
    return address < it->end ? it - process->maps.begin() : -1;
  };
  ptrdiff_t index = find();
  if (index < 0 && !process->fixed &&
      std::chrono::steady_clock::now() - process->read_at > options_.maps_refresh_interval) {
    RefreshMaps(pid);
    index = find();
  }
  if (index < 0) {
    static const auto kUnmapped = Degraded(Degradation::kUnmapped);
    return Count(kUnmapped, false);
  }
  const MapEntry& map = process->maps[static_cast<size_t>(index)];
  if (!map.is_file()) {
    auto result = std::make_shared<Symbolization>();
    result->module = map.path;
    result->module_offset = address - map.start + map.offset;
    result->degradation = Degradation::kNotFileBacked;
    return Count(std::move(result), false);
  }
  std::shared_ptr<Module>& module = process->modules[static_cast<size_t>(index)];
  if (!module) {
    // Deleted or replaced files only through map_files; others through the process's root
    // (its mount namespace), then as seen from here (the process may be gone).
    const MappedFileLocation located = LocateMappedFile(pid, map);
    if (located.replaced && replaced_seen_.emplace(map.path, map.inode).second) ++stats_.modules_replaced;
    // Another program lies at the path and the mapped one cannot be read: a module that
    // cannot be opened names nothing, which is better than a wrong name.
    const std::string open_path =
        located.trusted ? located.path : fmt::format("/proc/{}/map_files/{:x}-{:x}", pid, map.start, map.end);
    module =
        cache_->Get(ModuleLocation{open_path, map.path, open_path == map.path ? std::string() : ProcRootPath(pid, "")});
  }
  bool hit = false;
  auto result = module->SymbolizeOffset(address - map.start + map.offset, use_dwarf, &hit);
  return Count(std::move(result), hit);
}

std::shared_ptr<const Symbolization> Symbolizer::SymbolizeModule(const std::string& path, uint64_t elf_address) {
  std::shared_ptr<Module>& module = by_path_[path];
  if (!module) module = cache_->Get(path);
  bool hit = false;
  auto result = module->SymbolizeAddress(elf_address, options_.use_dwarf, &hit);
  return Count(std::move(result), hit);
}

SymbolizerStats Symbolizer::stats() const {
  SymbolizerStats stats = cache_->stats();
  stats.lookups = stats_.lookups;
  stats.cache_hits = stats_.cache_hits;
  stats.modules_replaced = stats_.modules_replaced;
  stats.by_degradation = stats_.by_degradation;
  return stats;
}

}  // namespace looptrace::symbols
