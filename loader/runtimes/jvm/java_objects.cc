#include "loader/runtimes/jvm/java_objects.h"

namespace looptrace::loader::jvm {
namespace {

constexpr int32_t kMaxNameChars = 1024;

// The UTF-8 of one UTF-16 code unit (a lone surrogate becomes U+FFFD).
void AppendUtf8(uint32_t c, std::string* out) {
  if (c >= 0xD800 && c <= 0xDFFF) c = 0xFFFD;
  if (c < 0x80) {
    out->push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (c >> 6)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xE0 | (c >> 12)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

}  // namespace

std::optional<JavaObjects> JavaObjects::Read(const symbols::ElfFile& elf, uint64_t bias, const VmStructs& vm,
                                             Memory& memory) {
  auto thread_obj = vm.Offset("JavaThread::_threadObj");
  auto handle_obj = vm.Offset("OopHandle::_obj");
  if (!thread_obj || !handle_obj) return std::nullopt;
  JavaObjects objects(memory);
  objects.thread_obj_ = *thread_obj + *handle_obj;
  auto read = [&](std::string_view symbol, void* out, size_t size) {
    auto address = elf.FindObject(symbol);
    return address && memory.Read(bias + *address, out, size);
  };
  if (!read("_ZN16java_lang_Thread12_name_offsetE", &objects.thread_name_, 4) ||
      !read("_ZN16java_lang_String13_value_offsetE", &objects.string_value_, 4) ||
      !read("_ZN16java_lang_String13_coder_offsetE", &objects.string_coder_, 4) || objects.thread_name_ <= 0 ||
      objects.string_value_ <= 0 || objects.string_coder_ <= 0)
    return std::nullopt;
  // Optional: without it dumps take the state from the VM's own (thread_state.h).
  if (!read("_ZN16java_lang_Thread21_thread_status_offsetE", &objects.thread_status_, 4) &&
      (!read("_ZN16java_lang_Thread14_holder_offsetE", &objects.thread_holder_, 4) ||
       !read("_ZN28java_lang_Thread_FieldHolder21_thread_status_offsetE", &objects.thread_status_, 4) ||
       objects.thread_holder_ <= 0))
    objects.thread_status_ = 0;
  if (objects.thread_status_ < 0) objects.thread_status_ = 0;
  uint8_t compressed = 0, class_pointers = 1, compact = 0;
  if (!read("UseCompressedOops", &compressed, 1)) return std::nullopt;
  read("UseCompressedClassPointers", &class_pointers, 1);
  read("UseCompactObjectHeaders", &compact, 1);  // JDK 24+
  objects.compressed_ = compressed != 0;
  if (objects.compressed_) {
    // JDK 17: one struct {address _base; int _shift; ...}; later JDKs: two statics.
    uint64_t base = 0;
    int32_t shift = 0;
    if (auto at = elf.FindObject("_ZN14CompressedOops11_narrow_oopE")) {
      if (!memory.Read(bias + *at, &base, 8) || !memory.Read(bias + *at + 8, &shift, 4)) return std::nullopt;
    } else if (!read("_ZN14CompressedOops5_baseE", &base, 8) || !read("_ZN14CompressedOops6_shiftE", &shift, 4)) {
      return std::nullopt;
    }
    if (shift < 0 || shift > 8) return std::nullopt;
    objects.narrow_base_ = base;
    objects.shift_ = shift;
  }
  // An array's header: the mark word, the class (4 bytes compressed), the length.
  objects.array_length_ = compact ? 8 : class_pointers ? 12 : 16;
  objects.array_base_ = compact ? 12 : (objects.array_length_ + 4 + 7) & ~uint64_t{7};
  return objects;
}

std::optional<uint64_t> JavaObjects::Reference(uint64_t address) const {
  if (compressed_) {
    uint32_t narrow = 0;
    if (!memory_->Read(address, &narrow, 4) || !narrow) return std::nullopt;
    return narrow_base_ + (uint64_t{narrow} << shift_);
  }
  uint64_t value = 0;
  if (!memory_->Read(address, &value, 8) || !value) return std::nullopt;
  return value;
}

std::optional<uint64_t> JavaObjects::ThreadObject(uint64_t java_thread) const {
  uint64_t handle = 0, thread = 0;
  if (!memory_->Read(java_thread + thread_obj_, &handle, 8) || !handle || !memory_->Read(handle, &thread, 8) || !thread)
    return std::nullopt;
  return thread;
}

std::optional<int32_t> JavaObjects::ThreadStatus(uint64_t java_thread) const {
  if (!thread_status_) return std::nullopt;
  auto object = ThreadObject(java_thread);
  if (object && thread_holder_) object = Reference(*object + static_cast<uint64_t>(thread_holder_));
  int32_t status = 0;
  if (!object || !memory_->Read(*object + static_cast<uint64_t>(thread_status_), &status, 4)) return std::nullopt;
  return status;
}

std::optional<std::string> JavaObjects::ThreadName(uint64_t java_thread) const {
  auto thread = ThreadObject(java_thread);
  if (!thread) return std::nullopt;
  auto name = Reference(*thread + static_cast<uint64_t>(thread_name_));
  if (!name) return std::nullopt;
  auto value = Reference(*name + static_cast<uint64_t>(string_value_));
  int8_t coder = 0;
  int32_t length = 0;
  if (!value || !memory_->Read(*name + static_cast<uint64_t>(string_coder_), &coder, 1) ||
      !memory_->Read(*value + array_length_, &length, 4) || length <= 0 || length > kMaxNameChars ||
      (coder != 0 && coder != 1) || (coder == 1 && length % 2))
    return std::nullopt;
  std::string bytes(static_cast<size_t>(length), '\0');
  if (!memory_->Read(*value + array_base_, bytes.data(), bytes.size())) return std::nullopt;
  std::string text;
  if (coder == 0) {  // Latin-1
    for (char c : bytes) AppendUtf8(static_cast<uint8_t>(c), &text);
  } else {  // UTF-16, the machine's byte order
    for (size_t i = 0; i + 1 < bytes.size(); i += 2)
      AppendUtf8(static_cast<uint8_t>(bytes[i]) | (static_cast<uint32_t>(static_cast<uint8_t>(bytes[i + 1])) << 8),
                 &text);
  }
  return text;
}

}  // namespace looptrace::loader::jvm
