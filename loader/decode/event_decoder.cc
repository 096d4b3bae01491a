#include "loader/decode/event_decoder.h"

#include "loader/decode/stack_resolver.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "looptrace/symbols/demangle.h"
#include "looptrace/tracers/thread_state.h"

namespace looptrace::loader {
namespace {

static_assert(LT_MAX_ARGS <= ArgList::kCapacity, "a plain probe's arguments fit an event");

std::string Comm(const char (&text)[LT_TASK_COMM_LEN]) { return std::string(text, strnlen(text, sizeof(text))); }

}  // namespace

EventDecoder::EventDecoder(const AttachPlan* plan, StringTable* strings, Stats* stats, uint32_t pid,
                           KernelStackNamer* kernel_stacks, IdentityTable* identities, AddressNamer* addresses)
    : plan_(plan),
      strings_(strings),
      stats_(stats),
      pid_(pid),
      kernel_stacks_(kernel_stacks),
      identities_(identities),
      addresses_(addresses) {
  std::get<ProbeEvent>(probe_event_).pid = pid;
  for (const auto& p : plan_->probes) {
    ProbeDecoding& d = decodings_.emplace_back();
    d.role = p.spec.role;
    d.plain = p.spec.args.size() <= LT_MAX_ARGS && p.spec.role != Role::kLockRelease;
    for (size_t i = 0; i < p.spec.args.size(); ++i) {
      const ArgSpec& a = p.spec.args[i];
      d.arg_names.push_back(TextPool::Name(a.name));
      d.plain &=
          !FilledByLoader(a) && a.type != ArgType::kSym && a.type != ArgType::kStr && a.type != ArgType::kPyCallable;
      d.has_closure |= a.name == kClosureArg && a.type == ArgType::kPyCallable;
    }
  }
}

void EventDecoder::SetInterpreter(InterpreterSupport* interpreter, bool merged) {
  interpreter_ = interpreter;
  if (interpreter)
    interp_stacks_.emplace(interpreter, stats_, merged);
  else
    interp_stacks_.reset();
}

const std::string* EventDecoder::NameAddress(uint64_t address, bool* known, bool count_unknown) {
  if (known) *known = false;
  if (address == 0) return nullptr;  // no function (a source without a callback)
  auto it = address_names_.find(address);
  if (it == address_names_.end()) {
    std::optional<std::string> name = addresses_ ? addresses_->Name(pid_, address) : std::nullopt;
    const bool from_symbols = name.has_value();
    if (!name) name = fmt::format("{:#x}", address);
    it = address_names_.emplace(address, AddressName{TextPool::Intern(*name), from_symbols}).first;
    if (!from_symbols && count_unknown) stats_->Add(StatId::method_names_unknown);
  }
  if (known) *known = it->second.known;
  return it->second.text;
}

void EventDecoder::NameByClosure(ProbeEvent& e, size_t name_index, const std::string* callable,
                                 const std::string* group) {
  if (!callable) {
    stats_->Add(StatId::method_names_unknown);
    return;
  }
  (e.args.begin() + name_index)->text = callable;
  if (group) e.args.push_back({kMessageGroupArg, 0, group, true});
}

void EventDecoder::DecodeArguments(const lt_record& rec, ProbeEvent& e) {
  const ProbeDecoding& decoding = decodings_[rec.probe_id];
  const auto& names = decoding.arg_names;
  const ResolvedProbe& probe = plan_->probes[rec.probe_id];
  size_t name_index = SIZE_MAX;  // a `sym` name's argument
  bool name_known = true;
  uint64_t raw_name = 0;
  for (size_t i = 0; i < probe.spec.args.size(); ++i) {
    const ArgSpec& spec = probe.spec.args[i];
    if (spec.source == kSourceFunction) {
      // The function the probe resolved to (a glob's match), without its parameters.
      std::string_view function = probe.symbol;  // "*(table+16) = fn" for pointer points
      if (size_t eq = function.find(" = "); eq != std::string_view::npos) function.remove_prefix(eq + 3);
      e.args.push_back({names[i], 0, TextPool::Intern(symbols::StripParameters(function)), true});
      continue;
    }
    if (spec.source == kSourceText) {
      e.args.push_back({names[i], 0, TextPool::Intern(spec.text), true});
      continue;
    }
    if (i >= LT_MAX_ARGS) break;
    const uint64_t raw = rec.probe.args[i];
    EventArg arg{names[i], raw, nullptr, false};
    if (spec.type == ArgType::kSym) {
      arg.is_string = true;
      const bool is_name = names[i] == "name";
      bool known = true;
      arg.text = NameAddress(raw, &known, !(is_name && decoding.has_closure));
      if (is_name) {
        name_index = e.args.size();
        name_known = known;
        raw_name = raw;
      }
    }
    if (spec.type == ArgType::kInt) arg.value = static_cast<uint64_t>(static_cast<int64_t>(raw));
    if (spec.type == ArgType::kPyCallable) {
      // A closure matters only for a name no symbol gave (else it may be any C data).
      const bool closure = decoding.has_closure && names[i] == kClosureArg;
      if (closure && (name_index >= e.args.size() || name_known || raw_name == 0)) break;
      // BPF filled this slot and the next ones (events.h LT_PY_CALLABLE_SLOTS).
      arg.is_string = true;
      arg.value = 0;
      const std::string* group = nullptr;
      if (interpreter_ && i + LT_PY_CALLABLE_SLOTS <= LT_MAX_ARGS) {
        auto texts = [this](uint64_t address) { return strings_ ? strings_->Find(pid_, address) : nullptr; };
        CallableName name = interpreter_->NameCallable(
            std::span<const uint64_t>(reinterpret_cast<const uint64_t*>(&rec.probe.args[i]), LT_PY_CALLABLE_SLOTS),
            texts, stats_);
        if (!name.name.empty()) arg.text = TextPool::Intern(name.name);
        if (!name.group.empty()) group = TextPool::Intern(name.group);
      }
      if (closure) {
        NameByClosure(e, name_index, arg.text, group);
        break;
      }
      e.args.push_back(arg);
      if (group) e.args.push_back({kMessageGroupArg, 0, group, true});
      break;  // the callable's slots are the last
    }
    if (spec.type == ArgType::kStr) {
      arg.is_string = true;
      arg.text = strings_ ? strings_->Find(pid_, raw) : nullptr;
      if (!arg.text) stats_->Add(StatId::string_read_failed);
    }
    e.args.push_back(arg);
  }
  if (e.role == Role::kLockRelease && probe.spec.args.size() <= LT_COMM_ARG_SLOT) {
    // The thread releasing a monitor someone waits for is the holder a report names; BPF
    // took its name at the hit (LT_PROBE_COMM), as it may be gone by now.
    char comm[LT_TASK_COMM_LEN] = {};
    std::memcpy(comm, &rec.probe.args[LT_COMM_ARG_SLOT], sizeof(comm));
    const size_t length = strnlen(comm, sizeof(comm));
    e.args.push_back({"thread", e.tid, length ? TextPool::Intern(std::string_view(comm, length)) : nullptr, true});
  }
}

void EventDecoder::DecodeOther(const lt_record& rec, std::vector<Event>* out) {
  switch (rec.type) {
    case LT_RECORD_PROBE:  // Decode took those of known probes
      stats_->Add(StatId::unknown_probe_id);
      return;
    case LT_RECORD_SWITCH: {
      ThreadSwitch e;
      e.ts_ns = rec.ts_ns;
      e.tid = rec.tid;
      e.off_cpu = rec.sw.kind == LT_SWITCH_OUT;
      e.state = rec.sw.state;
      if (e.off_cpu && kernel_stacks_ && rec.sw.kstack_id >= 0)
        e.kernel_stack = kernel_stacks_->KernelStack(rec.sw.kstack_id);
      if (e.off_cpu && rec.sw.kstack_id == LT_STACK_IDLE) e.unstacked = kUnstackedLoopIdle;
      if (e.off_cpu && rec.sw.kstack_id == LT_STACK_YOUNG) e.unstacked = kUnstackedEarlyPreemption;
      if (e.off_cpu && rec.sw.ustack_id == LT_STACK_DEFERRED) e.unstacked = kUnstackedEarlyWait;
      if (e.off_cpu && rec.sw.kstack_id == LT_STACK_OUTSIDE_SYSCALL) e.wait_syscall = kWaitOutsideSyscall;
      if (e.off_cpu && rec.sw.kstack_id <= LT_STACK_SYSCALL_BASE &&
          rec.sw.kstack_id >= LT_STACK_IN_SYSCALL(LT_MAX_SYSCALL_NR))
        e.wait_syscall = LT_STACK_SYSCALL_BASE - rec.sw.kstack_id;
      out->push_back(std::move(e));
      return;
    }
    case LT_RECORD_EXEC:
      out->push_back(ProcessExec{rec.ts_ns, rec.exec.pid, Comm(rec.exec.comm)});
      return;
    case LT_RECORD_WAKEUP:
      out->push_back(
          Wakeup{rec.ts_ns, rec.tid, rec.wakeup.waker_tid, rec.wakeup.waker_tgid, Comm(rec.wakeup.waker_comm)});
      return;
    case LT_RECORD_SIGNAL: {
      SignalSent e;
      e.ts_ns = rec.ts_ns;
      e.signal = rec.signal.sig;
      e.target_tid = rec.tid;
      e.sender_pid = rec.signal.sender_tgid;
      e.sender_tid = rec.signal.sender_tid;
      e.sender_comm = Comm(rec.signal.sender_comm);
      e.result = rec.signal.result;
      out->push_back(std::move(e));
      return;
    }
    default:
      stats_->Add(StatId::malformed_records);
  }
}

void EventDecoder::DecodeSide(std::span<const uint8_t> raw, std::vector<Event>* out) {
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
    case LT_RECORD_STRING: {
      if (header.size != sizeof(lt_string_record)) break;
      lt_string_record rec;
      std::memcpy(&rec, raw.data(), sizeof(rec));
      const size_t length = std::min<size_t>(rec.length, LT_MAX_STRING);
      if (strings_) strings_->Add(rec.address, std::string(rec.text, length));
      return;
    }
    case LT_RECORD_IDENTITY: {
      if (header.size != sizeof(lt_identity_record)) break;
      lt_identity_record rec;
      std::memcpy(&rec, raw.data(), sizeof(rec));
      Identity identity;
      identity.probe_id = rec.probe_id;
      std::copy(std::begin(rec.values), std::end(rec.values), identity.values.begin());
      if (identities_) identities_->Add(rec.id, identity);
      return;
    }
    case LT_RECORD_NUDGE:
      if (header.size != sizeof(lt_nudge_record)) break;
      return;  // only woke the reader
    case LT_RECORD_SAMPLE:
    case LT_RECORD_SAMPLE_COPY: {
      if (!stacks_ || !out) return;
      ResolvedStack native;
      auto sample = stacks_->Decode(raw, interp_stacks_ ? &native : nullptr);
      if (!sample) break;
      if (interp_stacks_) interp_stacks_->Splice(native, &*sample);
      if (sample->on_cpu)  // the latest change at or before it (a change a second at most)
        for (auto p = periods_.rbegin(); p != periods_.rend(); ++p)
          if (p->since_ns <= sample->ts_ns) {
            sample->period_ns = p->period_ns;
            break;
          }
      out->push_back(std::move(*sample));
      return;
    }
    case LT_RECORD_INTERP_STACK:
      if (!interp_stacks_) return;  // no interpreter support: BPF was told nothing
      if (!interp_stacks_->Add(raw)) break;
      return;
    default:
      break;
  }
  stats_->Add(StatId::malformed_records);
}

}  // namespace looptrace::loader
