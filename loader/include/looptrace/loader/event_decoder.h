// The one place where raw BPF records (events.h) become C++ events.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "looptrace/events.h"

#include "looptrace/loader/attach_plan.h"
#include "looptrace/loader/string_reader.h"
#include "looptrace/tracers/event.h"
#include "looptrace/tracers/stats.h"

namespace looptrace::loader {

// The BPF method-beat ring (events.h), as the decoder needs it.
class BeatSource {
 public:
  virtual ~BeatSource() = default;
  // Copies the beats with absolute indices [begin, end) that are still in the ring and
  // returns how many of them had already been overwritten.
  virtual uint64_t Copy(uint64_t begin, uint64_t end, std::vector<lt_beat>* out) const = 0;
};

// Names function addresses of the target (address-flavour method beats).
class AddressNamer {
 public:
  virtual ~AddressNamer() = default;
  virtual std::optional<std::string> Name(uint32_t pid, uint64_t address) = 0;
};

// Names the kernel stacks BPF stored (stack ids of switch records).
class KernelStackNamer {
 public:
  virtual ~KernelStackNamer() = default;
  virtual std::vector<std::string> KernelStack(int32_t stack_id) = 0;
};

// How a probe's method beats identify their method, from the profile's arguments.
MethodIdKind MethodIdKindOf(const ProbeSpec& spec);

struct DecoderOptions {
  // Messages at least this long get their method beats copied (MethodBeats event).
  uint64_t beat_min_cost_ns = 700'000'000;
  // Startups at least this long get the beats from app create (cold) or the launch
  // (warm) to the activity's focus.
  uint64_t cold_startup_beats_ns = 10'000'000'000;
  uint64_t warm_startup_beats_ns = 4'000'000'000;
};

class EventDecoder {
 public:
  // `strings`, `beats`, `addresses` and `kernel_stacks` may be null.
  EventDecoder(const AttachPlan* plan, StringReader* strings, Stats* stats,
               const BeatSource* beats = nullptr, AddressNamer* addresses = nullptr,
               DecoderOptions options = {}, KernelStackNamer* kernel_stacks = nullptr);

  // Appends the events a record yields to `out`: none for a malformed record (counted)
  // or a string text; a dispatch.end of a slow message yields its MethodBeats first.
  void Decode(std::span<const uint8_t> raw, std::vector<Event>* out);

  // Copies the beats of a message still running on `tid` (ANR snapshots); nothing if
  // no message is open there.
  std::optional<MethodBeats> OpenMessageBeats(uint32_t tid, uint64_t now_ns);

  // The top-level message running on `tid`, if any: (begin_ns) for the watchdog.
  std::optional<uint64_t> OpenMessageBegin(uint32_t tid) const;

 private:
  struct OpenDispatch {
    uint64_t begin_ns;
    uint64_t beat_index;
  };
  void DecodeProbe(const lt_probe_record& rec, std::vector<Event>* out);
  std::optional<std::string> LookupString(uint32_t pid, uint64_t address);
  MethodBeats CopyBeats(uint32_t pid, uint32_t tid, const OpenDispatch& open, uint64_t end_ns,
                        uint64_t end_index, const char* span);

  const AttachPlan* plan_;
  StringReader* strings_;
  Stats* stats_;
  const BeatSource* beats_;
  AddressNamer* addresses_;
  DecoderOptions options_;
  KernelStackNamer* kernel_stacks_;
  std::unordered_map<uint32_t, std::vector<OpenDispatch>> open_by_tid_;
  std::unordered_map<uint32_t, OpenDispatch> open_idle_;      // idle handler spans per tid
  std::unordered_map<uint64_t, std::pair<uint32_t, OpenDispatch>> open_inputs_;  // by seq
  std::optional<OpenDispatch> app_create_;   // cold startup span start
  std::optional<OpenDispatch> warm_launch_;  // warm startup span start
  bool focused_once_ = false;
  std::vector<MethodIdKind> kind_by_probe_;
  std::optional<MethodIdKind> beat_kind_;
  std::unordered_map<uint64_t, std::string> sent_strings_;  // from LT_RECORD_STRING
  uint32_t pid_ = 0;                                         // the target, from its records
};

}  // namespace looptrace::loader
