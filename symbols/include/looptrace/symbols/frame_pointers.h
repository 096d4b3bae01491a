// Whether a module's code keeps frame pointers, judged from its functions' first
// instructions. A frame-pointer walk through code that does not keep them reads garbage
// return addresses; looptrace then says so (and suggests --dwarf-unwind) instead.
#pragma once

#include <optional>

#include "looptrace/symbols/elf_file.h"

namespace looptrace::symbols {

// True when the functions that save %rbp in their prologue (up to 512 of them, spread over
// the file) mostly set it up as the frame pointer ("push %rbp; mov %rsp,%rbp"), false when
// they mostly push it to use it as a register; nullopt when too few functions save it.
std::optional<bool> KeepsFramePointers(const ElfFile& elf);

}  // namespace looptrace::symbols
