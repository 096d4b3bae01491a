#include "loader/runtimes/node/v8_metadata.h"

#include <fmt/format.h>

#include <cstring>
#include <limits>
#include <optional>
#include <string_view>

#include "looptrace/symbols/elf_file.h"
#include "looptrace/symbols/symbolizer.h"

namespace looptrace::loader::node {
namespace {

// JSFunction and the classes V8 derives from it (class constructors, the promise and array
// constructors, ...) hold consecutive instance types from JS_FUNCTION_TYPE on, 15 of them
// since V8 9.6; the metadata names only the first.
constexpr int kJsFunctionTypes = 15;

class Symbols {
 public:
  explicit Symbols(const symbols::ElfFile& elf) : elf_(elf) {}

  // The int a v8dbg_ symbol holds; 0 for one in .bss (the generator leaves zero-valued
  // constants uninitialized), nothing when the executable lacks it.
  std::optional<int32_t> Get(std::string_view name) const {
    auto address = elf_.FindObject(fmt::format("v8dbg_{}", name));
    if (!address) return std::nullopt;
    auto bytes = elf_.ReadAtAddress(*address, 4);
    if (!bytes || bytes->size() < 4) return 0;
    int32_t value = 0;
    std::memcpy(&value, bytes->data(), sizeof(value));
    return value;
  }

  // Like Get, remembering the first name missing or out of range for `T`.
  template <typename T>
  T Need(std::string_view name) {
    auto value = Get(name);
    if (!value || *value < std::numeric_limits<T>::min() || *value > std::numeric_limits<T>::max()) {
      if (missing_.empty()) missing_ = fmt::format("v8dbg_{}", name);
      return 0;
    }
    return static_cast<T>(*value);
  }

  const std::string& missing() const { return missing_; }

 private:
  const symbols::ElfFile& elf_;
  std::string missing_;
};

}  // namespace

Result<V8Metadata> ReadV8Metadata(const std::string& path) {
  auto elf = symbols::ModuleCache::Default()->Elf(path);  // read once: the frame namer's too
  if (!elf) return MakeError(fmt::format("{}: {}", path, elf.error().message));
  Symbols s(**elf);
  if (!s.Get("frametype_EntryFrame"))
    return MakeError(
        fmt::format("{} has no V8 post-mortem metadata (v8dbg_* symbols): JavaScript frames are not shown", path));
  V8Metadata m;
  lt_v8_layout& l = m.layout;
  l.fp_context = s.Need<int16_t>("off_fp_context_or_frame_type");
  l.fp_function = s.Need<int16_t>("off_fp_function");
  l.fp_bytecode_array = s.Need<int16_t>("off_fp_bytecode_array");
  l.fp_bytecode_offset = s.Need<int16_t>("off_fp_bytecode_offset");
  l.map_instance_type = s.Need<uint16_t>("class_Map__instance_type__uint16_t");
  l.function_shared = s.Need<uint16_t>("class_JSFunction__shared__SharedFunctionInfo");
  m.sfi_name_or_scope_info = s.Need<uint16_t>("class_SharedFunctionInfo__name_or_scope_info__Object");
  l.sfi_fingerprint = m.sfi_name_or_scope_info;
  l.type_function_first = s.Need<uint16_t>("type_JSFunction__JS_FUNCTION_TYPE");
  l.type_function_last = l.type_function_first + kJsFunctionTypes - 1;
  l.type_sfi = s.Need<uint16_t>("type_SharedFunctionInfo__SHARED_FUNCTION_INFO_TYPE");
  l.type_bytecode_array = s.Need<uint16_t>("type_BytecodeArray__BYTECODE_ARRAY_TYPE");
  l.smi_shift = s.Need<uint16_t>("SmiShiftSize") + 1;  // the tag's bit below the shift
  m.sfi_script_or_debug_info = s.Need<uint16_t>("class_SharedFunctionInfo__script_or_debug_info__HeapObject");
  m.script_name = s.Need<uint16_t>("class_Script__name__Object");
  m.script_source = s.Need<uint16_t>("class_Script__source__Object");
  m.script_line_ends = s.Need<uint16_t>("class_Script__line_ends__Object");
  m.string_length = s.Need<uint16_t>("class_String__length__int32_t");
  m.seq_chars = s.Need<uint16_t>("class_SeqOneByteString__chars__char");
  m.cons_first = s.Need<uint16_t>("class_ConsString__first__String");
  m.cons_second = s.Need<uint16_t>("class_ConsString__second__String");
  m.thin_actual = s.Need<uint16_t>("class_ThinString__actual__String");
  m.sliced_parent = s.Need<uint16_t>("class_SlicedString__parent__String");
  m.sliced_offset = s.Need<uint16_t>("class_SlicedString__offset__SMI");
  m.fixed_array_length = s.Need<uint16_t>("class_FixedArrayBase__length__SMI");
  m.fixed_array_data = s.Need<uint16_t>("class_FixedArray__data__uintptr_t");
  m.bytecode_array_data = s.Need<uint16_t>("class_BytecodeArray__data__uintptr_t");
  m.scope_info_first_vars = s.Need<uint16_t>("scopeinfo_idx_first_vars");
  m.scope_info_context_locals = s.Need<uint16_t>("scopeinfo_idx_ncontextlocals");
  m.type_script = s.Need<uint16_t>("type_Script__SCRIPT_TYPE");
  m.type_scope_info = s.Need<uint16_t>("type_ScopeInfo__SCOPE_INFO_TYPE");
  m.type_fixed_array = s.Need<uint16_t>("type_FixedArray__FIXED_ARRAY_TYPE");
  m.first_nonstring_type = s.Need<uint16_t>("FirstNonstringType");
  m.string_representation_mask = s.Need<uint16_t>("StringRepresentationMask");
  m.string_encoding_mask = s.Need<uint16_t>("StringEncodingMask");
  m.seq_string_tag = s.Need<uint16_t>("SeqStringTag");
  m.cons_string_tag = s.Need<uint16_t>("ConsStringTag");
  m.thin_string_tag = s.Need<uint16_t>("ThinStringTag");
  m.sliced_string_tag = s.Need<uint16_t>("SlicedStringTag");
  m.one_byte_string_tag = s.Need<uint16_t>("OneByteStringTag");
  if (!s.missing().empty())
    return MakeError(fmt::format("{}: V8's metadata lacks {} (another V8 version): JavaScript frames are not shown",
                                 path, s.missing()));
  // The walker reads the slots fp-40 .. fp+8 and takes Smis as 64-bit words (no pointer
  // compression: the builds of nodejs.org and NodeSource).
  for (int16_t slot : {l.fp_context, l.fp_function, l.fp_bytecode_array, l.fp_bytecode_offset})
    if (slot < -40 || slot > -8 || slot % 8 != 0)
      return MakeError(fmt::format(
          "{}: V8's frame slot {} is not one the walker reads: JavaScript frames are not shown", path, slot));
  if (l.smi_shift != 32)
    return MakeError(fmt::format(
        "{}: V8 built with pointer compression (Smi shift {}): JavaScript frames are not shown", path, l.smi_shift));
  l.enabled = 1;
  return m;
}

}  // namespace looptrace::loader::node
