// MiniDebugInfo (Fedora's "mini debuginfo"): the .gnu_debugdata section of a stripped file
// holds an xz-compressed ELF whose .symtab keeps the local functions stripping removed.
// Decompressed with liblzma, read with libelf.
#include <gelf.h>
#include <libelf.h>
#include <lzma.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "elf_internal.h"
#include "looptrace/symbols/elf_file.h"

namespace looptrace::symbols {

Result<std::vector<uint8_t>> DecompressXz(const uint8_t* data, size_t size, size_t max_output) {
  lzma_stream stream = LZMA_STREAM_INIT;
  // 512 MiB of decoder memory at most; MiniDebugInfo is written with the default preset.
  if (lzma_stream_decoder(&stream, uint64_t{512} << 20, 0) != LZMA_OK) {
    return MakeError("cannot initialize the xz decoder");
  }
  std::vector<uint8_t> out(std::min<size_t>(std::max<size_t>(size * 4, 4096), max_output));
  stream.next_in = data;
  stream.avail_in = size;
  stream.next_out = out.data();
  stream.avail_out = out.size();
  lzma_ret ret = LZMA_OK;
  while (true) {
    ret = lzma_code(&stream, LZMA_FINISH);
    if (ret == LZMA_STREAM_END) break;
    if (ret != LZMA_OK && ret != LZMA_BUF_ERROR) break;
    if (stream.avail_out == 0) {
      if (out.size() >= max_output) {
        lzma_end(&stream);
        return MakeError("xz data expands beyond " + std::to_string(max_output) + " bytes");
      }
      const size_t used = out.size();
      out.resize(std::min(max_output, used * 2));
      stream.next_out = out.data() + used;
      stream.avail_out = out.size() - used;
      continue;
    }
    if (ret == LZMA_BUF_ERROR) break;  // no progress possible: truncated input
  }
  const size_t produced = out.size() - stream.avail_out;
  lzma_end(&stream);
  switch (ret) {
    case LZMA_STREAM_END:
      break;
    case LZMA_FORMAT_ERROR:
      return MakeError("not xz data");
    case LZMA_DATA_ERROR:
      return MakeError("corrupt xz data");
    case LZMA_MEM_ERROR:
    case LZMA_MEMLIMIT_ERROR:
      return MakeError("xz data needs too much memory");
    case LZMA_BUF_ERROR:
      return MakeError("truncated xz data");
    default:
      return MakeError("xz decoding failed (liblzma error " + std::to_string(ret) + ")");
  }
  out.resize(produced);
  return out;
}

namespace internal {

Result<void> ReadMiniDebugInfo(Elf_Scn* scn, const std::string& path, std::vector<Symbol>* out, size_t* malformed) {
  constexpr size_t kMaxMiniDebugInfo = size_t{256} << 20;
  Elf_Data* data = elf_rawdata(scn, nullptr);
  if (data == nullptr || data->d_buf == nullptr) {
    return MakeError("cannot read .gnu_debugdata of " + path + ": " + ElfErrorMessage(), ExitCode::kProfile);
  }
  auto decompressed = DecompressXz(static_cast<const uint8_t*>(data->d_buf), data->d_size, kMaxMiniDebugInfo);
  if (!decompressed) {
    return MakeError("cannot read .gnu_debugdata of " + path + ": " + decompressed.error().message, ExitCode::kProfile);
  }
  Elf* mini = elf_memory(reinterpret_cast<char*>(decompressed->data()), decompressed->size());
  if (mini == nullptr) {
    return MakeError("cannot read .gnu_debugdata of " + path + ": " + ElfErrorMessage(), ExitCode::kProfile);
  }
  Result<void> status;
  if (elf_kind(mini) != ELF_K_ELF) {
    status = MakeError("cannot read .gnu_debugdata of " + path + ": not an ELF file", ExitCode::kProfile);
  } else {
    for (Elf_Scn* s = elf_nextscn(mini, nullptr); s != nullptr; s = elf_nextscn(mini, s)) {
      GElf_Shdr shdr;
      if (gelf_getshdr(s, &shdr) != nullptr && shdr.sh_type == SHT_SYMTAB) {
        status = ReadFunctionSymbols(mini, s, nullptr, {}, path + " (.gnu_debugdata)", out, malformed);
        break;
      }
    }
  }
  elf_end(mini);
  return status;
}

}  // namespace internal
}  // namespace looptrace::symbols
