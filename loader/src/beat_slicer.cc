#include "looptrace/loader/beat_slicer.h"

namespace looptrace::loader {

MethodIdKind MethodIdKindOf(const ProbeSpec& spec) {
  if (spec.args.empty()) return MethodIdKind::kProbe;
  const std::string& first = spec.args.front().name;
  if (first == "addr") return MethodIdKind::kAddress;
  if (first == "name" || first == "class") return MethodIdKind::kString;
  return MethodIdKind::kId;
}

BeatSlicer::BeatSlicer(const AttachPlan* plan, const BeatSource* beats, StringTable* strings,
                       AddressNamer* addresses, Stats* stats, uint32_t pid)
    : plan_(plan), beats_(beats), strings_(strings), addresses_(addresses), stats_(stats), pid_(pid) {
  for (const auto& p : plan_->probes) {
    kind_by_probe_.push_back(MethodIdKindOf(p.spec));
    if (p.spec.role == Role::kMethodEnter && !beat_kind_) beat_kind_ = kind_by_probe_.back();
  }
}

namespace {

// String-flavour beats carry (name, class) pointers; one id stands for the pair.
uint64_t StringPairId(uint64_t name, uint64_t cls) { return name ^ (cls * 0x9E3779B97F4A7C15ull); }

}  // namespace

std::optional<MethodBeats> BeatSlicer::Slice(const SliceRequest& request) {
  if (!beats_ || !beat_kind_) return std::nullopt;
  MethodBeats out;
  out.span = request.label;
  out.tid = request.tid;
  out.begin_ns = request.begin_ns;
  out.end_ns = request.end_ns;
  out.kind = *beat_kind_;
  std::vector<lt_beat> raw;
  out.overwritten = beats_->Copy(request.begin_beat_index, request.end_beat_index, &raw);
  auto lookup = [&](uint64_t address) -> std::optional<std::string> {
    return strings_ ? strings_->Lookup(pid_, address) : std::nullopt;
  };
  for (const lt_beat& b : raw) {
    if (b.tid != request.tid || b.ts_ns < request.begin_ns || b.ts_ns > request.end_ns) continue;
    if (b.probe_id == LT_FAST_BEAT_PROBE) {  // the first argument is the identity
      if (out.kind == MethodIdKind::kAddress && !out.names.contains(b.id) && addresses_) {
        if (auto name = addresses_->Name(pid_, b.id)) out.names.emplace(b.id, *name);
      }
      out.beats.push_back({b.ts_ns, b.id, b.kind == LT_BEAT_ENTER});
      continue;
    }
    if (b.probe_id >= plan_->probes.size()) {
      stats_->Add(StatId::unknown_probe_id);
      continue;
    }
    const ResolvedProbe& probe = plan_->probes[b.probe_id];
    uint64_t id = b.id;
    switch (kind_by_probe_[b.probe_id]) {
      case MethodIdKind::kProbe:
        out.names.emplace(id, probe.symbol);
        break;
      case MethodIdKind::kAddress:
        if (!out.names.contains(id) && addresses_) {
          if (auto name = addresses_->Name(pid_, id)) out.names.emplace(id, *name);
        }
        break;
      case MethodIdKind::kString: {
        id = StringPairId(b.id, b.aux);
        if (!out.names.contains(id)) {
          auto name = lookup(b.id);
          auto cls = b.aux ? lookup(b.aux) : std::nullopt;
          if (name) out.names.emplace(id, cls ? *cls + ":" + *name : *name);
          else stats_->Add(StatId::string_read_failed);
        }
        break;
      }
      case MethodIdKind::kId:
        break;
    }
    out.beats.push_back({b.ts_ns, id, b.kind == LT_BEAT_ENTER});
  }
  return out;
}

}  // namespace looptrace::loader
