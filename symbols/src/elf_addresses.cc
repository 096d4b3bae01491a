// ElfFile: virtual addresses <-> file offsets through the loadable segments, and the bytes,
// pointers and data symbols at an address.
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "elf_internal.h"
#include "looptrace/symbols/elf_file.h"

namespace looptrace::symbols {

using internal::Hex;

const ElfFile::Segment* ElfFile::SegmentFor(uint64_t address) const {
  for (const Segment& segment : segments_) {
    if (address >= segment.vaddr && address - segment.vaddr < segment.memsz) return &segment;
  }
  return nullptr;
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

Result<uint64_t> ElfFile::FileOffsetToAddress(uint64_t offset) const {
  for (const Segment& segment : segments_) {
    if (offset >= segment.offset && offset < segment.offset + segment.filesz)
      return segment.vaddr + (offset - segment.offset);
  }
  return MakeError(fmt::format("{}: file offset {:#x} is in no loadable segment", path_, offset));
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

}  // namespace looptrace::symbols
