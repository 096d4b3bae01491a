#include "eh_frame_functions.h"

#include <gelf.h>
#include <libelf.h>

#include <algorithm>
#include <cstring>
#include <string_view>

namespace looptrace::symbols {
namespace {

// DW_EH_PE encodings (LSB "Exception Frames"): the ones GNU ld and lld write.
constexpr uint8_t kPcRelSdata4 = 0x1b;    // eh_frame_ptr, and FDEs' pc_begin
constexpr uint8_t kUdata4 = 0x03;         // fde_count
constexpr uint8_t kDataRelSdata4 = 0x3b;  // the search table's pairs

struct SectionBytes {
  uint64_t address = 0;
  const uint8_t* data = nullptr;
  size_t size = 0;

  bool Has(uint64_t at, size_t n) const { return at >= address && at - address <= size && size - (at - address) >= n; }
  int32_t Sdata4(uint64_t at) const {
    int32_t v;
    std::memcpy(&v, data + (at - address), 4);
    return v;
  }
  uint32_t Udata4(uint64_t at) const { return static_cast<uint32_t>(Sdata4(at)); }
};

SectionBytes FindSection(::Elf* elf, std::string_view name) {
  size_t strings = 0;
  if (elf_getshdrstrndx(elf, &strings) != 0) return {};
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr header;
    if (!gelf_getshdr(scn, &header) || header.sh_type == SHT_NOBITS) continue;
    const char* section_name = elf_strptr(elf, strings, header.sh_name);
    if (!section_name || name != section_name) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (!data || !data->d_buf) return {};
    return {header.sh_addr, static_cast<const uint8_t*>(data->d_buf), data->d_size};
  }
  return {};
}

}  // namespace

EhFrameFunctions::EhFrameFunctions(::Elf* elf) {
  if (!elf) return;
  const SectionBytes hdr = FindSection(elf, ".eh_frame_hdr");
  const SectionBytes frames = FindSection(elf, ".eh_frame");
  if (!hdr.Has(hdr.address, 12) || hdr.data[0] != 1) return;
  if (hdr.data[1] != kPcRelSdata4 || hdr.data[2] != kUdata4 || hdr.data[3] != kDataRelSdata4) return;
  const uint64_t count = hdr.Udata4(hdr.address + 8);
  const uint64_t table = hdr.address + 12;
  if (count > (hdr.size - 12) / 8) return;  // a table longer than its section
  ranges_.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t start = hdr.address + hdr.Sdata4(table + 8 * i);
    const uint64_t fde = hdr.address + hdr.Sdata4(table + 8 * i + 4);
    Range range{start, 0};
    // The FDE: length, CIE pointer, pc_begin, pc_range. pc_begin in the linkers' encoding
    // (pc-relative) must name the same start; then pc_range follows in 4 bytes.
    if (frames.Has(fde, 16) && frames.Udata4(fde) != 0xffffffff) {
      const uint64_t begin_at = fde + 8;
      if (begin_at + frames.Sdata4(begin_at) == start) range.end = start + frames.Udata4(begin_at + 4);
    }
    ranges_.push_back(range);
  }
  std::sort(ranges_.begin(), ranges_.end(), [](const Range& a, const Range& b) { return a.start < b.start; });
  for (size_t i = 0; i < ranges_.size(); ++i)
    if (ranges_[i].end <= ranges_[i].start)
      ranges_[i].end = i + 1 < ranges_.size() ? ranges_[i + 1].start : ranges_[i].start + 1;
}

std::optional<uint64_t> EhFrameFunctions::FunctionStart(uint64_t elf_address) const {
  auto after = std::upper_bound(ranges_.begin(), ranges_.end(), elf_address,
                                [](uint64_t address, const Range& r) { return address < r.start; });
  if (after == ranges_.begin()) return std::nullopt;
  const Range& range = *std::prev(after);
  if (elf_address >= range.end) return std::nullopt;
  return range.start;
}

}  // namespace looptrace::symbols
