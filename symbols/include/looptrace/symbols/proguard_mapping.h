// Reader for ProGuard / R8 mapping.txt files (build/outputs/mapping/<variant>/mapping.txt),
// to de-obfuscate class and method names of Android apps.
//
// Format:
//   # comments, including R8's JSON metadata ("# {"id":"sourceFile",...}")
//   com.example.Foo -> a.b:                          class: original -> obfuscated
//       int count -> a                               field
//       void run(int,java.lang.String) -> c          method
//       1:4:void <init>() -> <init>                  R8: obfuscated line range
//       5:5:void run(int):10:12 -> c                 R8: + original line range
//       6:6:int com.example.Bar.helper(int):20 -> c  R8: inlined from another class
// Member lines sharing an obfuscated line range describe an inline chain, innermost first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "looptrace/util/result.h"

namespace looptrace::symbols {

struct ProguardMethod {
  std::string class_name;              // original declaring class (differs for inlined methods)
  std::string name;                    // original method name
  std::string return_type;             // Java source type: "void", "int[]", "java.lang.String"
  std::vector<std::string> arguments;  // Java source types
  std::string obfuscated_name;
  uint32_t obfuscated_start = 0;  // R8 "a:b:" line range; 0 when absent
  uint32_t obfuscated_end = 0;
  uint32_t original_start = 0;  // ":c[:d]" after the arguments; 0 when absent
  uint32_t original_end = 0;

  // "void run(int,java.lang.String)".
  std::string Signature() const;
  // JVM descriptor with original (dotted) class names: "(ILjava.lang.String;)V".
  std::string Descriptor() const;
};

struct ProguardClass {
  std::string original_name;
  std::string obfuscated_name;
  std::vector<ProguardMethod> methods;                  // in file order
  std::unordered_map<std::string, std::string> fields;  // obfuscated -> original name
};

struct DeobfuscatedMethod {
  bool found = false;       // the class or the method was in the mapping
  bool ambiguous = false;   // several original methods fit; the first is given
  std::string class_name;   // original (or the input when unknown)
  std::string method_name;  // original (or the input when unknown)
  std::string signature;    // ProguardMethod::Signature() of the match, "" if none
};

class ProguardMapping {
 public:
  // Reads and parses `path`; a missing or unreadable file is an error naming the path.
  static Result<ProguardMapping> Load(const std::string& path, std::vector<std::string>* warnings);

  // Parses mapping text. Malformed lines (no " -> ", member before any class, bad line
  // numbers, unbalanced parentheses) are skipped, counted and described in `warnings`
  // (may be null) as "SOURCE:LINE: why". CRLF and a UTF-8 BOM are accepted.
  static ProguardMapping Parse(std::string_view text, std::string_view source_name, std::vector<std::string>* warnings);

  const ProguardClass* FindClass(std::string_view obfuscated) const;
  // "a.b" -> "com.example.Foo"; also "a.b[]" arrays. Unknown names come back unchanged.
  std::string DeobfuscateClass(std::string_view obfuscated) const;
  // A JVM descriptor with obfuscated class names ("(La/b;I)V" or dotted "(La.b;I)V") in
  // dotted original names: "(Lcom.example.Foo;I)V".
  std::string DeobfuscateDescriptor(std::string_view descriptor) const;

  // The original methods that `obfuscated_method` of `obfuscated_class` may be. With a
  // descriptor (obfuscated class names, '/' or '.'), only those whose original descriptor
  // matches; with `line` > 0, only R8 members whose obfuscated range holds the line (an
  // inline chain, innermost first), falling back to unranged members.
  std::vector<const ProguardMethod*> FindMethods(std::string_view obfuscated_class, std::string_view obfuscated_method,
                                                 std::string_view obfuscated_descriptor = {}, uint32_t line = 0) const;

  // Best single answer for a method (the outermost frame when `line` selects a chain).
  DeobfuscatedMethod DeobfuscateMethod(std::string_view obfuscated_class, std::string_view obfuscated_method,
                                       std::string_view obfuscated_descriptor = {}, uint32_t line = 0) const;

  size_t class_count() const { return classes_.size(); }
  size_t method_count() const { return method_count_; }
  size_t malformed_lines() const { return malformed_lines_; }

 private:
  std::vector<ProguardClass> classes_;
  std::unordered_map<std::string, size_t> by_obfuscated_;  // -> index into classes_
  std::unordered_map<std::string, std::string> original_to_obfuscated_;
  size_t method_count_ = 0;
  size_t malformed_lines_ = 0;
};

// JVM descriptor of a Java source type: "int" -> "I", "java.lang.String[]" ->
// "[Ljava.lang.String;" (dotted). "" for an empty type.
std::string JavaTypeToDescriptor(std::string_view type);

}  // namespace looptrace::symbols
