// Hook functions: `nopl 0x0(%rax,%rax,1)` (0f 1f 44 00 00) then `ret`.
//
// They are written in assembly so that the compiler can neither inline them
// nor change their first instruction; the instruction at a uprobe's address
// decides its cost (an emulated nop5 is ~20x cheaper than a single-stepped
// `mov`). The CFI directives let DWARF unwinders step out of a hook when a
// probe captures a user stack at its entry.
//
// The -finstrument-functions hooks (__cyg_profile_func_enter/exit) are in
// cyg_hooks.cc: only looptrace-sample-app-cyg defines them.

#include "hooks.h"

#include "hook_asm.h"

asm(".pushsection .text\n" LOOPTRACE_SAMPLE_HOOK(sample_looper_dispatch_begin)
        LOOPTRACE_SAMPLE_HOOK(sample_looper_dispatch_end) LOOPTRACE_SAMPLE_HOOK(sample_looper_poll_begin)
            LOOPTRACE_SAMPLE_HOOK(sample_looper_poll_end) LOOPTRACE_SAMPLE_HOOK(sample_looper_idle_begin)
                LOOPTRACE_SAMPLE_HOOK(sample_looper_idle_end) LOOPTRACE_SAMPLE_HOOK(sample_choreographer_frame_begin)
                    LOOPTRACE_SAMPLE_HOOK(sample_choreographer_frame_end)
                        LOOPTRACE_SAMPLE_HOOK(sample_choreographer_phase_begin)
                            LOOPTRACE_SAMPLE_HOOK(sample_choreographer_phase_end) LOOPTRACE_SAMPLE_HOOK(sample_vsync)
                                LOOPTRACE_SAMPLE_HOOK(sample_input_receive) LOOPTRACE_SAMPLE_HOOK(sample_input_finish)
                                    LOOPTRACE_SAMPLE_HOOK(sample_barrier_post)
                                        LOOPTRACE_SAMPLE_HOOK(sample_barrier_remove)
                                            LOOPTRACE_SAMPLE_HOOK(sample_message_enqueue)
                                                LOOPTRACE_SAMPLE_HOOK(sample_app_create_begin)
                                                    LOOPTRACE_SAMPLE_HOOK(sample_app_create_end)
                                                        LOOPTRACE_SAMPLE_HOOK(sample_activity_launch)
                                                            LOOPTRACE_SAMPLE_HOOK(sample_activity_focus)
                                                                LOOPTRACE_SAMPLE_HOOK(sample_fully_drawn)
                                                                    LOOPTRACE_SAMPLE_HOOK(sample_method_enter)
                                                                        LOOPTRACE_SAMPLE_HOOK(
                                                                            sample_method_exit) ".popsection\n");
