#!/usr/bin/env python3
"""Writes a C program with N small functions gen_fn_00000.. for bench/attach_scale.cc.

The functions are top-level assembly (the compiler passes it through, so a build with
tens of thousands of them takes seconds): even ones start like -O2 code (a mov, which the
kernel single-steps), odd ones like code with frame pointers (push %rbp, emulated). The
program prints "ready", waits for a line on stdin, calls every function once (call_all:
one direct call each), prints "called N" and waits for another line before exiting.
"""
import sys

count = int(sys.argv[1])
out = sys.argv[2]
with open(out, "w") as f:
    f.write("#include <stdint.h>\n#include <stdio.h>\n\nvolatile uint64_t g_sink;\nvoid call_all(void);\n\n")
    f.write("__asm__(\"  .text\\n\"\n")
    for i in range(count):
        name = "gen_fn_%05d" % i
        f.write('"  .globl %s\\n  .type %s, @function\\n%s:\\n"\n' % (name, name, name))
        if i % 2 == 0:
            f.write('"  mov g_sink(%%rip), %%rax\\n  add $%d, %%rax\\n  mov %%rax, g_sink(%%rip)\\n  ret\\n"\n' % (i % 100))
        else:
            f.write('"  push %%rbp\\n  mov %%rsp, %%rbp\\n  addq $%d, g_sink(%%rip)\\n  pop %%rbp\\n  ret\\n"\n' % (i % 100))
        f.write('"  .size %s, .-%s\\n"\n' % (name, name))
    f.write('"  .globl call_all\\n  .type call_all, @function\\ncall_all:\\n  sub $8, %rsp\\n"\n')
    for i in range(count):
        f.write('"  call gen_fn_%05d\\n"\n' % i)
    f.write('"  add $8, %rsp\\n  ret\\n  .size call_all, .-call_all\\n");\n\n')
    f.write("int main(void) {\n  char line[16];\n  printf(\"ready\\n\");\n  fflush(stdout);\n")
    f.write("  if (!fgets(line, sizeof line, stdin)) return 1;\n  call_all();\n")
    f.write("  printf(\"called %d\\n\");\n  fflush(stdout);\n" % count)
    f.write("  if (!fgets(line, sizeof line, stdin)) return 1;\n  return 0;\n}\n")
