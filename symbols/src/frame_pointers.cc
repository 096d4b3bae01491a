#include "looptrace/symbols/frame_pointers.h"

#include <set>
#include <string_view>

namespace looptrace::symbols {
namespace {

enum class Prologue { kFramePointer, kNoFramePointer, kNeither };

// The leading pushes of a function (after an optional endbr64): "push %rbp; mov %rsp,%rbp"
// sets up a frame pointer; %rbp pushed without that mov is saved to be used as a register.
// A function that does not save %rbp (a leaf, a tail call, a shrink-wrapped prologue)
// says nothing.
Prologue Classify(const std::vector<uint8_t>& code) {
  size_t i = 0;
  if (code.size() >= 4 && code[0] == 0xf3 && code[1] == 0x0f && code[2] == 0x1e && code[3] == 0xfa) i = 4;
  while (i < code.size()) {
    const uint8_t b = code[i];
    if (b == 0x55) {  // push %rbp
      const bool mov = i + 3 < code.size() && code[i + 1] == 0x48 &&
                       ((code[i + 2] == 0x89 && code[i + 3] == 0xe5) || (code[i + 2] == 0x8b && code[i + 3] == 0xec));
      return mov ? Prologue::kFramePointer : Prologue::kNoFramePointer;
    }
    if (b >= 0x50 && b <= 0x57) {  // push %rax..%rdi
      i += 1;
    } else if (b == 0x41 && i + 1 < code.size() && code[i + 1] >= 0x50 && code[i + 1] <= 0x57) {  // push %r8..%r15
      i += 2;
    } else if (b == 0x49 && i + 2 < code.size() && code[i + 1] == 0x89) {  // mov %reg,%r8..%r15 between pushes
      i += 3;
    } else if (b == 0x48 && i + 2 < code.size() && code[i + 1] == 0x89 && code[i + 2] != 0xe5) {  // mov %reg,%reg
      i += 3;
    } else {
      break;
    }
  }
  return Prologue::kNeither;
}

}  // namespace

std::optional<bool> KeepsFramePointers(const ElfFile& elf) {
  constexpr size_t kWindow = 32, kMaxChecked = 512, kMinDecided = 4;
  // The C runtime's own startup code says nothing about how the program was built.
  static const std::set<std::string_view> kRuntime = {"_start",
                                                      "_init",
                                                      "_fini",
                                                      "deregister_tm_clones",
                                                      "register_tm_clones",
                                                      "__do_global_dtors_aux",
                                                      "frame_dummy",
                                                      "__libc_csu_init",
                                                      "__libc_csu_fini",
                                                      "_dl_relocate_static_pie"};
  std::vector<const Symbol*> candidates;
  for (const Symbol& f : elf.functions())
    if (f.size >= 8 && !f.is_ifunc && !kRuntime.contains(f.name) && f.name.find(".cold") == std::string::npos)
      candidates.push_back(&f);
  const size_t step = std::max<size_t>(1, candidates.size() / kMaxChecked);
  size_t with = 0, without = 0;
  for (size_t i = 0; i < candidates.size(); i += step) {
    auto bytes = elf.ReadAtAddress(candidates[i]->address, std::min<uint64_t>(kWindow, candidates[i]->size));
    if (!bytes) continue;
    switch (Classify(*bytes)) {
      case Prologue::kFramePointer:
        ++with;
        break;
      case Prologue::kNoFramePointer:
        ++without;
        break;
      case Prologue::kNeither:
        break;
    }
  }
  if (with + without < kMinDecided) return std::nullopt;
  return with >= without;
}

}  // namespace looptrace::symbols
