#include "looptrace/symbols/imports.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>

#include "looptrace/symbols/elf_file.h"
#include "looptrace/util/safe_file.h"

namespace looptrace::symbols {

Result<std::string> FirstImported(const std::string& path, const std::vector<std::string>& names) {
  // Opened as every file a profile names is: a FIFO or device never blocks, size bounded.
  ASSIGN_OR_RETURN(OpenedFile file, OpenRegularFile(path, "", kMaxElfBytes, ExitCode::kProfile));
  const int fd = file.fd.get();
  elf_version(EV_CURRENT);
  Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
  std::string found;
  bool is_elf = elf != nullptr && elf_kind(elf) == ELF_K_ELF;
  for (Elf_Scn* scn = is_elf ? elf_nextscn(elf, nullptr) : nullptr; scn != nullptr && found.empty();
       scn = elf_nextscn(elf, scn)) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr || shdr.sh_type != SHT_DYNSYM || shdr.sh_entsize == 0) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (data == nullptr) continue;
    const size_t count = std::min<size_t>(shdr.sh_size / shdr.sh_entsize, kMaxSymbolTableEntries);
    for (size_t i = 1; i < count; ++i) {
      GElf_Sym sym;
      if (gelf_getsym(data, static_cast<int>(i), &sym) == nullptr || sym.st_shndx != SHN_UNDEF) continue;
      const char* raw = elf_strptr(elf, shdr.sh_link, sym.st_name);
      if (raw == nullptr) continue;
      std::string_view name(raw);
      if (size_t at = name.find('@'); at != std::string_view::npos) name = name.substr(0, at);
      if (std::find(names.begin(), names.end(), name) != names.end()) {
        found = std::string(name);
        break;
      }
    }
  }
  if (elf) elf_end(elf);
  if (!is_elf) return MakeError(fmt::format("{} is not an ELF file", path));
  return found;
}

}  // namespace looptrace::symbols
