// The target of bench/peer_overhead.cc: tiny hooks called in a tight loop, timed by the
// target itself. Built -O2 -fomit-frame-pointer -finstrument-functions, like release code.
//
//   looptrace_bench_target --variant V --count N
//
// It prints "ready" on stdout, waits for a line on stdin (the tracer is attached by then),
// runs N iterations and prints "ns_per_iteration X". Variants:
//   dispatch      bench_dispatch(id, name): its first instruction is emulated (push %rbp)
//   dispatch-mov  bench_dispatch_mov(id, name): the same body, -O2 without frame pointer
//                 (a mov first: single-stepped)
//   methods       bench_method(), instrumented: __cyg_profile_func_enter/exit (a lone ret,
//                 single-stepped) around an empty body
//   methods-fp    bench_method_fp(): calls bench_enter_fp/bench_exit_fp, hooks with the
//                 same arguments whose first instruction is emulated (push %rbp)
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define HOOK __attribute__((noipa, no_instrument_function))
#define PLAIN __attribute__((noinline, no_instrument_function))

volatile uint64_t g_current;
const char* volatile g_name;
void* volatile g_fn;

HOOK void __cyg_profile_func_enter(void* fn, void* site) {
  (void)fn;
  (void)site;
}
HOOK void __cyg_profile_func_exit(void* fn, void* site) {
  (void)fn;
  (void)site;
}
// The emulated references, in assembly so no compiler drops their frame pointer: a
// push %rbp first, as in code built with frame pointers.
void bench_enter_fp(void* fn, void* site);
void bench_exit_fp(void* fn, void* site);
uint64_t bench_dispatch(uint64_t id, const char* name);
__asm__(
    "  .text\n"
    "  .globl bench_enter_fp, bench_exit_fp, bench_dispatch\n"
    "  .type bench_enter_fp, @function\n"
    "bench_enter_fp:\n"
    "  push %rbp\n"
    "  mov %rsp, %rbp\n"
    "  mov %rdi, g_fn(%rip)\n"
    "  pop %rbp\n"
    "  ret\n"
    "  .size bench_enter_fp, .-bench_enter_fp\n"
    "  .type bench_exit_fp, @function\n"
    "bench_exit_fp:\n"
    "  push %rbp\n"
    "  mov %rsp, %rbp\n"
    "  mov %rdi, g_fn(%rip)\n"
    "  pop %rbp\n"
    "  ret\n"
    "  .size bench_exit_fp, .-bench_exit_fp\n"
    "  .type bench_dispatch, @function\n"
    "bench_dispatch:\n"
    "  push %rbp\n"
    "  mov %rsp, %rbp\n"
    "  mov %rdi, g_current(%rip)\n"
    "  mov %rsi, g_name(%rip)\n"
    "  mov %rdi, %rax\n"
    "  pop %rbp\n"
    "  ret\n"
    "  .size bench_dispatch, .-bench_dispatch\n");

HOOK uint64_t bench_dispatch_mov(uint64_t id, const char* name) {
  g_current = id;
  g_name = name;
  return id;
}

// Instrumented by -finstrument-functions (the only function that is).
__attribute__((noinline)) void bench_method(void) { __asm__ volatile(""); }

PLAIN void bench_method_fp(void) {
  bench_enter_fp((void*)bench_method_fp, __builtin_return_address(0));
  __asm__ volatile("");
  bench_exit_fp((void*)bench_method_fp, __builtin_return_address(0));
}

PLAIN static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

PLAIN int main(int argc, char** argv) {
  const char* variant = "dispatch";
  uint64_t count = 200000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--variant"))
      variant = argv[i + 1];
    else if (!strcmp(argv[i], "--count"))
      count = strtoull(argv[i + 1], NULL, 10);
  }
  printf("ready\n");
  fflush(stdout);
  char line[64];
  if (!fgets(line, sizeof(line), stdin)) return 1;
  uint64_t begin = now_ns();
  if (!strcmp(variant, "dispatch")) {
    for (uint64_t i = 0; i < count; ++i) bench_dispatch(i, "bench.message");
  } else if (!strcmp(variant, "dispatch-mov")) {
    for (uint64_t i = 0; i < count; ++i) bench_dispatch_mov(i, "bench.message");
  } else if (!strcmp(variant, "methods")) {
    for (uint64_t i = 0; i < count; ++i) bench_method();
  } else if (!strcmp(variant, "methods-fp")) {
    for (uint64_t i = 0; i < count; ++i) bench_method_fp();
  } else {
    fprintf(stderr, "unknown variant %s\n", variant);
    return 2;
  }
  uint64_t end = now_ns();
  printf("ns_per_iteration %.1f\n", (double)(end - begin) / (double)count);
  fflush(stdout);
  return 0;
}
