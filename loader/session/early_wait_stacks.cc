#include "loader/session/early_wait_stacks.h"

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "looptrace/events.h"
#include "looptrace/symbols/unwinder.h"

namespace looptrace::loader {

bool EarlyWaitStacks::CanDefer(const InterpreterSupport* interpreter, bool native_frames) {
  return !interpreter || (interpreter->ReadsThreadStacks() && !native_frames);
}

namespace {

// Whether a thread whose state BPF keeps as `state` is still in the wait that left it
// `switches` switches.
bool InWait(const std::optional<lt_thread_state>& state, uint64_t switches) {
  return state && state->switches == switches && state->state != LT_STATE_RUNNING && state->wait_sp;
}

}  // namespace

std::optional<StackSample> EarlyWaitStacks::Read(std::span<const uint8_t> raw) {
  lt_wait_record rec;
  if (raw.size() < sizeof(rec)) {
    stats_->Add(StatId::malformed_records);
    return std::nullopt;
  }
  std::memcpy(&rec, raw.data(), sizeof(rec));
  const auto state = bpf_->ThreadState(rec.tid);
  if (!InWait(state, rec.switches)) {
    stats_->Add(StatId::early_wait_stacks_missed);
    return std::nullopt;
  }
  symbols::UnwindRegisters regs;
  regs.Set(16, state->wait_pc);
  regs.Set(7, state->wait_sp);
  if (state->wait_bp) regs.Set(6, state->wait_bp);
  const auto native = stacks_->FromWaitingThread(regs, bpf_->ShadowStack(rec.tid));
  std::vector<InterpreterFrame> interpreted;
  if (interpreter_) {
    auto threads = interpreter_->ThreadStacks(stats_);
    if (auto it = threads.find(rec.tid); it != threads.end()) interpreted = std::move(it->second);
  }
  // Read while it waited: the same stack as at its switch-out only if it has not run since.
  if (!InWait(bpf_->ThreadState(rec.tid), rec.switches)) {
    stats_->Add(StatId::early_wait_stacks_missed);
    return std::nullopt;
  }
  StackSample sample;
  sample.ts_ns = rec.ts_ns;
  sample.tid = rec.tid;
  sample.on_cpu = false;
  if (!interpreted.empty()) {
    // As the runtime's default view of a sample (InterpreterStacks::Splice): the native frames
    // the thread is in above its interpreter, then the interpreted ones; its outermost frame of
    // the program's own names a message no probe names.
    if (native)
      for (const ResolvedFrame& f : native->frames) {
        if (sample.frames.size() == LT_VIEW_NATIVE_LEAF || interpreter_->IsInterpreterModule(f.module) ||
            interpreter_->IsInterpreterLoop(f.function))
          break;
        sample.frames.push_back(f.Name());
      }
    for (const InterpreterFrame& f : interpreted) sample.frames.push_back(f.Name());
    for (auto f = interpreted.rbegin(); f != interpreted.rend(); ++f)
      if (f->user_code) {
        sample.callable = f->callable.empty() ? f->Name() : f->callable;
        break;
      }
  } else if (native) {
    for (const ResolvedFrame& f : native->frames) sample.frames.push_back(f.Name());
    sample.stop = native->stop;
  } else {
    sample.stop = "no user stack could be read";
  }
  stats_->Add(StatId::early_wait_stacks_late);
  return sample;
}

void EarlyWaitDeferral::OnLoaderBusy(bool busy, uint64_t now_ns) {
  std::lock_guard lock(mutex_);
  if (!busy) {
    resume_at_ns_ = now_ns + kSettleNs;
    return;
  }
  resume_at_ns_ = 0;
  if (deferring_) defer_(false);
  deferring_ = false;
}

void EarlyWaitDeferral::Tick(uint64_t now_ns) {
  std::lock_guard lock(mutex_);
  if (deferring_ || !resume_at_ns_ || now_ns < resume_at_ns_) return;
  defer_(true);
  deferring_ = true;
  resume_at_ns_ = 0;
}

bool EarlyWaitDeferral::deferring() const {
  std::lock_guard lock(mutex_);
  return deferring_;
}

}  // namespace looptrace::loader
