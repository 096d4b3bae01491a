// Serves the pipeline's slice requests live: copies a thread's method beats between two
// ring heads out of the BPF beat ring and names them (addresses from ELF symbols, strings
// from the string table, probe points from the plan).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "loader/bpf/beat_source.h"
#include "loader/decode/string_reader.h"
#include "loader/plan/attach_plan.h"
#include "looptrace/events.h"
#include "looptrace/tracers/tracer.h"

namespace looptrace::loader {

// Names function addresses of the target (address-flavour method beats).
class AddressNamer {
 public:
  virtual ~AddressNamer() = default;
  virtual std::optional<std::string> Name(uint32_t pid, uint64_t address) = 0;
};

// How a probe's method beats identify their method, from the profile's arguments.
MethodIdKind MethodIdKindOf(const ProbeSpec& spec);

class BeatSlicer : public SliceSource {
 public:
  // `strings`, `addresses` and `identities` may be null.
  BeatSlicer(const AttachPlan* plan, const BeatSource* beats, StringTable* strings, AddressNamer* addresses,
             Stats* stats, uint32_t pid, const IdentityTable* identities = nullptr);

  // False when the profile maps no method roles (there is nothing to slice).
  bool enabled() const { return beat_kind_.has_value(); }
  std::optional<MethodBeats> Slice(const SliceRequest& request) override;

  // The display name of a string-flavour method: "pkg.Class.method(sig)" (class and sig),
  // "module:function:line" (file and line), "class:name", or the name.
  static std::string ComposeMethodName(const ProbeSpec& spec, const std::vector<std::optional<std::string>>& texts,
                                       const std::array<uint64_t, LT_MAX_ARGS>& values);

 private:
  std::optional<std::string> IdentityName(uint64_t id);
  // What an enter and its exit have in common: the method's name strings (by argument name).
  std::optional<uint64_t> PairingKey(uint64_t id) const;

  const AttachPlan* plan_;
  const BeatSource* beats_;
  StringTable* strings_;
  AddressNamer* addresses_;
  Stats* stats_;
  uint32_t pid_;
  const IdentityTable* identities_;
  std::vector<MethodIdKind> kind_by_probe_;
  std::optional<MethodIdKind> beat_kind_;
};

}  // namespace looptrace::loader
