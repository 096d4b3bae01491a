// The java.lang.Thread of a HotSpot JavaThread and its name, read from the JVM's heap:
// JavaThread::_threadObj (an OopHandle, VMStructs) holds the Thread; its `name` is a String,
// whose `value` is a byte[] in Latin-1 or UTF-16 (its `coder`). HotSpot's VMStructs give none
// of these Java fields' offsets: they are statics of libjvm.so's symbol table
// (java_lang_Thread::_name_offset, java_lang_String::_value_offset and _coder_offset), set
// once the VM loaded those classes, and references in the heap are compressed as
// CompressedOops' base and shift say (UseCompressedOops). The Thread's threadStatus (what
// jstack prints its state from) is found the same way: a field of the Thread in JDK 17
// (java_lang_Thread::_thread_status_offset), of its `holder` (a Thread.FieldHolder) since 19.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "loader/runtimes/jvm/vm_structs.h"
#include "looptrace/symbols/elf_file.h"

namespace looptrace::loader::jvm {

class JavaObjects {
 public:
  // Nothing when the JVM lacks a symbol or field this needs (a stripped libjvm.so, another
  // layout), or has not set the offsets yet.
  static std::optional<JavaObjects> Read(const symbols::ElfFile& elf, uint64_t bias, const VmStructs& vm,
                                         Memory& memory);

  // The Java name of the JavaThread at `java_thread` ("main", "AWT-EventQueue-0"), or nothing.
  std::optional<std::string> ThreadName(uint64_t java_thread) const;
  // Its java.lang.Thread's threadStatus (JVMTI state bits), or nothing.
  std::optional<int32_t> ThreadStatus(uint64_t java_thread) const;

 private:
  explicit JavaObjects(Memory& memory) : memory_(&memory) {}
  // The object a reference field at `address` points to (decoded when compressed).
  std::optional<uint64_t> Reference(uint64_t address) const;
  // The java.lang.Thread of the JavaThread at `java_thread`.
  std::optional<uint64_t> ThreadObject(uint64_t java_thread) const;

  Memory* memory_;
  uint64_t thread_obj_ = 0;  // JavaThread::_threadObj + OopHandle::_obj
  int32_t thread_name_ = 0, string_value_ = 0, string_coder_ = 0;
  int32_t thread_holder_ = 0;  // Thread.holder (JDK 19+), 0: threadStatus is the Thread's own
  int32_t thread_status_ = 0;  // 0: not readable
  bool compressed_ = false;
  uint64_t narrow_base_ = 0;
  int shift_ = 0;
  uint64_t array_length_ = 0, array_base_ = 0;  // a byte[]'s length and first element
};

}  // namespace looptrace::loader::jvm
