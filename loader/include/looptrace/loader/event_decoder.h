// The one place where raw BPF records (events.h) become C++ events.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>

#include "looptrace/loader/attach_plan.h"
#include "looptrace/loader/string_reader.h"
#include "looptrace/tracers/event.h"
#include "looptrace/tracers/stats.h"

namespace looptrace::loader {

class EventDecoder {
 public:
  // `strings` may be null (strings are then left unread and counted).
  EventDecoder(const AttachPlan* plan, StringReader* strings, Stats* stats)
      : plan_(plan), strings_(strings), stats_(stats) {}

  // Returns nothing for a malformed record (counted in stats) and for records that only
  // update decoder state (string texts).
  std::optional<Event> Decode(std::span<const uint8_t> raw);

 private:
  std::optional<std::string> LookupString(uint32_t pid, uint64_t address);

  const AttachPlan* plan_;
  StringReader* strings_;
  std::unordered_map<uint64_t, std::string> sent_strings_;  // from LT_RECORD_STRING
  Stats* stats_;
};

}  // namespace looptrace::loader
