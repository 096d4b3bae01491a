// ElfFile's notes: the GNU build id and the USDT probes (SystemTap's stapsdt notes).
#include <fnmatch.h>
#include <gelf.h>
#include <libelf.h>

#include <cstring>
#include <string>

#include "elf_internal.h"
#include "looptrace/symbols/elf_file.h"
#include "looptrace/util/log.h"

namespace looptrace::symbols {
namespace {

constexpr uint32_t kNtStapsdt = 3;
constexpr std::string_view kStapsdtOwner = "stapsdt";
constexpr std::string_view kGnuOwner = "GNU";

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

}  // namespace

using internal::ElfErrorMessage;
using internal::Hex;
using internal::IsSymbolGlob;

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

}  // namespace looptrace::symbols
