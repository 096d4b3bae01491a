// Writes a seed of the unwinder fuzz target (see ../unwind_input.h): its own registers and
// stack, captured three calls deep, and its own executable. Built twice, with and without
// frame pointers, and run at build time (CMakeLists.txt).
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../unwind_input.h"

extern char __executable_start;
static const char* g_out;

static uint64_t StackEnd(uint64_t rsp) {
  FILE* maps = fopen("/proc/self/maps", "r");
  unsigned long long start = 0, end = 0;
  char line[512];
  uint64_t found = rsp + 4096;
  while (maps != NULL && fgets(line, sizeof(line), maps) != NULL) {
    if (sscanf(line, "%llx-%llx", &start, &end) == 2 && rsp >= start && rsp < end) found = end;
  }
  if (maps != NULL) fclose(maps);
  return found;
}

__attribute__((noinline)) static void Capture(void) {
  struct LtUnwindInputHeader header;
  memset(&header, 0, sizeof(header));
  uint64_t* regs = header.regs;
  // One asm statement, so every register belongs to the same pc (the one after lea).
  __asm__ volatile(
      "lea 0(%%rip), %%rax\n\t"
      "mov %%rax, 128(%0)\n\t"
      "mov %%rsp, 56(%0)\n\t"
      "mov %%rbp, 48(%0)\n\t"
      "mov %%rbx, 24(%0)\n\t"
      "mov %%r12, 96(%0)\n\t"
      "mov %%r13, 104(%0)\n\t"
      "mov %%r14, 112(%0)\n\t"
      "mov %%r15, 120(%0)\n\t"
      :
      : "r"(regs)
      : "rax", "memory");
  header.valid_mask =
      (1u << 16) | (1u << 7) | (1u << 6) | (1u << 3) | (1u << 12) | (1u << 13) | (1u << 14) | (1u << 15);
  header.stack_base = regs[7];
  uint64_t size = StackEnd(regs[7]) - regs[7];
  if (size > 6144) size = 6144;
  header.stack_size = (uint32_t)size;
  header.map_start = (uint64_t)(uintptr_t)&__executable_start;

  FILE* exe = fopen("/proc/self/exe", "rb");
  FILE* out = fopen(g_out, "wb");
  if (exe == NULL || out == NULL) exit(1);
  fwrite(&header, sizeof(header), 1, out);
  fwrite((const void*)(uintptr_t)regs[7], 1, size, out);
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), exe)) > 0) fwrite(buffer, 1, n, out);
  fclose(exe);
  if (fclose(out) != 0) exit(1);
}

__attribute__((noinline)) static int Middle(int depth) {
  if (depth == 0) {
    Capture();
    return 1;
  }
  int r = Middle(depth - 1);
  __asm__ volatile("" ::: "memory");
  return r + depth;
}

__attribute__((noinline)) static int Outer(volatile int x) { return Middle(x) * 2; }

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: unwind_seed_gen OUTPUT\n");
    return 2;
  }
  g_out = argv[1];
  return Outer(2) > 0 ? 0 : 1;
}
