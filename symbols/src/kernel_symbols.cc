#include "looptrace/symbols/kernel_symbols.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>

#include "looptrace/util/first_use_cost.h"

namespace looptrace::symbols {

KernelSymbols KernelSymbols::Parse(std::string_view text) {
  KernelSymbols out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? text.npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    // "ffffffff81000000 T _stext" or "... t name\t[module]"
    size_t sp1 = line.find(' ');
    if (sp1 == std::string_view::npos || sp1 + 3 > line.size()) continue;
    char type = line[sp1 + 1];
    if (type != 't' && type != 'T' && type != 'w' && type != 'W') continue;
    uint64_t address = 0;
    auto [ptr, ec] = std::from_chars(line.data(), line.data() + sp1, address, 16);
    if (ec != std::errc() || address == 0) continue;
    std::string name(line.substr(sp1 + 3));
    if (size_t tab = name.find('\t'); tab != std::string::npos) name[tab] = ' ';
    out.symbols_.push_back({address, std::move(name)});
  }
  std::sort(out.symbols_.begin(), out.symbols_.end(),
            [](const Entry& a, const Entry& b) { return a.address < b.address; });
  return out;
}

Result<KernelSymbols> KernelSymbols::Load(const std::string& path) {
  FirstUseScope first_use;  // read once a session, at its first kernel stack
  std::ifstream in(path);
  if (!in) return MakeError(fmt::format("cannot read {}", path));
  std::stringstream text;
  text << in.rdbuf();
  KernelSymbols symbols = Parse(text.str());
  if (symbols.symbols_.empty()) return MakeError(fmt::format("{} shows no kernel addresses (kptr_restrict?)", path));
  return symbols;
}

std::string_view KernelSymbols::Name(uint64_t address) const {
  auto it = std::upper_bound(symbols_.begin(), symbols_.end(), address,
                             [](uint64_t a, const Entry& e) { return a < e.address; });
  if (it == symbols_.begin()) return {};
  return std::prev(it)->name;
}

}  // namespace looptrace::symbols
