// gcc -finstrument-functions hooks for looptrace-sample-app-cyg, in the same
// shape as hooks.cc: exactly nop5 (0f 1f 44 00 00) then `ret`.
//
// gcc calls __cyg_profile_func_enter(fn, call_site) at the entry of every
// function of an instrumented translation unit (app_methods.cc) and
// __cyg_profile_func_exit(fn, call_site) before it returns. `fn` (rdi) is the
// function's runtime address, `call_site` (rsi) the return address into its
// caller. glibc has no-op definitions too; the executable's own definitions
// take precedence (calls inside the executable bind to them at link time).
// Only compiled into looptrace-sample-app-cyg, so the id flavour does not
// contain these symbols at all.

#include "hook_asm.h"
#include "hooks.h"

asm(".pushsection .text\n" LOOPTRACE_SAMPLE_HOOK(__cyg_profile_func_enter)
        LOOPTRACE_SAMPLE_HOOK(__cyg_profile_func_exit) ".popsection\n");
