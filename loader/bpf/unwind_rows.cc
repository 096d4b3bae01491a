#include "loader/bpf/unwind_rows.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <set>

#include "looptrace/symbols/elf_file.h"
#include "looptrace/symbols/proc_maps.h"
#include "looptrace/util/first_use_cost.h"
#include "looptrace/util/log.h"

namespace looptrace::loader {
namespace {

std::string ExeOf(const std::string& proc_exe) {
  char target[4096];
  const ssize_t n = readlink(proc_exe.c_str(), target, sizeof(target));
  return n > 0 ? std::string(target, static_cast<size_t>(n)) : std::string();
}

// The rows in the BPF walker's form; empty when the module does not fit it (code above
// 4 GiB of virtual addresses).
std::vector<lt_unwind_row> BpfRows(const symbols::UnwindTable& table) {
  std::vector<lt_unwind_row> rows;
  rows.reserve(table.rows.size());
  for (const symbols::UnwindRow& row : table.rows) {
    if (row.start > std::numeric_limits<uint32_t>::max()) return {};
    lt_unwind_row out{};
    out.start = static_cast<uint32_t>(row.start);
    out.cfa_offset = row.cfa_offset;
    out.rbp_offset = static_cast<int16_t>(row.rbp_offset);
    out.flags = static_cast<uint8_t>((row.rbp == symbols::RbpRule::kAtCfa ? LT_ROW_RBP_SAVED : 0) |
                                     (row.outermost ? LT_ROW_OUTERMOST : 0) | ((row.plt_threshold & 0xf) << 4));
    switch (row.cfa) {
      case symbols::CfaRule::kNoCfi:
        out.cfa_rule = LT_CFA_NONE;
        break;
      case symbols::CfaRule::kRspOffset:
        out.cfa_rule = LT_CFA_RSP;
        break;
      case symbols::CfaRule::kRbpOffset:
        out.cfa_rule = LT_CFA_RBP;
        break;
      case symbols::CfaRule::kPltStub:
        out.cfa_rule = LT_CFA_PLT;
        break;
      case symbols::CfaRule::kUnsupported:
        out.cfa_rule = LT_CFA_UNSUPPORTED;
        break;
    }
    // An rbp saved further than 32 KiB from the CFA: the BPF row cannot say where.
    if (row.rbp == symbols::RbpRule::kAtCfa && out.rbp_offset != row.rbp_offset) out.cfa_rule = LT_CFA_UNSUPPORTED;
    rows.push_back(out);
  }
  return rows;
}

}  // namespace

int64_t UnwindRowsPublisher::FirstRowOf(const symbols::TableUnwinder::MappedModule& module) {
  if (auto it = first_rows_.find(module.table); it != first_rows_.end()) return it->second;
  if (without_room_.contains(module.table)) return -1;
  const std::vector<lt_unwind_row> rows = BpfRows(*module.table);
  if (rows.empty()) return -1;
  if (next_row_ > capacity_ || capacity_ - next_row_ < rows.size()) {
    without_room_.insert(module.table);  // counted once, not tried at every look at the maps
    log::Warning(
        "stack walker: no room left for the {} .eh_frame rows of {} ({} of {} used): stacks through it "
        "stop there",
        rows.size(), module.path, next_row_, capacity_);
    return -1;
  }
  if (auto written = bpf_->WriteUnwindRows(next_row_, rows); !written) {
    log::V1("stack walker: no rows for {}: {}", module.path, written.error().message);
    return -1;
  }
  const uint32_t first = next_row_;
  next_row_ += static_cast<uint32_t>(rows.size());
  first_rows_.emplace(module.table, first);
  return first;
}

void UnwindRowsPublisher::CompileMapped() {
  auto maps = symbols::ReadProcMaps(pid_);
  if (!maps) return;
  for (const symbols::MapEntry& map : *maps) {
    if (!map.is_executable() || !(map.is_file() || map.path == "[vdso]")) continue;
    const symbols::TableUnwinder::MappedModule* module = tables_.ModuleOf(pid_, map);
    if (module != nullptr && module->table != nullptr) compiled_rows_ += module->table->rows.size();
  }
}

size_t UnwindRowsPublisher::RowCapacity() const {
  // Room for what dlopen brings later: half as much again, and at least 512 Ki rows (6 MiB),
  // for one library as big as libcrypto (~86 Ki rows, loaded by Python's ssl and hashlib)
  // should not leave a small extension loaded after it without rows (CI saw _asyncio's walks
  // stop so). At most 4 Mi rows (48 MiB).
  const size_t room = std::max<size_t>(compiled_rows_ / 2, 512u << 10);
  return std::min<size_t>(compiled_rows_ + room, 4u << 20);
}

void UnwindRowsPublisher::Precompile(const std::string& exe_path, const std::string& ld_library_path) {
  const auto began = std::chrono::steady_clock::now();
  std::vector<std::string> pending = {exe_path};
  std::set<std::string> seen = {exe_path};
  size_t compiled = 0;
  while (!pending.empty() && seen.size() < LT_MAX_UNWIND_MODULES) {
    const std::string path = std::move(pending.back());
    pending.pop_back();
    if (const symbols::UnwindTable* table = tables_.TableFor(path); table != nullptr) {
      ++compiled;
      compiled_rows_ += table->rows.size();
    }
    auto dynamic = symbols::ReadDynamicInfo(path);
    if (!dynamic) continue;
    for (const std::string& needed : dynamic->needed) {
      auto library = symbols::SearchLibrary(needed, ld_library_path, exe_path);
      if (library && seen.insert(*library).second) pending.push_back(*library);
    }
  }
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - began).count();
  log::V1("stack walker: .eh_frame rows of {} and {} libraries compiled ({} ms)", exe_path, compiled - 1, ms);
}

