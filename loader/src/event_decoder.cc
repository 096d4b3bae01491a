#include "looptrace/loader/event_decoder.h"

#include <algorithm>
#include <cstring>

#include "looptrace/events.h"

namespace looptrace::loader {

EventDecoder::EventDecoder(const AttachPlan* plan, StringTable* strings, Stats* stats,
                           KernelStackNamer* kernel_stacks)
    : plan_(plan), strings_(strings), stats_(stats), kernel_stacks_(kernel_stacks) {}

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
  e.beat_index = rec.beat_index;
  e.args.reserve(probe.spec.args.size());
  for (size_t i = 0; i < probe.spec.args.size() && i < LT_MAX_ARGS; ++i) {
    const ArgSpec& spec = probe.spec.args[i];
    EventArg arg{spec.name, rec.args[i], std::nullopt};
    if (spec.type == ArgType::kInt) arg.value = static_cast<uint64_t>(static_cast<int64_t>(rec.args[i]));
    if (spec.type == ArgType::kStr) {
      arg.is_string = true;
      arg.text = strings_ ? strings_->Lookup(rec.tgid, rec.args[i]) : std::nullopt;
      if (!arg.text) stats_->Add(StatId::string_read_failed);
    }
    e.args.push_back(std::move(arg));
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
      if (strings_) strings_->Add(rec.address, std::string(rec.text, strnlen(rec.text, length)));
      return;
    }
    default:
      break;
  }
  stats_->Add(StatId::malformed_records);
}

}  // namespace looptrace::loader
