#include "unwind_common.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "looptrace/util/safe_file.h"

namespace looptrace::symbols::internal {

bool ReadStackCopy(const UnwindInput& input, uint64_t address, uint64_t* value) {
  if (address < input.stack_base) return false;
  const uint64_t offset = address - input.stack_base;
  if (offset > input.stack.size() || input.stack.size() - offset < sizeof(*value)) return false;
  std::memcpy(value, input.stack.data() + offset, sizeof(*value));
  return true;
}

const MapEntry* FindMapping(std::span<const MapEntry> maps, uint64_t address) {
  for (const MapEntry& map : maps) {
    if (address >= map.start && address < map.end) return &map;
  }
  return nullptr;
}

// The load bias of the ELF file mapped by `map`: map.start minus the virtual address
// that the file offset map.offset has in the file's PT_LOAD segments.
bool MappingLoadBias(const std::string& path, const MapEntry& map, uint64_t* bias, bool* is_exec) {
  const int fd = OpenForReading(path);
  if (fd < 0) return false;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return false;
  }
  elf_version(EV_CURRENT);
  Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
  bool found = false;
  GElf_Ehdr ehdr;
  size_t phnum = 0;
  if (elf != nullptr && elf_kind(elf) == ELF_K_ELF && gelf_getehdr(elf, &ehdr) != nullptr &&
      elf_getphdrnum(elf, &phnum) == 0) {
    *is_exec = ehdr.e_type == ET_EXEC;
    for (size_t i = 0; i < phnum && !found; ++i) {
      GElf_Phdr phdr;
      if (gelf_getphdr(elf, static_cast<int>(i), &phdr) == nullptr || phdr.p_type != PT_LOAD) {
        continue;
      }
      const uint64_t page_offset = phdr.p_offset & ~uint64_t{0xfff};
      if (map.offset >= page_offset && map.offset < phdr.p_offset + phdr.p_filesz) {
        const uint64_t vaddr = phdr.p_vaddr - (phdr.p_offset - map.offset);
        *bias = map.start - vaddr;
        found = true;
      }
    }
  }
  if (elf != nullptr) elf_end(elf);
  close(fd);
  return found;
}

}  // namespace looptrace::symbols::internal
