#include "looptrace/loader/event_decoder.h"

#include <algorithm>
#include <cstring>

#include "looptrace/events.h"

namespace looptrace::loader {

std::optional<std::string> EventDecoder::LookupString(uint32_t pid, uint64_t address) {
  if (auto it = sent_strings_.find(address); it != sent_strings_.end()) return it->second;
  if (!strings_) return std::nullopt;
  return strings_->Read(pid, address);  // BPF could not copy it: read it from the target
}

std::optional<Event> EventDecoder::Decode(std::span<const uint8_t> raw) {
  lt_record_header header;
  if (raw.size() < sizeof(header)) {
    stats_->Add(StatId::malformed_records);
    return std::nullopt;
  }
  std::memcpy(&header, raw.data(), sizeof(header));
  if (header.size > raw.size()) {
    stats_->Add(StatId::malformed_records);
    return std::nullopt;
  }
  switch (header.type) {
    case LT_RECORD_PROBE: {
      if (header.size != sizeof(lt_probe_record)) break;
      lt_probe_record rec;
      std::memcpy(&rec, raw.data(), sizeof(rec));
      if (rec.probe_id >= plan_->probes.size()) {
        stats_->Add(StatId::unknown_probe_id);
        return std::nullopt;
      }
      const ResolvedProbe& probe = plan_->probes[rec.probe_id];
      ProbeEvent e;
      e.ts_ns = rec.ts_ns;
      e.pid = rec.tgid;
      e.tid = rec.tid;
      e.role = probe.spec.role;
      e.probe_id = rec.probe_id;
      e.args.reserve(probe.spec.args.size());
      for (size_t i = 0; i < probe.spec.args.size() && i < LT_MAX_ARGS; ++i) {
        const ArgSpec& spec = probe.spec.args[i];
        EventArg arg{spec.name, rec.args[i], std::nullopt};
        if (spec.type == ArgType::kInt)
          arg.value = static_cast<uint64_t>(static_cast<int64_t>(rec.args[i]));
        if (spec.type == ArgType::kStr) {
          arg.is_string = true;
          arg.text = LookupString(rec.tgid, rec.args[i]);
          if (!arg.text) stats_->Add(StatId::string_read_failed);
        }
        e.args.push_back(std::move(arg));
      }
      return Event{std::move(e)};
    }
    case LT_RECORD_STRING: {
      if (header.size != sizeof(lt_string_record)) break;
      lt_string_record rec;
      std::memcpy(&rec, raw.data(), sizeof(rec));
      size_t length = std::min<size_t>(rec.length, LT_MAX_STRING - 1);
      sent_strings_[rec.address] = std::string(rec.text, strnlen(rec.text, length));
      return std::nullopt;
    }
    default:
      break;
  }
  stats_->Add(StatId::malformed_records);
  return std::nullopt;
}

}  // namespace looptrace::loader
