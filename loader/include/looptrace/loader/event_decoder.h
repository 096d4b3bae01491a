// The one place where raw BPF records (events.h) become C++ events. It only decodes:
// pairing begin and end is the span tracker's job (tracers/span_tracker.h), copying method
// beats the beat slicer's (beat_slicer.h).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "looptrace/events.h"

#include "looptrace/loader/attach_plan.h"
#include "looptrace/loader/beat_slicer.h"
#include "looptrace/loader/string_reader.h"
#include "looptrace/tracers/event.h"
#include "looptrace/tracers/stats.h"

namespace looptrace::loader {

class StackResolver;

// Names the kernel stacks BPF stored (stack ids of switch records).
class KernelStackNamer {
 public:
  virtual ~KernelStackNamer() = default;
  virtual std::vector<std::string> KernelStack(int32_t stack_id) = 0;
};

class EventDecoder {
 public:
  // `strings`, `identities`, `kernel_stacks` and `addresses` (names `sym` arguments) may be
  // null. `pid` is the target.
  EventDecoder(const AttachPlan* plan, StringTable* strings, Stats* stats, uint32_t pid,
               KernelStackNamer* kernel_stacks = nullptr, IdentityTable* identities = nullptr,
               AddressNamer* addresses = nullptr);

  // A record of the record ring: appends the event it yields (none if malformed: counted).
  // Inline: nearly every record is a probe hit, and most probes' arguments are plain values.
  [[gnu::always_inline]] void Decode(const lt_record& record, std::vector<Event>* out) {
    if (record.type == LT_RECORD_PROBE && record.probe_id < decodings_.size()) [[likely]] {
      const ProbeDecoding& decoding = decodings_[record.probe_id];
      ProbeEvent& e = StartProbeEvent(record, decoding, out);
      if (decoding.plain) [[likely]] {
        // The raw values, as DecodeArguments stores them (plain: at most LT_MAX_ARGS).
        const auto& names = decoding.arg_names;
        EventArg* args = e.args.Grow(names.size());
        for (size_t i = 0; i < names.size(); ++i) args[i] = {names[i], record.probe.args[i], nullptr, false};
      } else {
        DecodeArguments(record, e);
      }
      return;
    }
    DecodeOther(record, out);
  }
  // A side record of the ring buffer (string texts, identities, nudges): kept in the tables.
  void DecodeSide(std::span<const uint8_t> raw) { DecodeSide(raw, nullptr); }
  // The same; stack samples (sample ring) become events appended to `out` when a stack
  // resolver is set (SetStackResolver), else they are dropped.
  void DecodeSide(std::span<const uint8_t> raw, std::vector<Event>* out);
  void SetStackResolver(StackResolver* stacks) { stacks_ = stacks; }

 private:
  // How a probe's records decode, worked out once per probe.
  struct ProbeDecoding {
    std::vector<std::string_view> arg_names;  // interned
    Role role = Role::kDispatchBegin;
    // Only raw-value arguments (no strings, symbols, function names or thread name): copied
    // straight from the record.
    bool plain = false;
  };
  // The probe's event, built in place with its fields (a ProbeEvent is large and this runs
  // for every record); arguments still to add.
  ProbeEvent& StartProbeEvent(const lt_record& rec, const ProbeDecoding& decoding, std::vector<Event>* out) {
    return std::get<ProbeEvent>(out->emplace_back(std::in_place_type<ProbeEvent>, rec.ts_ns, pid_, rec.tid,
                                                  decoding.role, rec.probe_id, rec.probe.thread_cpu_ns,
                                                  rec.probe.beat_index, rec.probe.sp));
  }
  // Arguments that are not plain values (strings, symbols, function names, thread names).
  void DecodeArguments(const lt_record& rec, ProbeEvent& e);
  // Every other record type, and probe records of unknown probes (counted).
  void DecodeOther(const lt_record& rec, std::vector<Event>* out);
  // A `sym` argument's text: the function at `address` (cached), or the address in hex.
  const std::string* NameAddress(uint64_t address);  // interned; null for 0

  const AttachPlan* plan_;
  StringTable* strings_;
  Stats* stats_;
  uint32_t pid_;
  KernelStackNamer* kernel_stacks_;
  IdentityTable* identities_;
  std::vector<ProbeDecoding> decodings_;  // per probe
  AddressNamer* addresses_;
  std::unordered_map<uint64_t, const std::string*> address_names_;  // interned
  StackResolver* stacks_ = nullptr;
};

}  // namespace looptrace::loader
