// Hook functions: `nopl 0x0(%rax,%rax,1)` (0f 1f 44 00 00) then `ret`.
//
// They are written in assembly so that the compiler can neither inline them
// nor change their first instruction; the instruction at a uprobe's address
// decides its cost (an emulated nop5 is ~20x cheaper than a single-stepped
// `mov`). The CFI directives let DWARF unwinders step out of a hook when a
// probe captures a user stack at its entry.

#include "hooks.h"

#if !defined(__x86_64__)
#error "the sample target's hooks are only written for x86-64 so far"
#endif

#define LOOPTRACE_SAMPLE_HOOK(name)                 \
  ".globl " #name "\n"                              \
  ".type " #name ", @function\n"                    \
  ".p2align 4\n" #name ":\n"                        \
  ".cfi_startproc\n"                                \
  ".byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n"            \
  "ret\n"                                           \
  ".cfi_endproc\n"                                  \
  ".size " #name ", . - " #name "\n"

asm(".pushsection .text\n"
    LOOPTRACE_SAMPLE_HOOK(sample_looper_dispatch_begin)
    LOOPTRACE_SAMPLE_HOOK(sample_looper_dispatch_end)
    LOOPTRACE_SAMPLE_HOOK(sample_looper_poll_begin)
    LOOPTRACE_SAMPLE_HOOK(sample_looper_poll_end)
    LOOPTRACE_SAMPLE_HOOK(sample_looper_idle_begin)
    LOOPTRACE_SAMPLE_HOOK(sample_looper_idle_end)
    ".popsection\n");

#undef LOOPTRACE_SAMPLE_HOOK
