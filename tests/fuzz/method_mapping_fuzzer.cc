// libFuzzer harness for the Matrix methodMapping.txt parser (MethodMapping::Parse).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "looptrace/symbols/method_mapping.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> warnings;
  const looptrace::symbols::MethodMapping mapping = looptrace::symbols::MethodMapping::Parse(text, "fuzz", &warnings);

  // Invariants: every malformed line is reported, ids are in range, lookups are consistent.
  if (warnings.size() < mapping.malformed_lines()) std::abort();
  if (mapping.size() > size) std::abort();
  for (int id : {0, 1, 2, 1048574, looptrace::symbols::MethodMapping::kMaxId}) {
    if (const looptrace::symbols::MappedMethod* method = mapping.Find(id)) {
      if (method->id != id || method->class_name.empty() || method->method_name.empty()) {
        std::abort();
      }
      (void)method->Display();
    }
  }
  if (mapping.Find(-1) != nullptr || mapping.Find(looptrace::symbols::MethodMapping::kMaxId + 1)) {
    std::abort();
  }
  return 0;
}
