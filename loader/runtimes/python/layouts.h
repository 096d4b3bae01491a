// CPython's object layouts, per minor version, as looptrace reads them from outside the
// process (BPF at each sample, user space for names and thread dumps). Generated from the
// DWARF of CPython builds by scripts/python_layouts.sh; checked against the running
// interpreter before use (python_process.h), never trusted blindly.
#pragma once

#include <cstdint>
#include <optional>

#include "looptrace/events.h"

namespace looptrace::loader::python {

inline constexpr uint16_t kNone = LT_PY_NONE;  // a field the version does not have

// Field offsets in bytes, in the order scripts/python_layouts.py prints them.
struct Layout {
  int major = 0;
  int minor = 0;
  // threads and frames
  uint16_t runtime_interpreters_head = kNone;
  uint16_t interp_tstate_head = kNone;
  uint16_t tstate_next = kNone;
  uint16_t tstate_interp = kNone;
  uint16_t tstate_thread_id = kNone;         // pthread_t
  uint16_t tstate_native_thread_id = kNone;  // 3.11+
  uint16_t tstate_frame = kNone;             // frame (to 3.10), cframe (3.11-3.12), current_frame (3.13)
  uint16_t cframe_current_frame = kNone;
  uint16_t frame_code = kNone;
  uint16_t frame_back = kNone;
  uint16_t frame_instr = kNone;     // f_lasti (int) to 3.10, else a pointer to the instruction
  uint16_t frame_owner = kNone;     // 3.12+: entry shims are FRAME_OWNED_BY_CSTACK
  uint16_t frame_is_entry = kNone;  // 3.11
  // code objects
  uint16_t code_flags = kNone;
  uint16_t code_firstlineno = kNone;
  uint16_t code_filename = kNone;
  uint16_t code_name = kNone;
  uint16_t code_qualname = kNone;   // 3.11+
  uint16_t code_linetable = kNone;  // co_lnotab to 3.9, co_linetable after
  uint16_t code_adaptive = kNone;   // 3.11+: the instructions, inside the code object
  // callables
  uint16_t func_code = kNone;
  uint16_t func_qualname = kNone;
  uint16_t method_func = kNone;
  uint16_t partial_fn = kNone;
  uint16_t cfunc_ml = kNone;
  uint16_t cfunc_self = kNone;
  uint16_t gen_code = kNone;    // to 3.11
  uint16_t gen_frame = kNone;   // to 3.10
  uint16_t gen_iframe = kNone;  // 3.11+
  uint16_t type_name = kNone;
  // str, bytes, int
  uint16_t str_state = kNone;
  uint16_t str_length = kNone;
  uint16_t bytes_size = kNone;
  uint16_t bytes_data = kNone;
  uint16_t long_digit = kNone;
  uint16_t str_ascii_data = kNone;
  uint16_t str_compact_data = kNone;
  // the _asyncio module's Task and its step wrapper
  uint16_t task_coro = kNone;
  uint16_t task_name = kNone;
  uint16_t wrapper_task = kNone;

  int frame_model() const {
    if (minor >= 13) return LT_PY_CURRENT_FRAME;
    if (minor >= 11) return LT_PY_CFRAME;
    return LT_PY_FRAME_OBJECTS;
  }
};

// The layout of CPython MAJOR.MINOR, or nothing for a version looptrace has no table for.
std::optional<Layout> LayoutOf(int major, int minor);
// "3.8-3.13": the versions with a table.
const char* SupportedVersions();

// The BPF side's view of `layout` (events.h); where the interpreter lies in the target is
// published apart (lt_py_addresses), once checked.
lt_py_layout ToBpf(const Layout& layout);

}  // namespace looptrace::loader::python
