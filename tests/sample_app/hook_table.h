// Every hook of this executable, by name, for --print-hooks and the selftest.

#ifndef LOOPTRACE_TESTS_SAMPLE_APP_HOOK_TABLE_H_
#define LOOPTRACE_TESTS_SAMPLE_APP_HOOK_TABLE_H_

#include <span>

#include "hooks.h"

#ifndef LOOPTRACE_SAMPLE_CYG
#define LOOPTRACE_SAMPLE_CYG 0
#endif

namespace looptrace::sample {

struct HookEntry {
  const char* name;
  const void* address;
};

inline std::span<const HookEntry> AllHooks() {
#define LOOPTRACE_SAMPLE_HOOK_ENTRY(fn) \
  HookEntry { #fn, reinterpret_cast < const void*>(&fn) }
  static const HookEntry kHooks[] = {
    LOOPTRACE_SAMPLE_HOOK_ENTRY(sample_looper_dispatch_begin),
    LOOPTRACE_SAMPLE_HOOK_ENTRY(sample_looper_dispatch_end),
    LOOPTRACE_SAMPLE_HOOK_ENTRY(sample_looper_poll_begin),
    LOOPTRACE_SAMPLE_HOOK_ENTRY(sample_looper_poll_end),
    LOOPTRACE_SAMPLE_HOOK_ENTRY(sample_looper_idle_begin),
    LOOPTRACE_SAMPLE_HOOK_ENTRY(sample_looper_idle_end),
    LOOPTRACE_SAMPLE_HOOK_ENTRY(sample_choreographer_frame_begin),
    LOOPTRACE_SAMPLE_HOOK_ENTRY(sample_choreographer_frame_end),
    LOOPTRACE_SAMPLE_HOOK_ENTRY(sample_choreographer_phase_begin),
    LOOPTRACE_SAMPLE_HOOK_ENTRY(sample_choreographer_phase_end),
    LOOPTRACE_SAMPLE_HOOK_ENTRY(sample_vsync),
    LOOPTRACE_SAMPLE_HOOK_ENTRY(sample_input_receive),
    LOOPTRACE_SAMPLE_HOOK_ENTRY(sample_input_finish),
    LOOPTRACE_SAMPLE_HOOK_ENTRY(sample_barrier_post),
    LOOPTRACE_SAMPLE_HOOK_ENTRY(sample_barrier_remove),
    LOOPTRACE_SAMPLE_HOOK_ENTRY(sample_message_enqueue),
    LOOPTRACE_SAMPLE_HOOK_ENTRY(sample_app_create_begin),
    LOOPTRACE_SAMPLE_HOOK_ENTRY(sample_app_create_end),
    LOOPTRACE_SAMPLE_HOOK_ENTRY(sample_activity_launch),
    LOOPTRACE_SAMPLE_HOOK_ENTRY(sample_activity_focus),
    LOOPTRACE_SAMPLE_HOOK_ENTRY(sample_fully_drawn),
    LOOPTRACE_SAMPLE_HOOK_ENTRY(sample_method_enter),
    LOOPTRACE_SAMPLE_HOOK_ENTRY(sample_method_exit),
#if LOOPTRACE_SAMPLE_CYG
    LOOPTRACE_SAMPLE_HOOK_ENTRY(__cyg_profile_func_enter),
    LOOPTRACE_SAMPLE_HOOK_ENTRY(__cyg_profile_func_exit),
#endif
  };
#undef LOOPTRACE_SAMPLE_HOOK_ENTRY
  return kHooks;
}

}  // namespace looptrace::sample

#endif  // LOOPTRACE_TESTS_SAMPLE_APP_HOOK_TABLE_H_
