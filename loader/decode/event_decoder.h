// The one place where raw BPF records (events.h) become C++ events. It only decodes:
// pairing begin and end is the span tracker's job (tracers/span_tracker.h), copying method
// beats the beat slicer's (beat_slicer.h).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "looptrace/events.h"

#include "loader/decode/beat_slicer.h"
#include "loader/decode/interp_stacks.h"
#include "loader/decode/string_reader.h"
#include "loader/plan/attach_plan.h"
#include "looptrace/report/stats.h"
#include "looptrace/tracers/event.h"

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

  // A record of the record ring: calls `each(const Event&)` for the event it yields (none
  // if malformed: counted), valid until the next call. Inline, and a probe hit's event is
  // rewritten in place in one kept slot: nearly every record is a probe hit, most probes'
  // arguments are plain values, and a vector of variants made and cleared per record cost
  // more than the decoding.
  template <typename Each>
  [[gnu::always_inline]] void Decode(const lt_record& record, Each&& each) {
    if (record.type == LT_RECORD_PROBE && record.probe_id < decodings_.size()) [[likely]] {
      const ProbeDecoding& decoding = decodings_[record.probe_id];
      ProbeEvent& e = *std::get_if<ProbeEvent>(&probe_event_);
      e.ts_ns = record.ts_ns;
      e.tid = record.tid;
      e.role = decoding.role;
      e.probe_id = record.probe_id;
      e.thread_cpu_ns = record.probe.thread_cpu_ns;
      e.beat_index = record.probe.beat_index;
      e.sp = record.probe.sp;
      e.args.clear();
      if (decoding.plain) [[likely]] {
        // The raw values, as DecodeArguments stores them (plain: at most LT_MAX_ARGS).
        const size_t n = decoding.arg_names.size();
        const std::string_view* names = decoding.arg_names.data();
        EventArg* args = e.args.Grow(n);
        // A bounded trip count GCC unrolls: most probes have one or two arguments.
        static_assert(LT_MAX_ARGS == 8, "the unroll count below");
#pragma GCC unroll 8
        for (size_t i = 0; i < LT_MAX_ARGS; ++i) {
          if (i == n) break;
          args[i] = {names[i], record.probe.args[i], nullptr, false};
        }
      } else {
        DecodeArguments(record, e);
      }
      each(std::as_const(probe_event_));
      return;
    }
    other_events_.clear();
    DecodeOther(record, &other_events_);
    for (const Event& event : other_events_) each(event);
  }
  // The same, appending copies of the events to `out`.
  void Decode(const lt_record& record, std::vector<Event>* out) {
    Decode(record, [out](const Event& event) { out->push_back(event); });
  }
  // A side record of the ring buffer (string texts, identities, nudges): kept in the tables.
  void DecodeSide(std::span<const uint8_t> raw) { DecodeSide(raw, nullptr); }
  // The same; stack samples (sample ring) become events appended to `out` when a stack
  // resolver is set (SetStackResolver), else they are dropped.
  void DecodeSide(std::span<const uint8_t> raw, std::vector<Event>* out);
  void SetStackResolver(StackResolver* stacks) { stacks_ = stacks; }
  // On-CPU samples taken from `since_ns` on had this period (--cpu-budget changed the rate):
  // their events say it (StackSample::period_ns). Times only grow.
  void SampleRateChanged(uint64_t since_ns, uint64_t period_ns) { periods_.push_back({since_ns, period_ns}); }
  // The target's interpreter (runtimes/interpreter.h): names callables of its type
  // (pycallable arguments) and splices its frames into stack samples (`merged`: into the
  // native frames, replacing the interpreter loop's). Null: none.
  void SetInterpreter(InterpreterSupport* interpreter, bool merged);

 private:
  // How a probe's records decode, worked out once per probe.
  struct ProbeDecoding {
    std::vector<std::string_view> arg_names;  // interned
    Role role = Role::kDispatchBegin;
    // Only raw-value arguments (no strings, symbols, function names or thread name): copied
    // straight from the record.
    bool plain = false;
    bool has_closure = false;  // a `closure` argument (a pycallable) stands in for an unnamed `name`
  };
  // Arguments that are not plain values (strings, symbols, function names, thread names).
  void DecodeArguments(const lt_record& rec, ProbeEvent& e);
  // Every other record type, and probe records of unknown probes (counted).
  void DecodeOther(const lt_record& rec, std::vector<Event>* out);
  // A `sym` argument's text: the function at `address` (cached), or the address in hex
  // (`known` false; counted unless `count_unknown` is false).
  const std::string* NameAddress(uint64_t address, bool* known = nullptr,
                                 bool count_unknown = true);  // interned; null for 0
  // A message named by a code address no symbol covers (e.args[name_index]) takes the name
  // of the callable its `closure` argument found: pygobject's callbacks are libffi closures
  // in anonymous memory.
  void NameByClosure(ProbeEvent& e, size_t name_index, const std::string* callable, const std::string* group);

  const AttachPlan* plan_;
  StringTable* strings_;
  Stats* stats_;
  uint32_t pid_;
  KernelStackNamer* kernel_stacks_;
  IdentityTable* identities_;
  std::vector<ProbeDecoding> decodings_;  // per probe
  AddressNamer* addresses_;
  struct AddressName {
    const std::string* text;  // interned
    bool known;               // from the target's symbols, not the address in hex
  };
  std::unordered_map<uint64_t, AddressName> address_names_;
  StackResolver* stacks_ = nullptr;
  struct PeriodSince {
    uint64_t since_ns, period_ns;
  };
  std::vector<PeriodSince> periods_;  // empty: every sample at the session's rate
  InterpreterSupport* interpreter_ = nullptr;
  std::optional<InterpreterStacks> interp_stacks_;
  Event probe_event_{std::in_place_type<ProbeEvent>};  // Decode's probe hits, rewritten in place
  std::vector<Event> other_events_;                    // Decode's other records
};

}  // namespace looptrace::loader
