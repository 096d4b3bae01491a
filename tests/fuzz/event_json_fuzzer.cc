// libFuzzer harness for one recording line (tracers EventFromJsonLine). Oracle: a line
// that parses into an event serializes (EventToJsonLine) to a line that parses into an
// event serializing to the same text, so `report` reads back what `record --save` wrote.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "looptrace/tracers/event_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view line(reinterpret_cast<const char*>(data), size);
  auto parsed = looptrace::EventFromJsonLine(line);
  if (!parsed) {
    if (parsed.error().message.empty()) std::abort();
    return 0;
  }
  if (!*parsed) return 0;  // the header line
  const std::string first = looptrace::EventToJsonLine(**parsed);
  auto reparsed = looptrace::EventFromJsonLine(first);
  if (!reparsed || !*reparsed) std::abort();
  if (looptrace::EventToJsonLine(**reparsed) != first) std::abort();
  return 0;
}
