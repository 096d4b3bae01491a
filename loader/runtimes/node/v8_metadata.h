// V8's post-mortem metadata: the v8dbg_* data symbols a node executable carries (the
// contract llnode reads), each an int naming a frame slot, a field offset, an instance type
// or a tagging constant of the V8 it was built with. Read from the file, checked for the
// ones the frame walker and the namer need; a missing one is an error naming it.
#pragma once

#include <cstdint>
#include <string>

#include "looptrace/events.h"
#include "looptrace/util/result.h"

namespace looptrace::loader::node {

struct V8Metadata {
  lt_v8_layout layout{};  // what BPF needs (events.h)
  // Objects, for naming (offsets from the untagged object start).
  uint16_t sfi_name_or_scope_info = 0;
  uint16_t sfi_script_or_debug_info = 0;
  uint16_t script_name = 0;
  uint16_t script_source = 0;
  uint16_t script_line_ends = 0;
  uint16_t string_length = 0;
  uint16_t seq_chars = 0;
  uint16_t cons_first = 0;
  uint16_t cons_second = 0;
  uint16_t thin_actual = 0;
  uint16_t sliced_parent = 0;
  uint16_t sliced_offset = 0;
  uint16_t fixed_array_length = 0;
  uint16_t fixed_array_data = 0;
  uint16_t bytecode_array_data = 0;  // the first bytecode: frames count offsets from the tagged start
  uint16_t scope_info_first_vars = 0;
  uint16_t scope_info_context_locals = 0;
  // Instance types and string tags.
  uint16_t type_script = 0;
  uint16_t type_scope_info = 0;
  uint16_t type_fixed_array = 0;
  uint16_t first_nonstring_type = 0;
  uint16_t string_representation_mask = 0;
  uint16_t string_encoding_mask = 0;
  uint16_t seq_string_tag = 0;
  uint16_t cons_string_tag = 0;
  uint16_t thin_string_tag = 0;
  uint16_t sliced_string_tag = 0;
  uint16_t one_byte_string_tag = 0;
};

// The metadata of the V8 in `path`; an error naming what is missing when it has none or not
// what looptrace reads.
Result<V8Metadata> ReadV8Metadata(const std::string& path);

}  // namespace looptrace::loader::node
