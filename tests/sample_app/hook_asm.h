// The assembly shape shared by every hook of the sample target: a global
// function whose body is exactly `nopl 0x0(%rax,%rax,1)` (0f 1f 44 00 00) and
// then `ret`, with .type/.size and CFI. Used inside a top-level asm() string.

#ifndef LOOPTRACE_TESTS_SAMPLE_APP_HOOK_ASM_H_
#define LOOPTRACE_TESTS_SAMPLE_APP_HOOK_ASM_H_

#if !defined(__x86_64__)
#error "the sample target's hooks are only written for x86-64 so far"
#endif

#define LOOPTRACE_SAMPLE_HOOK(name)      \
  ".globl " #name                        \
  "\n"                                   \
  ".type " #name                         \
  ", @function\n"                        \
  ".p2align 4\n" #name                   \
  ":\n"                                  \
  ".cfi_startproc\n"                     \
  ".byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n" \
  "ret\n"                                \
  ".cfi_endproc\n"                       \
  ".size " #name ", . - " #name "\n"

#endif  // LOOPTRACE_TESTS_SAMPLE_APP_HOOK_ASM_H_
