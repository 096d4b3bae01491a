#include "loader/decode/beat_slicer.h"

#include <algorithm>
#include <cstring>

namespace looptrace::loader {

MethodIdKind MethodIdKindOf(const ProbeSpec& spec) {
  if (spec.args.empty()) return MethodIdKind::kProbe;
  for (const auto& a : spec.args)
    if (a.type == ArgType::kStr) return MethodIdKind::kString;
  if (spec.args.front().name == "addr") return MethodIdKind::kAddress;
  return MethodIdKind::kId;
}

namespace {

// "/usr/lib/python3.11/asyncio/events.py" -> "asyncio.events"; other paths unchanged.
std::string PythonModule(const std::string& file) {
  if (!file.ends_with(".py")) return file;
  std::string path = file.substr(0, file.size() - 3);
  for (const char* root : {"/site-packages/", "/dist-packages/"})
    if (size_t at = path.rfind(root); at != std::string::npos) path = path.substr(at + std::strlen(root));
  if (size_t lib = path.find("/lib/python3"); lib != std::string::npos) {
    size_t slash = path.find('/', lib + 12);
    if (slash != std::string::npos) path = path.substr(slash + 1);
  } else if (size_t slash = path.rfind('/'); slash != std::string::npos) {
    path = path.substr(slash + 1);
  }
  std::replace(path.begin(), path.end(), '/', '.');
  if (path.ends_with(".__init__")) path.resize(path.size() - 9);
  return path;
}

}  // namespace

std::string BeatSlicer::ComposeMethodName(const ProbeSpec& spec, const std::vector<std::optional<std::string>>& texts,
                                          const std::array<uint64_t, LT_MAX_ARGS>& values) {
  std::string name, cls, sig, file;
  std::optional<int64_t> line;
  for (size_t i = 0; i < spec.args.size() && i < LT_MAX_ARGS; ++i) {
    const ArgSpec& a = spec.args[i];
    const std::string text = i < texts.size() && texts[i] ? *texts[i] : "?";
    if (a.name == "name")
      name = text;
    else if (a.name == "class")
      cls = text;
    else if (a.name == "sig")
      sig = text;
    else if (a.name == "file")
      file = text;
    else if (a.name == "line")
      line = static_cast<int64_t>(values[i]);
  }
  if (!cls.empty() && !sig.empty()) {
    std::replace(cls.begin(), cls.end(), '/', '.');
    return cls + "." + name + sig;
  }
  if (!file.empty()) return PythonModule(file) + ":" + name + (line ? ":" + std::to_string(*line) : "");
  if (!cls.empty()) return cls + ":" + name;
  return name;
}

std::optional<std::string> BeatSlicer::IdentityName(uint64_t id) {
  const Identity* identity = identities_ ? identities_->Find(id) : nullptr;
  if (!identity || identity->probe_id >= plan_->probes.size()) return std::nullopt;
  const ProbeSpec& spec = plan_->probes[identity->probe_id].spec;
  std::vector<std::optional<std::string>> texts;
  for (size_t i = 0; i < spec.args.size() && i < LT_MAX_ARGS; ++i) {
    if (spec.args[i].type != ArgType::kStr) {
      texts.push_back(std::nullopt);
      continue;
    }
    auto text = strings_ ? strings_->Lookup(pid_, identity->values[i]) : std::nullopt;
    if (!text) return std::nullopt;
    texts.push_back(std::move(text));
  }
  return ComposeMethodName(spec, texts, identity->values);
}

BeatSlicer::BeatSlicer(const AttachPlan* plan, const BeatSource* beats, StringTable* strings, AddressNamer* addresses,
                       Stats* stats, uint32_t pid, const IdentityTable* identities)
    : plan_(plan),
      beats_(beats),
      strings_(strings),
      addresses_(addresses),
      stats_(stats),
      pid_(pid),
      identities_(identities) {
  for (const auto& p : plan_->probes) {
    kind_by_probe_.push_back(MethodIdKindOf(p.spec));
    if (p.spec.role == Role::kMethodEnter && !beat_kind_) beat_kind_ = kind_by_probe_.back();
  }
}

std::optional<uint64_t> BeatSlicer::PairingKey(uint64_t id) const {
  const Identity* identity = identities_ ? identities_->Find(id) : nullptr;
  if (!identity || identity->probe_id >= plan_->probes.size()) return std::nullopt;
  const ProbeSpec& spec = plan_->probes[identity->probe_id].spec;
  // The strings that name the method, by argument name: an exit probe may bind fewer
  // arguments than its enter (CPython's return line is not the def line).
  uint64_t key = 0xcbf29ce484222325ull;
  for (std::string_view name : {"class", "name", "sig", "file"}) {
    uint64_t value = 0;
    for (size_t i = 0; i < spec.args.size() && i < LT_MAX_ARGS; ++i)
      if (spec.args[i].name == name) value = identity->values[i];
    key = (key ^ value) * 0x100000001b3ull;
  }
  return key;
}

std::optional<MethodBeats> BeatSlicer::Slice(const SliceRequest& request) {
  if (!beats_ || !beat_kind_) return std::nullopt;
  MethodBeats out;
  out.span = request.label;
  out.tid = request.tid;
  out.begin_ns = request.begin_ns;
  out.end_ns = request.end_ns;
  out.kind = *beat_kind_;
  // String-flavour beats: the enter and exit probes' identities differ (they are different
  // probes, and may bind different arguments), so an exit takes the id of the innermost open
  // enter naming the same method.
  std::vector<std::pair<uint64_t, uint64_t>> open_frames;  // (pairing key, enter id)
  // The ring is copied a chunk at a time: a stall snapshot's open slice can cover the whole
  // ring (32 MiB at the defaults), and a copy of it all at once is a spike of that much.
  constexpr uint64_t kChunk = 64 * 1024;        // beats (2 MiB)
  const uint64_t end = request.end_beat_index;  // UINT64_MAX: up to the ring's head
  std::vector<lt_beat> raw;
  for (uint64_t at = request.begin_beat_index; at < end; at += kChunk) {
    raw.clear();
    const uint64_t overwritten = beats_->Copy(at, std::min(end, at + kChunk), &raw);
    out.overwritten += overwritten;
    if (raw.empty() && !overwritten) break;  // past the head
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
          auto key = PairingKey(id);
          if (b.kind == LT_BEAT_ENTER) {
            if (key) open_frames.emplace_back(*key, id);
            if (!out.names.contains(id)) {
              if (auto name = IdentityName(id))
                out.names.emplace(id, *name);
              else
                stats_->Add(StatId::string_read_failed);
            }
          } else if (key) {
            for (size_t i = open_frames.size(); i-- > 0;) {
              if (open_frames[i].first != *key) continue;
              id = open_frames[i].second;
              open_frames.resize(i);  // frames above it never got their exit
              break;
            }
          }
          break;
        }
        case MethodIdKind::kId:
          break;
      }
      out.beats.push_back({b.ts_ns, id, b.kind == LT_BEAT_ENTER});
    }
  }
  return out;
}

}  // namespace looptrace::loader
