#include "loader/runtimes/python/layouts.h"

#include <iterator>

namespace looptrace::loader::python {
namespace {

// From the DWARF of pyenv's builds (scripts/python_layouts.sh). Debian's 3.11 (3.11.2) has
// the layout of 3.11.7: patch releases keep these structures.
constexpr Layout kLayouts[] = {
    {.major = 3,
     .minor = 8,
     .runtime_interpreters_head = 32,
     .interp_tstate_head = 8,
     .tstate_next = 8,
     .tstate_interp = 16,
     .tstate_thread_id = 176,
     .tstate_native_thread_id = kNone,
     .tstate_frame = 24,
     .cframe_current_frame = kNone,
     .frame_code = 32,
     .frame_back = 24,
     .frame_instr = 104,
     .frame_owner = kNone,
     .frame_is_entry = kNone,
     .code_flags = 36,
     .code_firstlineno = 40,
     .code_filename = 104,
     .code_name = 112,
     .code_qualname = kNone,
     .code_linetable = 120,
     .code_adaptive = kNone,
     .func_code = 16,
     .func_qualname = 104,
     .method_func = 16,
     .partial_fn = 16,
     .cfunc_ml = 16,
     .cfunc_self = 24,
     .gen_code = 32,
     .gen_frame = 16,
     .gen_iframe = kNone,
     .type_name = 24,
     .str_state = 32,
     .str_length = 16,
     .bytes_size = 16,
     .bytes_data = 32,
     .long_digit = 24,
     .str_ascii_data = 48,
     .str_compact_data = 72,
     .task_coro = 112,
     .task_name = 120,
     .wrapper_task = 16},  // 3.8.18
    {.major = 3,
     .minor = 9,
     .runtime_interpreters_head = 32,
     .interp_tstate_head = 8,
     .tstate_next = 8,
     .tstate_interp = 16,
     .tstate_thread_id = 176,
     .tstate_native_thread_id = kNone,
     .tstate_frame = 24,
     .cframe_current_frame = kNone,
     .frame_code = 32,
     .frame_back = 24,
     .frame_instr = 104,
     .frame_owner = kNone,
     .frame_is_entry = kNone,
     .code_flags = 36,
     .code_firstlineno = 40,
     .code_filename = 104,
     .code_name = 112,
     .code_qualname = kNone,
     .code_linetable = 120,
     .code_adaptive = kNone,
     .func_code = 16,
     .func_qualname = 104,
     .method_func = 16,
     .partial_fn = 16,
     .cfunc_ml = 16,
     .cfunc_self = 24,
     .gen_code = 32,
     .gen_frame = 16,
     .gen_iframe = kNone,
     .type_name = 24,
     .str_state = 32,
     .str_length = 16,
     .bytes_size = 16,
     .bytes_data = 32,
     .long_digit = 24,
     .str_ascii_data = 48,
     .str_compact_data = 72,
     .task_coro = 152,
     .task_name = 160,
     .wrapper_task = 16},  // 3.9.18
    {.major = 3,
     .minor = 10,
     .runtime_interpreters_head = 32,
     .interp_tstate_head = 8,
     .tstate_next = 8,
     .tstate_interp = 16,
     .tstate_thread_id = 176,
     .tstate_native_thread_id = kNone,
     .tstate_frame = 24,
     .cframe_current_frame = kNone,
     .frame_code = 32,
     .frame_back = 24,
     .frame_instr = 96,
     .frame_owner = kNone,
     .frame_is_entry = kNone,
     .code_flags = 36,
     .code_firstlineno = 40,
     .code_filename = 104,
     .code_name = 112,
     .code_qualname = kNone,
     .code_linetable = 120,
     .code_adaptive = kNone,
     .func_code = 48,
     .func_qualname = 40,
     .method_func = 16,
     .partial_fn = 16,
     .cfunc_ml = 16,
     .cfunc_self = 24,
     .gen_code = 24,
     .gen_frame = 16,
     .gen_iframe = kNone,
     .type_name = 24,
     .str_state = 32,
     .str_length = 16,
     .bytes_size = 16,
     .bytes_data = 32,
     .long_digit = 24,
     .str_ascii_data = 48,
     .str_compact_data = 72,
     .task_coro = 160,
     .task_name = 168,
     .wrapper_task = 16},  // 3.10.13
    {.major = 3,
     .minor = 11,
     .runtime_interpreters_head = 40,
     .interp_tstate_head = 16,
     .tstate_next = 8,
     .tstate_interp = 16,
     .tstate_thread_id = 152,
     .tstate_native_thread_id = 160,
     .tstate_frame = 56,
     .cframe_current_frame = 8,
     .frame_code = 32,
     .frame_back = 48,
     .frame_instr = 56,
     .frame_owner = kNone,
     .frame_is_entry = 68,
     .code_flags = 48,
     .code_firstlineno = 72,
     .code_filename = 112,
     .code_name = 120,
     .code_qualname = 128,
     .code_linetable = 136,
     .code_adaptive = 184,
     .func_code = 48,
     .func_qualname = 40,
     .method_func = 16,
     .partial_fn = 16,
     .cfunc_ml = 16,
     .cfunc_self = 24,
     .gen_code = 16,
     .gen_frame = kNone,
     .gen_iframe = 80,
     .type_name = 24,
     .str_state = 32,
     .str_length = 16,
     .bytes_size = 16,
     .bytes_data = 32,
     .long_digit = 24,
     .str_ascii_data = 48,
     .str_compact_data = 72,
     .task_coro = 136,
     .task_name = 144,
     .wrapper_task = 16},  // 3.11.7
    {.major = 3,
     .minor = 12,
     .runtime_interpreters_head = 40,
     .interp_tstate_head = 72,
     .tstate_next = 8,
     .tstate_interp = 16,
     .tstate_thread_id = 136,
     .tstate_native_thread_id = 144,
     .tstate_frame = 56,
     .cframe_current_frame = 0,
     .frame_code = 0,
     .frame_back = 8,
     .frame_instr = 56,
     .frame_owner = 70,
     .frame_is_entry = kNone,
     .code_flags = 48,
     .code_firstlineno = 68,
     .code_filename = 112,
     .code_name = 120,
     .code_qualname = 128,
     .code_linetable = 136,
     .code_adaptive = 192,
     .func_code = 48,
     .func_qualname = 40,
     .method_func = 16,
     .partial_fn = 16,
     .cfunc_ml = 16,
     .cfunc_self = 24,
     .gen_code = kNone,
     .gen_frame = kNone,
     .gen_iframe = 72,
     .type_name = 24,
     .str_state = 32,
     .str_length = 16,
     .bytes_size = 16,
     .bytes_data = 32,
     .long_digit = 24,
     .str_ascii_data = 40,
     .str_compact_data = 56,
     .task_coro = 136,
     .task_name = 144,
     .wrapper_task = 16},  // 3.12.1
    {.major = 3,
     .minor = 13,
     .runtime_interpreters_head = 632,
     .interp_tstate_head = 7344,
     .tstate_next = 8,
     .tstate_interp = 16,
     .tstate_thread_id = 152,
     .tstate_native_thread_id = 160,
     .tstate_frame = 72,
     .cframe_current_frame = kNone,
     .frame_code = 0,
     .frame_back = 8,
     .frame_instr = 56,
     .frame_owner = 70,
     .frame_is_entry = kNone,
     .code_flags = 48,
     .code_firstlineno = 68,
     .code_filename = 112,
     .code_name = 120,
     .code_qualname = 128,
     .code_linetable = 136,
     .code_adaptive = 200,
     .func_code = 48,
     .func_qualname = 40,
     .method_func = 16,
     .partial_fn = 16,
     .cfunc_ml = 16,
     .cfunc_self = 24,
     .gen_code = kNone,
     .gen_frame = kNone,
     .gen_iframe = 72,
     .type_name = 24,
     .str_state = 32,
     .str_length = 16,
     .bytes_size = 16,
     .bytes_data = 32,
     .long_digit = 24,
     .str_ascii_data = 40,
     .str_compact_data = 56,
     .task_coro = 120,
     .task_name = 128,
     .wrapper_task = 16},  // 3.13.0
};

}  // namespace

std::optional<Layout> LayoutOf(int major, int minor) {
  for (const Layout& layout : kLayouts)
    if (layout.major == major && layout.minor == minor) return layout;
  return std::nullopt;
}

const char* SupportedVersions() { return "3.8-3.13"; }

lt_py_layout ToBpf(const Layout& l) {
  lt_py_layout b{};
  b.frame_model = static_cast<uint16_t>(l.frame_model());
  b.interp_tstate_head = l.interp_tstate_head;
  b.tstate_next = l.tstate_next;
  b.tstate_thread_id = l.tstate_thread_id;
  b.tstate_frame = l.tstate_frame;
  b.cframe_current_frame = l.cframe_current_frame;
  b.frame_code = l.frame_code;
  b.frame_back = l.frame_back;
  b.frame_instr = l.frame_instr;
  b.frame_owner = l.frame_owner;
  b.frame_is_entry = l.frame_is_entry;
  b.code_fingerprint = l.code_firstlineno;
  b.code_adaptive = l.code_adaptive == kNone ? 0 : l.code_adaptive;
  b.lasti_in_units = l.minor == 10;  // 3.10's f_lasti counts code units, 3.8-3.9's bytes
  b.type_name = l.type_name;
  b.method_func = l.method_func;
  b.partial_fn = l.partial_fn;
  b.wrapper_task = l.wrapper_task;
  b.cfunc_ml = l.cfunc_ml;
  b.cfunc_self = l.cfunc_self;
  b.func_code = l.func_code;
  // Every version: BPF sends the function's __qualname__ (as asyncio's repr names it) at the
  // hit, so a callable keeps its name when its code object can no longer be read (the target
  // exited before the record was read).
  b.func_qualname = l.func_qualname;
  b.task_coro = l.task_coro;
  b.task_name = l.task_name;
  b.gen_code = l.gen_code;
  b.gen_frame = l.gen_frame;
  b.gen_iframe = l.gen_iframe;
  b.str_state = l.str_state;
  b.str_ascii_data = l.str_ascii_data;
  b.long_digit = l.long_digit;
  return b;
}

}  // namespace looptrace::loader::python
