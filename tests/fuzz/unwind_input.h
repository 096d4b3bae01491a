// The input of the unwinder fuzz target, and what seeds/unwind_seed_gen.c writes: this
// header, `stack_size` bytes of stack copy (from stack_base up), then an ELF file that the
// target "maps" at map_start (one r-xp mapping of the whole file at offset 0, as the
// kernel maps the first segments of a PIE).
#pragma once

#include <stdint.h>

struct LtUnwindInputHeader {
  uint64_t regs[17];    // DWARF order: rax rdx rcx rbx rsi rdi rbp rsp r8..r15 rip
  uint32_t valid_mask;  // bit n: regs[n] was sampled
  uint32_t stack_size;  // bytes of stack copy after the header (clamped to the input)
  uint64_t stack_base;  // user address of the first stack byte
  uint64_t map_start;   // where the ELF's file offset 0 is mapped
};
