#include "looptrace/symbols/process_symbolizer.h"

namespace looptrace::symbols {

void ProcessSymbolizer::ReadMaps() { symbolizer_.RefreshMaps(pid_); }

std::optional<SymbolizedAddress> ProcessSymbolizer::Symbolize(uint64_t address) {
  std::shared_ptr<const Symbolization> result = symbolizer_.Symbolize(pid_, address);
  if (result->module.empty() || result->degradation == Degradation::kUnmapped ||
      result->degradation == Degradation::kNotFileBacked) {
    return std::nullopt;
  }
  SymbolizedAddress out;
  out.module = result->module;
  out.module_offset = result->module_offset;
  out.function = result->function;
  out.function_offset = result->function_offset;
  return out;
}

std::shared_ptr<const Symbolization> ProcessSymbolizer::SymbolizeFull(uint64_t address) {
  return symbolizer_.Symbolize(pid_, address, /*use_dwarf=*/true);
}

}  // namespace looptrace::symbols
