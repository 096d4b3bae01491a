#include "loader/runtimes/jvm/hotspot_layout.h"

#include <fmt/format.h>

namespace looptrace::loader::jvm {

Result<HotSpotLayout> LayoutFrom(const VmStructs& vm) {
  HotSpotLayout l;
  std::string missing;
  // `name`, else the name a newer JDK gives the same field (`alias`); false: neither.
  auto lookup = [&](uint64_t* out, std::string_view name, std::string_view alias) {
    auto v = vm.Offset(name);
    if (!v && !alias.empty()) v = vm.Offset(alias);
    if (v) *out = *v;
    return v.has_value();
  };
  auto offset = [&](uint64_t* out, std::string_view name, std::string_view alias = {}) {
    if (!lookup(out, name, alias) && missing.empty()) missing = name;
  };
  auto address = [&](uint64_t* out, std::string_view name) {
    if (auto v = vm.Address(name))
      *out = *v;
    else if (missing.empty())
      missing = name;
  };
  auto size = [&](uint64_t* out, std::string_view name) {
    if (auto v = vm.Size(name))
      *out = *v;
    else if (missing.empty())
      missing = fmt::format("sizeof({})", name);
  };
  auto constant = [&](int64_t* out, std::string_view name, std::string_view alias = {}) {
    if (auto v = vm.Constant(name))
      *out = *v;
    else if (auto w = alias.empty() ? std::nullopt : vm.Constant(alias))
      *out = *w;  // else the JDK 17 x86-64 value stays
  };
  address(&l.java_thread_list, "ThreadsSMRSupport::_java_thread_list");
  offset(&l.threads_list_length, "ThreadsList::_length");
  offset(&l.threads_list_threads, "ThreadsList::_threads");
  offset(&l.thread_osthread, "JavaThread::_osthread", "Thread::_osthread");  // JDK 25: Thread
  offset(&l.osthread_thread_id, "OSThread::_thread_id");
  offset(&l.thread_state, "JavaThread::_thread_state");
  offset(&l.thread_anchor, "JavaThread::_anchor");
  offset(&l.anchor_sp, "JavaFrameAnchor::_last_Java_sp");
  offset(&l.anchor_pc, "JavaFrameAnchor::_last_Java_pc");
  offset(&l.anchor_fp, "JavaFrameAnchor::_last_Java_fp");
  address(&l.code_heaps, "CodeCache::_heaps");
  offset(&l.array_len, "GrowableArrayBase::_len");
  offset(&l.array_data, "GrowableArray<int>::_data");
  offset(&l.heap_memory, "CodeHeap::_memory");
  offset(&l.heap_segmap, "CodeHeap::_segmap");
  offset(&l.heap_log2_segment, "CodeHeap::_log2_segment_size");
  offset(&l.space_low, "VirtualSpace::_low");
  offset(&l.space_high, "VirtualSpace::_high");
  size(&l.heap_block_size, "HeapBlock");
  address(&l.interpreter_code, "AbstractInterpreter::_code");
  offset(&l.stub_buffer, "StubQueue::_stub_buffer");
  offset(&l.stub_buffer_limit, "StubQueue::_buffer_limit");
  address(&l.call_stub_return, "StubRoutines::_call_stub_return_address");
  offset(&l.blob_name, "CodeBlob::_name");
  offset(&l.blob_frame_size, "CodeBlob::_frame_size");
  offset(&l.nmethod_method, "CompiledMethod::_method", "nmethod::_method");  // JDK 23+: nmethod
  offset(&l.method_const, "Method::_constMethod");
  offset(&l.const_constants, "ConstMethod::_constants");
  offset(&l.const_flags, "ConstMethod::_flags", "ConstMethod::_flags._flags");  // JDK 21+
  offset(&l.const_code_size, "ConstMethod::_code_size");
  offset(&l.const_name_index, "ConstMethod::_name_index");
  offset(&l.const_signature_index, "ConstMethod::_signature_index");
  size(&l.const_method_size, "ConstMethod");
  offset(&l.pool_holder, "ConstantPool::_pool_holder");
  offset(&l.pool_source_file_index, "ConstantPool::_source_file_name_index");
  size(&l.pool_size, "ConstantPool");
  offset(&l.klass_name, "Klass::_name");
  offset(&l.symbol_length, "Symbol::_length");
  offset(&l.symbol_body, "Symbol::_body");
  constant(&l.has_line_table, "ConstMethod::_has_linenumber_table", "ConstMethodFlags::_misc_has_linenumber_table");
  constant(&l.new_thread, "_thread_new");
  constant(&l.in_java, "_thread_in_Java");
  constant(&l.in_native, "_thread_in_native");
  constant(&l.in_vm, "_thread_in_vm");
  constant(&l.blocked, "_thread_blocked");
  constant(&l.frame_sender_sp, "frame::interpreter_frame_sender_sp_offset");
  constant(&l.frame_method, "frame::interpreter_frame_method_offset");
  constant(&l.frame_bcp, "frame::interpreter_frame_bcp_offset");
  l.ints_exclude_zero = vm.Constant("ConstMethodFlags::_misc_has_linenumber_table").has_value();
  if (!missing.empty()) return MakeError(fmt::format("the JVM does not export {}", missing));
  // Optional: without them compiled frames still have their method.
  l.compiled_scopes = true;
  auto optional = [&](uint64_t* out, std::string_view name, std::string_view alias = {}) {
    if (!lookup(out, name, alias)) l.compiled_scopes = false;
  };
  optional(&l.blob_code_begin, "CodeBlob::_code_begin");
  optional(&l.nmethod_compile_id, "nmethod::_compile_id");
  optional(&l.nmethod_metadata_offset, "nmethod::_metadata_offset");
  optional(&l.nmethod_scopes_pcs_offset, "nmethod::_scopes_pcs_offset");
  optional(&l.nmethod_dependencies_offset, "nmethod::_dependencies_offset");
  optional(&l.nmethod_scopes_data_begin, "CompiledMethod::_scopes_data_begin", "nmethod::_scopes_data_begin");
  optional(&l.pc_desc_pc_offset, "PcDesc::_pc_offset");
  optional(&l.pc_desc_scope_decode_offset, "PcDesc::_scope_decode_offset");
  if (auto size = vm.Size("PcDesc"))
    l.pc_desc_size = *size;
  else
    l.compiled_scopes = false;
  return l;
}

}  // namespace looptrace::loader::jvm
