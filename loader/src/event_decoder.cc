#include "looptrace/loader/event_decoder.h"

#include <algorithm>
#include <cstring>

#include "looptrace/events.h"
#include "looptrace/util/text_safety.h"

namespace looptrace::loader {

MethodIdKind MethodIdKindOf(const ProbeSpec& spec) {
  if (spec.args.empty()) return MethodIdKind::kProbe;
  const std::string& first = spec.args.front().name;
  if (first == "addr") return MethodIdKind::kAddress;
  if (first == "name" || first == "class") return MethodIdKind::kString;
  return MethodIdKind::kId;
}

EventDecoder::EventDecoder(const AttachPlan* plan, StringReader* strings, Stats* stats,
                           const BeatSource* beats, AddressNamer* addresses, DecoderOptions options,
                           KernelStackNamer* kernel_stacks)
    : plan_(plan), strings_(strings), stats_(stats), beats_(beats), addresses_(addresses),
      options_(options), kernel_stacks_(kernel_stacks) {
  for (const auto& p : plan_->probes) {
    kind_by_probe_.push_back(MethodIdKindOf(p.spec));
    if (p.spec.role == Role::kMethodEnter && !beat_kind_) beat_kind_ = kind_by_probe_.back();
  }
}

namespace {

// String-flavour beats carry (name, class) pointers; one id stands for the pair.
uint64_t StringPairId(uint64_t name, uint64_t cls) { return name ^ (cls * 0x9E3779B97F4A7C15ull); }

}  // namespace

MethodBeats EventDecoder::CopyBeats(uint32_t pid, uint32_t tid, const OpenDispatch& open,
                                    uint64_t end_ns, uint64_t end_index, const char* span) {
  MethodBeats out;
  out.span = span;
  out.tid = tid;
  out.begin_ns = open.begin_ns;
  out.end_ns = end_ns;
  out.kind = beat_kind_.value_or(MethodIdKind::kId);
  std::vector<lt_beat> raw;
  out.overwritten = beats_->Copy(open.beat_index, end_index, &raw);
  for (const lt_beat& b : raw) {
    if (b.tid != tid || b.ts_ns < open.begin_ns || b.ts_ns > end_ns) continue;
    if (b.probe_id == LT_FAST_BEAT_PROBE) {  // the first argument is the identity
      if (out.kind == MethodIdKind::kAddress && !out.names.contains(b.id) && addresses_) {
        if (auto name = addresses_->Name(pid, b.id)) out.names.emplace(b.id, *name);
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
          if (auto name = addresses_->Name(pid, id)) out.names.emplace(id, *name);
        }
        break;
      case MethodIdKind::kString: {
        id = StringPairId(b.id, b.aux);
        if (!out.names.contains(id)) {
          auto name = LookupString(pid, b.id);
          auto cls = b.aux ? LookupString(pid, b.aux) : std::nullopt;
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

std::optional<MethodBeats> EventDecoder::OpenMessageBeats(uint32_t tid, uint64_t now_ns) {
  auto it = open_by_tid_.find(tid);
  if (!beats_ || !beat_kind_ || it == open_by_tid_.end() || it->second.empty()) return std::nullopt;
  return CopyBeats(pid_, tid, it->second.front(), now_ns, UINT64_MAX, "open");
}

std::optional<uint64_t> EventDecoder::OpenMessageBegin(uint32_t tid) const {
  auto it = open_by_tid_.find(tid);
  if (it == open_by_tid_.end() || it->second.empty()) return std::nullopt;
  return it->second.front().begin_ns;
}

std::optional<std::string> EventDecoder::LookupString(uint32_t pid, uint64_t address) {
  if (auto it = sent_strings_.find(address); it != sent_strings_.end()) return it->second;
  if (!strings_) return std::nullopt;
  return strings_->Read(pid, address);  // BPF could not copy it: read it from the target
}

void EventDecoder::DecodeProbe(const lt_probe_record& rec, std::vector<Event>* out) {
  if (rec.probe_id >= plan_->probes.size()) {
    stats_->Add(StatId::unknown_probe_id);
    return;
  }
  const ResolvedProbe& probe = plan_->probes[rec.probe_id];
  ProbeEvent e;
  e.ts_ns = rec.ts_ns;
  e.pid = rec.tgid;
  e.tid = rec.tid;
  e.role = probe.spec.role;
  e.probe_id = rec.probe_id;
  e.thread_cpu_ns = rec.thread_cpu_ns;
  pid_ = rec.tgid;
  e.args.reserve(probe.spec.args.size());
  for (size_t i = 0; i < probe.spec.args.size() && i < LT_MAX_ARGS; ++i) {
    const ArgSpec& spec = probe.spec.args[i];
    EventArg arg{spec.name, rec.args[i], std::nullopt};
    if (spec.type == ArgType::kInt) arg.value = static_cast<uint64_t>(static_cast<int64_t>(rec.args[i]));
    if (spec.type == ArgType::kStr) {
      arg.is_string = true;
      arg.text = LookupString(rec.tgid, rec.args[i]);
      if (!arg.text) stats_->Add(StatId::string_read_failed);
    }
    e.args.push_back(std::move(arg));
  }
  // Spans whose method beats are copied when they are slow: messages, idle handlers and
  // input events. The beats go out before the span's end event.
  const bool copy_beats = beats_ && beat_kind_;
  auto slow = [&](const OpenDispatch& open) { return e.ts_ns - open.begin_ns >= options_.beat_min_cost_ns; };
  const uint64_t seq = e.Arg("seq") ? e.Arg("seq")->value : 0;
  switch (e.role) {
    case Role::kDispatchBegin:
      open_by_tid_[e.tid].push_back({e.ts_ns, rec.beat_index});
      break;
    case Role::kDispatchEnd: {
      auto& stack = open_by_tid_[e.tid];
      if (stack.empty()) break;
      OpenDispatch open = stack.back();
      stack.pop_back();
      if (copy_beats && slow(open))
        out->push_back(CopyBeats(rec.tgid, e.tid, open, e.ts_ns, rec.beat_index, "message"));
      break;
    }
    case Role::kIdleBegin:
      open_idle_[e.tid] = {e.ts_ns, rec.beat_index};
      break;
    case Role::kIdleEnd: {
      auto it = open_idle_.find(e.tid);
      if (it == open_idle_.end()) break;
      if (copy_beats && slow(it->second))
        out->push_back(CopyBeats(rec.tgid, e.tid, it->second, e.ts_ns, rec.beat_index, "idle"));
      open_idle_.erase(it);
      break;
    }
    case Role::kInputReceive:
      open_inputs_[seq] = {e.tid, {e.ts_ns, rec.beat_index}};
      break;
    case Role::kAppCreateBegin:
      app_create_ = OpenDispatch{e.ts_ns, rec.beat_index};
      break;
    case Role::kActivityLaunch:
      if (focused_once_) warm_launch_ = OpenDispatch{e.ts_ns, rec.beat_index};
      break;
    case Role::kActivityFocus: {
      focused_once_ = true;
      if (copy_beats && warm_launch_) {
        if (e.ts_ns - warm_launch_->begin_ns >= options_.warm_startup_beats_ns)
          out->push_back(CopyBeats(rec.tgid, e.tid, *warm_launch_, e.ts_ns, rec.beat_index, "warm_startup"));
        warm_launch_.reset();
      } else if (copy_beats && app_create_ && e.ts_ns - app_create_->begin_ns >= options_.cold_startup_beats_ns) {
        out->push_back(CopyBeats(rec.tgid, e.tid, *app_create_, e.ts_ns, rec.beat_index, "startup"));
      }
      break;
    }
    case Role::kInputFinish: {
      auto it = open_inputs_.find(seq);
      if (it == open_inputs_.end()) break;
      if (copy_beats && slow(it->second.second))
        out->push_back(CopyBeats(rec.tgid, it->second.first, it->second.second, e.ts_ns, rec.beat_index, "input"));
      open_inputs_.erase(it);
      break;
    }
    default:
      break;
  }
  out->push_back(std::move(e));
}

void EventDecoder::Decode(std::span<const uint8_t> raw, std::vector<Event>* out) {
  lt_record_header header;
  if (raw.size() < sizeof(header)) {
    stats_->Add(StatId::malformed_records);
    return;
  }
  std::memcpy(&header, raw.data(), sizeof(header));
  if (header.size > raw.size()) {
    stats_->Add(StatId::malformed_records);
    return;
  }
  switch (header.type) {
    case LT_RECORD_PROBE: {
      if (header.size != sizeof(lt_probe_record)) break;
      lt_probe_record rec;
      std::memcpy(&rec, raw.data(), sizeof(rec));
      DecodeProbe(rec, out);
      return;
    }
    case LT_RECORD_SWITCH: {
      if (header.size != sizeof(lt_switch_record)) break;
      lt_switch_record rec;
      std::memcpy(&rec, raw.data(), sizeof(rec));
      ThreadSwitch e;
      e.ts_ns = rec.ts_ns;
      e.tid = rec.tid;
      e.off_cpu = rec.kind == LT_SWITCH_OUT;
      e.state = rec.state;
      if (e.off_cpu && kernel_stacks_ && rec.kstack_id >= 0) e.kernel_stack = kernel_stacks_->KernelStack(rec.kstack_id);
      out->push_back(std::move(e));
      return;
    }
    case LT_RECORD_EXEC: {
      if (header.size != sizeof(lt_exec_record)) break;
      lt_exec_record rec;
      std::memcpy(&rec, raw.data(), sizeof(rec));
      out->push_back(ProcessExec{rec.ts_ns, rec.pid, std::string(rec.comm, strnlen(rec.comm, sizeof(rec.comm)))});
      return;
    }
    case LT_RECORD_WAKEUP: {
      if (header.size != sizeof(lt_wakeup_record)) break;
      lt_wakeup_record rec;
      std::memcpy(&rec, raw.data(), sizeof(rec));
      out->push_back(Wakeup{rec.ts_ns, rec.wakee_tid, rec.waker_tid, rec.waker_tgid,
                            std::string(rec.waker_comm, strnlen(rec.waker_comm, sizeof(rec.waker_comm)))});
      return;
    }
    case LT_RECORD_SIGNAL: {
      if (header.size != sizeof(lt_signal_record)) break;
      lt_signal_record rec;
      std::memcpy(&rec, raw.data(), sizeof(rec));
      SignalSent e;
      e.ts_ns = rec.ts_ns;
      e.signal = rec.sig;
      e.target_tid = rec.target_tid;
      e.sender_pid = rec.sender_tgid;
      e.sender_tid = rec.sender_tid;
      e.sender_comm = std::string(rec.sender_comm, strnlen(rec.sender_comm, sizeof(rec.sender_comm)));
      e.result = rec.result;
      out->push_back(std::move(e));
      return;
    }
    case LT_RECORD_STRING: {
      if (header.size != sizeof(lt_string_record)) break;
      lt_string_record rec;
      std::memcpy(&rec, raw.data(), sizeof(rec));
      size_t length = std::min<size_t>(rec.length, LT_MAX_STRING - 1);
      // Bytes from the target: valid UTF-8 from here on (SanitizingSink would copy each event).
      sent_strings_[rec.address] = SafeText(std::string_view(rec.text, strnlen(rec.text, length)));
      return;
    }
    default:
      break;
  }
  stats_->Add(StatId::malformed_records);
}

}  // namespace looptrace::loader
