#include "loader/decode/address_namer.h"

#include <fmt/format.h>

namespace looptrace::loader {

std::optional<std::string> SymbolizingAddressNamer::Name(uint32_t, uint64_t address) {
  auto where = symbolizer_.Symbolize(address);
  if (!where || where->function.empty()) return std::nullopt;
  if (where->function_offset == 0) return where->function;
  return fmt::format("{}+{:#x}", where->function, where->function_offset);
}

}  // namespace looptrace::loader
