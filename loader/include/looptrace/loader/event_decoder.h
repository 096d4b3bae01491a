// The one place where raw BPF records (events.h) become C++ events. It only decodes:
// pairing begin and end is the span tracker's job (tracers/span_tracker.h), copying method
// beats the beat slicer's (beat_slicer.h).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "looptrace/events.h"

#include "looptrace/loader/attach_plan.h"
#include "looptrace/loader/string_reader.h"
#include "looptrace/tracers/event.h"
#include "looptrace/tracers/stats.h"

namespace looptrace::loader {

// Names the kernel stacks BPF stored (stack ids of switch records).
class KernelStackNamer {
 public:
  virtual ~KernelStackNamer() = default;
  virtual std::vector<std::string> KernelStack(int32_t stack_id) = 0;
};

class EventDecoder {
 public:
  // `strings` and `kernel_stacks` may be null.
  EventDecoder(const AttachPlan* plan, StringTable* strings, Stats* stats,
               KernelStackNamer* kernel_stacks = nullptr);

  // Appends the events a record yields to `out`: none for a malformed record (counted)
  // or a string text (kept in the string table).
  void Decode(std::span<const uint8_t> raw, std::vector<Event>* out);

 private:
  void DecodeProbe(const lt_probe_record& rec, std::vector<Event>* out);

  const AttachPlan* plan_;
  StringTable* strings_;
  Stats* stats_;
  KernelStackNamer* kernel_stacks_;
};

}  // namespace looptrace::loader
