// Source of the small ELF seeds of the elf_file and symbolizer fuzz targets (compiled at
// build time in several layouts by CMakeLists.txt; never run). Freestanding, so the files
// stay a few KiB: functions of several sizes, inlined calls (DWARF inline chains), a
// label without .size, USDT probes with and without a semaphore, and a versioned symbol
// in the shared-library layout.
#ifdef LT_SEED_USDT
#include <sys/sdt.h>
unsigned short seed_probe_semaphore __attribute__((section(".probes"))) = 0;
#else
#define DTRACE_PROBE1(provider, name, arg) (void)(arg)
#define DTRACE_PROBE2(provider, name, a, b) (void)(a), (void)(b)
#endif

static inline __attribute__((always_inline)) int seed_inner(int x) { return x * 3 + 1; }
static inline __attribute__((always_inline)) int seed_outer(int x) { return seed_inner(x) + seed_inner(x + 1); }

__attribute__((noinline)) int seed_leaf(int x) {
  DTRACE_PROBE1(seed, leaf, x);
  return seed_outer(x) ^ 0x55;
}

__attribute__((noinline)) int seed_middle(int x) {
  int total = 0;
  for (int i = 0; i < x; ++i) total += seed_leaf(i);
  DTRACE_PROBE2(seed, middle, x, total);
  return total;
}

__asm__(".text\n.globl seed_label\nseed_label:\n  nop\n  ret\n");

int seed_entry(int argc) { return seed_middle(argc) + seed_outer(argc); }

#ifndef LT_SEED_SHARED
void _start(void) {
  seed_entry(3);
  for (;;) {
  }
}
#endif
