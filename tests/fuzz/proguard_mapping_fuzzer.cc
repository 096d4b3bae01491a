// libFuzzer harness for the ProGuard/R8 mapping.txt parser (ProguardMapping::Parse) and
// its lookups.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "looptrace/symbols/proguard_mapping.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using looptrace::symbols::ProguardMapping;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> warnings;
  const ProguardMapping mapping = ProguardMapping::Parse(text, "fuzz", &warnings);
  if (warnings.size() != mapping.malformed_lines()) std::abort();
  if (mapping.class_count() > size || mapping.method_count() > size) std::abort();
  // Look up names taken from the input itself.
  const std::string_view probes[] = {"a", "a.a", "b", "<init>", "c.a.a.b", ""};
  for (std::string_view cls : probes) {
    (void)mapping.DeobfuscateClass(cls);
    for (std::string_view method : probes) {
      for (uint32_t line : {0u, 1u, 4u}) {
        auto found = mapping.FindMethods(cls, method, "(La/a;I)V", line);
        for (const auto* m : found) {
          if (m->obfuscated_name != method) std::abort();
          (void)m->Descriptor();
        }
        (void)mapping.DeobfuscateMethod(cls, method, {}, line);
      }
    }
  }
  (void)mapping.DeobfuscateDescriptor(text.substr(0, 64));
  return 0;
}
