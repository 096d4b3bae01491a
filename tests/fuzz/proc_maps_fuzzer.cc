// libFuzzer harness for the /proc/PID/maps parser (ParseProcMaps, FindMappedFile).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "looptrace/symbols/proc_maps.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace looptrace::symbols;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  size_t malformed = 0;
  const auto maps = ParseProcMaps(text, &malformed);
  if (maps.size() + malformed > size) std::abort();
  for (const MapEntry& map : maps) {
    if (map.end < map.start) std::abort();
  }
  (void)FindMappedFile(maps, "libc.so.6");
  (void)FindMappedFile(maps, "/usr/lib/x");
  return 0;
}