void UnwindRowsPublisher::Sync() {
  if (bpf_ == nullptr) return;
  const std::string exe = ExeOf("/proc/" + std::to_string(pid_) + "/exe");
  if (exe.empty() || exe == ExeOf("/proc/self/exe")) return;
  auto maps = symbols::ReadProcMaps(pid_);
  if (!maps) return;
  std::vector<MappingKey> keys;
  for (const symbols::MapEntry& map : *maps) {
    if (map.is_executable() && (map.is_file() || map.path == "[vdso]"))
      keys.emplace_back(map.start, map.end, map.inode);
  }
  if (keys == published_) return;

  FirstUseScope first_use;  // new mappings' rows: compiled and written once
  const auto began = std::chrono::steady_clock::now();
  std::vector<lt_unwind_module> modules;
  for (const symbols::MapEntry& map : *maps) {
    if (!map.is_executable() || !(map.is_file() || map.path == "[vdso]")) continue;
    const symbols::TableUnwinder::MappedModule* module = tables_.ModuleOf(pid_, map);
    if (module == nullptr || module->table == nullptr) continue;
    const int64_t first_row = FirstRowOf(*module);
    if (first_row < 0) continue;
    lt_unwind_module entry{};
    entry.start = map.start;
    entry.end = map.end;
    entry.bias = module->bias;
    entry.first_row = static_cast<uint32_t>(first_row);
    entry.rows = static_cast<uint32_t>(module->table->rows.size());
    if (is_interpreter_ && is_interpreter_(map.path.substr(map.path.find_last_of('/') + 1)))
      entry.flags |= LT_MODULE_INTERPRETER;
    modules.push_back(entry);
  }
  std::sort(modules.begin(), modules.end(),
            [](const lt_unwind_module& a, const lt_unwind_module& b) { return a.start < b.start; });
  if (auto published = bpf_->PublishUnwindModules(modules); !published) {
    log::Warning("stack walker: {}; sampled stacks keep the frame-pointer walk", published.error().message);
    return;
  }
  published_ = std::move(keys);
  modules_published_ = modules.size();
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - began).count();
  log::V1("stack walker: .eh_frame rows of {} mappings published ({} of {} rows used, {} ms)", modules.size(),
          next_row_, capacity_, ms);
}

}  // namespace looptrace::loader
