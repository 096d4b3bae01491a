// The offsets and sizes the Java frame walker and the method namer use, taken from HotSpot's
// own tables (vm_structs.h) of the running JVM, and the frame layout of x86-64's interpreter.
#pragma once

#include <cstdint>

#include "loader/runtimes/jvm/vm_structs.h"

namespace looptrace::loader::jvm {

struct HotSpotLayout {
  // Threads: ThreadsSMRSupport::_java_thread_list -> ThreadsList {_length, _threads}.
  uint64_t java_thread_list = 0;  // address of the static
  uint64_t threads_list_length = 0, threads_list_threads = 0;
  uint64_t thread_osthread = 0, osthread_thread_id = 0, thread_state = 0;
  uint64_t thread_anchor = 0, anchor_sp = 0, anchor_pc = 0, anchor_fp = 0;
  // Code: CodeCache::_heaps (GrowableArray<CodeHeap*>*), the interpreter's StubQueue.
  uint64_t code_heaps = 0;  // address of the static
  uint64_t array_len = 0, array_data = 0;
  uint64_t heap_memory = 0, heap_segmap = 0, heap_log2_segment = 0;
  uint64_t space_low = 0, space_high = 0;
  uint64_t heap_block_size = 0;
  uint64_t interpreter_code = 0;  // address of AbstractInterpreter::_code
  uint64_t stub_buffer = 0, stub_buffer_limit = 0;
  uint64_t call_stub_return = 0;  // address of StubRoutines::_call_stub_return_address
  uint64_t blob_name = 0, blob_frame_size = 0, nmethod_method = 0;
  // Compiled frames' debug info (CodeBlob, CompiledMethod, nmethod, PcDesc): which methods a
  // pc of an nmethod is in, inlined ones too, and at which bytecode. Not every JDK exports
  // all of these: `compiled_scopes` false, compiled frames name the nmethod's method only.
  bool compiled_scopes = false;
  uint64_t blob_code_begin = 0, nmethod_compile_id = 0, nmethod_metadata_offset = 0;
  uint64_t nmethod_scopes_pcs_offset = 0, nmethod_dependencies_offset = 0, nmethod_scopes_data_begin = 0;
  uint64_t pc_desc_size = 0, pc_desc_pc_offset = 0, pc_desc_scope_decode_offset = 0;
  // Methods: Method -> ConstMethod -> ConstantPool -> Klass; names are Symbols.
  uint64_t method_const = 0;
  uint64_t const_constants = 0, const_flags = 0, const_code_size = 0, const_name_index = 0;
  uint64_t const_signature_index = 0, const_method_size = 0;
  uint64_t pool_holder = 0, pool_size = 0, pool_source_file_index = 0;
  uint64_t klass_name = 0;
  uint64_t symbol_length = 0, symbol_body = 0;
  int64_t has_line_table = 1;  // ConstMethod::_has_linenumber_table
  // Compressed ints (line tables) in UNSIGNED5 with byte 0 excluded (JDK 21+; told apart
  // by the ConstMethodFlags constants the same versions export).
  bool ints_exclude_zero = false;
  int64_t new_thread = 2, in_java = 8, in_native = 4, in_vm = 6, blocked = 10;
  // x86-64 interpreter frames, in words from fp (frame_x86.hpp; only some are exported).
  int64_t frame_sender_sp = -1;
  int64_t frame_method = -3;
  int64_t frame_bcp = -8;
};

// An error naming the first entry the running JVM does not export.
Result<HotSpotLayout> LayoutFrom(const VmStructs& vm);

}  // namespace looptrace::loader::jvm
