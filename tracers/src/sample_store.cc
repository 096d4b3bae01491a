#include "looptrace/tracers/sample_store.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string_view>

#include "looptrace/tracers/sampled_call_tree.h"
#include "looptrace/tracers/thread_state.h"

namespace looptrace {

namespace {

size_t Mix(size_t seed, size_t value) { return seed ^ (value + 0x9e3779b97f4a7c15ull + (seed << 6) + (seed >> 2)); }

}  // namespace

size_t SampleStore::FramesHash::operator()(const Frames& frames) const {
  size_t h = frames.size();
  for (const std::string& f : frames) h = Mix(h, std::hash<std::string_view>()(f));
  return h;
}

size_t SampleStore::SessionKeyHash::operator()(const SessionKey& k) const {
  size_t h = Mix(k.tid, std::hash<const void*>()(k.frames));
  h = Mix(h, k.on_cpu);
  h = Mix(h, std::hash<std::string_view>()(k.stop));
  return Mix(h, std::hash<std::string_view>()(k.reason));
}

size_t SampleStore::OnCpuKeyHash::operator()(const std::pair<const Frames*, std::string>& k) const {
  return Mix(std::hash<const void*>()(k.first), std::hash<std::string_view>()(k.second));
}

std::shared_ptr<const SampleStore::Frames> SampleStore::Intern(const Frames& frames) {
  auto it = interned_.find(frames);
  if (it != interned_.end()) return *it;
  return *interned_.insert(std::make_shared<const Frames>(frames)).first;
}

void SampleStore::OnSessionStart(const SessionStart& start) {
  pid_ = start.pid;
  sample_hz_ = start.sample_hz;
  dwarf_ = start.dwarf_unwind;
}

void SampleStore::OnSample(const StackSample& e) {
  Thread& t = threads_[e.tid];
  // An early wait's stack read after its switch record came (kUnstackedEarlyWait): it takes
  // the place of the stretch that record left without one.
  if (!e.on_cpu)
    for (auto it = t.samples.rbegin(); it != t.samples.rend() && it->ts_ns >= e.ts_ns; ++it)
      if (it->ts_ns == e.ts_ns && !it->on_cpu && !it->frames && it->stop == kUnstackedEarlyWait) {
        it->frames = Intern(e.frames);
        it->stop = e.stop;
        it->callable = e.callable;
        if (!it->callable.empty()) ++callables_;
        return;
      }
  Sample s;
  s.frames = Intern(e.frames);
  s.ts_ns = e.ts_ns;
  s.on_cpu = e.on_cpu;
  s.period_ns = e.period_ns;
  s.stop = e.stop;
  s.callable = e.callable;
  if (!s.callable.empty()) ++callables_;
  // Samples come in time order per thread; keep the queue sorted if one does not.
  if (!s.on_cpu) t.unsettled_from_ns = std::min(t.unsettled_from_ns, s.ts_ns);
  auto at = t.samples.end();
  while (at != t.samples.begin() && std::prev(at)->ts_ns > s.ts_ns) --at;
  t.samples.insert(at, std::move(s));
  // A thread that only gets samples (one a runtime asked to sample: no probe hits, no
  // switches) would keep them all: those no span can want any more go to the session.
  if (e.on_cpu && e.ts_ns > kRecordLagNs) {
    t.last_event_ns = std::max(t.last_event_ns, e.ts_ns - kRecordLagNs);
    Prune(e.tid, t);
  }
}

void SampleStore::OnSwitch(const ThreadSwitch& sw) {
  if (!sample_hz_) return;  // no stack samples in this session
  Thread& t = threads_[sw.tid];
  if (sw.off_cpu) {
    // Its sample (same timestamp) came first; a sample lost on the way leaves the time
    // without a stack, still counted.
    Sample* match = nullptr;
    for (auto it = t.samples.rbegin(); it != t.samples.rend() && it->ts_ns >= sw.ts_ns; ++it)
      if (it->ts_ns == sw.ts_ns && !it->on_cpu && !it->switch_seen) match = &*it;
    if (!match) {
      Sample s;
      s.ts_ns = sw.ts_ns;
      s.on_cpu = false;
      s.stop = sw.unstacked.empty() ? "no stack sample" : std::string(sw.unstacked);
      t.unsettled_from_ns = std::min(t.unsettled_from_ns, s.ts_ns);
      auto at = t.samples.end();
      while (at != t.samples.begin() && std::prev(at)->ts_ns > s.ts_ns) --at;
      match = &*t.samples.insert(at, std::move(s));
    }
    match->switch_seen = true;
    match->reason = match->frames ? ClassifyOffCpu(sw.state, sw.kernel_stack, *match->frames, sw.wait_syscall)
                                  : ClassifyOffCpu(sw.state, sw.kernel_stack, sw.wait_syscall);
    return;
  }
  // Back on CPU: the latest off-CPU stretch ends.
  for (auto it = t.samples.rbegin(); it != t.samples.rend(); ++it) {
    if (it->on_cpu || !it->switch_seen) continue;
    if (!it->off_end_ns && it->ts_ns <= sw.ts_ns) it->off_end_ns = sw.ts_ns;
    break;
  }
  // A span that begins later begins after this record: a thread that wakes without
  // dispatching anything does not keep its samples.
  t.last_event_ns = std::max(t.last_event_ns, sw.ts_ns);
  Settle(t, sw.ts_ns);
  Prune(sw.tid, t);
}

// The thread ran at `running_ns` (a switch-in, a probe hit): every off-CPU stretch that
// began before has had its switch records (they come before the thread's later records),
// unless the record ring dropped them. Such a stretch would stay "still off CPU" forever and
// keep every later sample queued (Prune stops at it): its reason stays unknown and it ends
// at the next sample, or at `running_ns`, the latest it can have ended.
void SampleStore::SettleSamples(Thread& t, uint64_t running_ns) {
  uint64_t next_ns = running_ns, still = UINT64_MAX;
  for (auto it = t.samples.rbegin(); it != t.samples.rend() && it->ts_ns >= t.unsettled_from_ns; ++it) {
    if (it->on_cpu) {
      next_ns = std::min(next_ns, it->ts_ns);
      continue;
    }
    if (it->ts_ns >= running_ns) {
      if (!it->switch_seen || !it->off_end_ns) still = it->ts_ns;
      continue;
    }
    if (!it->switch_seen || !it->off_end_ns) {
      if (!it->switch_seen) {
        it->switch_seen = true;
        it->reason = "unknown";  // the switch record said why
      }
      if (!it->off_end_ns) it->off_end_ns = std::max(next_ns, it->ts_ns);
      stats_->Add(StatId::switch_record_lost);
    }
    next_ns = it->ts_ns;
  }
  t.unsettled_from_ns = still;
}

void SampleStore::ForgetOpen(uint64_t span_id) {
  for (auto it = open_.rbegin(); it != open_.rend(); ++it)
    if (it->id == span_id) {
      open_.erase(std::next(it).base());
      return;
    }
}

std::string SampleStore::TakeCallable(const Span& span) {
  Thread* t = threads_.Find(span.tid);
  if (!t) return "";
  std::vector<std::pair<std::string, size_t>> counts;  // in order of first sample
  for (Sample& s : t->samples) {
    if (s.ts_ns > span.end_ns) break;
    if (s.ts_ns < span.begin_ns || s.callable.empty()) continue;
    auto it = std::find_if(counts.begin(), counts.end(), [&](const auto& c) { return c.first == s.callable; });
    if (it == counts.end())
      counts.emplace_back(std::move(s.callable), 1);
    else
      ++it->second;
    s.callable.clear();
    --callables_;
  }
  if (counts.empty()) return "";
  auto best = counts.begin();
  for (auto it = counts.begin(); it != counts.end(); ++it)
    if (it->second > best->second) best = it;
  return std::move(best->first);
}

SampledCallTree SampleStore::TreeOf(const Span& span) {
  if (!sample_hz_) return {};
  if (span.close != SpanClose::kUnfinished) Settle(threads_[span.tid], span.end_ns);
  return Tree(span.tid, span.begin_ns, span.end_ns);
}

SampledCallTree SampleStore::Tree(uint32_t tid, uint64_t begin_ns, uint64_t end_ns) {
  if (!sample_hz_) return {};
  std::vector<WeightedStack> stacks;
  uint64_t off_total = 0;
  uint64_t on_periods = 0, on_samples = 0;  // the on-CPU samples' periods summed, and their count
  auto& samples = threads_[tid].samples;
  for (const Sample& s : samples) {
    if (s.ts_ns > end_ns) break;
    if (s.on_cpu) {
      if (s.ts_ns >= begin_ns) {
        on_periods += PeriodOf(s);
        ++on_samples;
      }
      continue;
    }
    const uint64_t off_end = s.off_end_ns ? s.off_end_ns : end_ns;
    const uint64_t from = std::max(s.ts_ns, begin_ns), to = std::min(off_end, end_ns);
    if (to > from) off_total += to - from;
  }
  const uint64_t span_ns = end_ns - begin_ns;
  const uint64_t on_cpu_ns = span_ns > off_total ? span_ns - off_total : 0;
  // Samples are uniform in CPU time: each on-CPU sample stands for a share of it by its
  // period (equal ones, unless --cpu-budget changed the rate inside the span).
  uint64_t given = 0, periods_so_far = 0;
  for (auto it = samples.begin(); it != samples.end(); ++it) {
    const Sample& s = *it;
    if (s.ts_ns > end_ns) break;
    WeightedStack w;
    w.frames = s.frames.get();
    w.ts_ns = s.ts_ns;
    w.on_cpu = s.on_cpu;
    w.stop = s.stop;
    if (s.early_unstacked())
      if (const Sample* stand_in = StandIn(samples, it, nullptr, begin_ns, end_ns)) {
        w.frames = stand_in->frames.get();
        w.stop = stand_in->stop;
      }
    if (s.on_cpu) {
      if (s.ts_ns < begin_ns) continue;
      periods_so_far += PeriodOf(s);
      const auto share = static_cast<uint64_t>(static_cast<unsigned __int128>(on_cpu_ns) * periods_so_far /
                                               on_periods);  // no rounding drift
      w.weight_ns = share - given;
      given = share;
    } else {
      const uint64_t off_end = s.off_end_ns ? s.off_end_ns : end_ns;
      const uint64_t from = std::max(s.ts_ns, begin_ns), to = std::min(off_end, end_ns);
      if (to <= from) continue;
      w.weight_ns = to - from;
      w.reason = s.reason;
    }
    stacks.push_back(std::move(w));
  }
  SampledCallTree tree = BuildSampledTree(stacks, span_ns, on_cpu_ns, max_nodes_);
  tree.sample_hz = MeanHz(on_samples, on_periods);
  tree.nominal_sample_hz = sample_hz_;
  tree.dwarf = dwarf_;
  for (const auto& [reason, n] : tree.walk_stops)
    if (reason != "no stack sample" && UnstackedReason(reason).empty()) stats_->Add(StatId::stack_walk_truncated, n);
  return tree;
}

uint32_t SampleStore::MeanHz(uint64_t samples, uint64_t periods_ns) const {
  if (!samples || !periods_ns) return sample_hz_;
  const double hz = std::round(1e9 * static_cast<double>(samples) / static_cast<double>(periods_ns));
  return std::min(sample_hz_, static_cast<uint32_t>(hz));
}

// Drops the samples no span can still want: older than every open span of the thread (and
// a held cold start), or, with none open, than the thread's latest event (a span that begins
// later begins after it).
void SampleStore::PruneSamples(uint32_t tid, Thread& t) {
  uint64_t keep_from = t.last_event_ns;
  for (const OpenSpan& open : open_)
    if (open.tid == tid) keep_from = std::min(keep_from, open.begin_ns);
  if (hold_ && hold_->first == tid) keep_from = std::min(keep_from, hold_->second);
  while (!t.samples.empty()) {
    const Sample& s = t.samples.front();
    if (!s.on_cpu && (!s.switch_seen || !s.off_end_ns)) break;  // still off CPU: its weight is unknown
    const uint64_t end = s.on_cpu ? s.ts_ns : s.off_end_ns;
    if (end >= keep_from) break;
    const uint64_t period_ns = PeriodOf(s);
    const uint64_t weight = s.on_cpu ? period_ns : (s.off_end_ns > s.ts_ns ? s.off_end_ns - s.ts_ns : 0);
    if (weight) {
      SessionKey key{tid, s.frames.get(), s.on_cpu, s.stop, s.on_cpu ? std::string() : s.reason};
      const uint64_t window_ns = kStandInPeriods * NominalPeriodNs();
      if (s.early_unstacked())
        if (const Sample* stand_in = StandIn(t.samples, t.samples.begin(), &t.pruned_on_cpu,
                                             s.ts_ns > window_ns ? s.ts_ns - window_ns : 0, end + window_ns)) {
          key.frames = stand_in->frames.get();
          key.stop = stand_in->stop;
        }
      session_[key] += weight;
    }
    if (!s.callable.empty()) --callables_;
    if (s.on_cpu && s.frames) {
      OnCpuTotal& total = on_cpu_[tid][{s.frames.get(), s.stop}];
      ++total.samples;
      total.ns += period_ns;
      // Moved, not copied: it leaves the queue now (no reference count touched per sample).
      Sample& gone = t.samples.front();
      t.pruned_on_cpu.frames = std::move(gone.frames);
      t.pruned_on_cpu.stop = std::move(gone.stop);
      t.pruned_on_cpu.ts_ns = gone.ts_ns;
    }
    t.samples.pop_front();
  }
}

const SampleStore::Sample* SampleStore::StandIn(const CompactQueue<Sample>& samples,
                                                CompactQueue<Sample>::const_iterator at, const Sample* before,
                                                uint64_t lo, uint64_t hi) {
  auto usable = [](const Sample& s) { return s.on_cpu && s.frames; };
  const Sample* prev = before && before->frames && before->ts_ns >= lo && before->ts_ns <= at->ts_ns ? before : nullptr;
  for (auto it = at; it != samples.begin();) {
    --it;
    if (it->ts_ns < lo) break;
    if (usable(*it)) {
      prev = &*it;
      break;
    }
  }
  const Sample* next = nullptr;
  for (auto it = std::next(at); it != samples.end() && it->ts_ns <= hi; ++it)
    if (usable(*it)) {
      next = &*it;
      break;
    }
  if (!prev || !next) return prev ? prev : next;
  // Distances from the stretch's edges: it began where `prev` was running and ended where
  // the thread ran on toward `next`.
  const uint64_t resumed_ns = std::max(at->off_end_ns, at->ts_ns);
  const uint64_t to_next = next->ts_ns > resumed_ns ? next->ts_ns - resumed_ns : 0;
  return at->ts_ns - prev->ts_ns <= to_next ? prev : next;
}

uint64_t SampleStore::Fold(uint32_t tid, const Frames* sampled, bool on_cpu, const std::string& stop,
                           const std::string& reason, uint64_t ts_ns, uint64_t off_end_ns,
                           std::vector<std::string>* frames) const {
  frames->clear();
  if (tid != pid_) frames->push_back(fmt::format("[thread {}]", tid));
  if (sampled && !sampled->empty()) {
    if (!stop.empty()) frames->push_back("[unknown callers]");
    frames->insert(frames->end(), sampled->rbegin(), sampled->rend());
  } else {
    frames->push_back(UnstackedReason(stop).empty() ? "[no stack]" : "[" + stop + ": no stack taken]");
  }
  if (on_cpu) return sample_hz_ ? 1'000'000'000ull / sample_hz_ : 0;  // the nominal period
  frames->push_back(OffCpuFrame(reason));
  return off_end_ns > ts_ns ? off_end_ns - ts_ns : 0;
}

void SampleStore::AddToSession(uint32_t tid, const Sample& s, Stacks* stacks) const {
  std::vector<std::string> frames;
  uint64_t weight = Fold(tid, s.frames.get(), s.on_cpu, s.stop, s.reason, s.ts_ns, s.off_end_ns, &frames);
  if (s.on_cpu) weight = PeriodOf(s);
  if (weight) (*stacks)[frames] += weight;
}

std::vector<FoldedStack> SampleStore::SessionStacks(uint64_t end_ns) const {
  Stacks stacks;
  std::vector<std::string> frames;
  for (const auto& [key, ns] : session_) {
    Fold(key.tid, key.frames, key.on_cpu, key.stop, key.reason, 0, 0, &frames);
    stacks[frames] += ns;
  }
  for (const auto& [tid, t] : threads_)
    for (Sample s : t.samples) {
      // Still off CPU: the stretch ends with the session.
      if (!s.on_cpu && !s.off_end_ns) s.off_end_ns = std::max(s.ts_ns, end_ns);
      AddToSession(tid, s, &stacks);
    }
  std::vector<FoldedStack> out;
  out.reserve(stacks.size());
  for (auto& [frames, ns] : stacks) out.push_back({frames, ns});
  return out;
}

std::vector<ThreadProfile> SampleStore::ThreadProfiles(size_t top_methods) const {
  std::map<uint32_t, OnCpuStacks> by_thread;
  for (const auto& [tid, counts] : on_cpu_)
    for (const auto& [key, total] : counts) {
      OnCpuTotal& into = by_thread[tid][{*key.first, key.second}];
      into.samples += total.samples;
      into.ns += total.ns;
    }
  for (const auto& [tid, t] : threads_)
    for (const Sample& s : t.samples)
      if (s.on_cpu && s.frames) {
        OnCpuTotal& into = by_thread[tid][{*s.frames, s.stop}];
        ++into.samples;
        into.ns += PeriodOf(s);
      }
  std::vector<ThreadProfile> out;
  for (const auto& [tid, stacks] : by_thread) {
    ThreadProfile p;
    p.tid = tid;
    std::map<std::string, MethodShare> shares;
    std::vector<WeightedStack> weighted;
    uint64_t on_cpu_ns = 0;
    for (const auto& [key, total] : stacks) {
      const uint64_t count = total.samples;
      on_cpu_ns += total.ns;
      const auto& [frames, stop] = key;
      p.samples += count;
      if (!frames.empty()) shares[frames.front()].self_samples += count;
      std::set<std::string_view> seen;  // a recursive frame counts once per sample
      for (const std::string& f : frames)
        if (seen.insert(f).second) shares[f].total_samples += count;
      WeightedStack w;
      w.frames = &frames;
      w.stop = stop;
      w.weight_ns = total.ns / count;             // the period, or their mean where --cpu-budget changed it
      weighted.insert(weighted.end(), count, w);  // a sample each: the tree counts samples
    }
    if (!p.samples) continue;
    for (auto& [name, share] : shares) {
      share.name = name;
      p.top.push_back(std::move(share));
    }
    std::stable_sort(p.top.begin(), p.top.end(), [](const MethodShare& a, const MethodShare& b) {
      return a.self_samples != b.self_samples ? a.self_samples > b.self_samples : a.total_samples > b.total_samples;
    });
    if (p.top.size() > top_methods) p.top.resize(top_methods);
    p.tree = BuildSampledTree(weighted, on_cpu_ns, on_cpu_ns, max_nodes_);
    p.tree.sample_hz = MeanHz(p.samples, on_cpu_ns);
    p.tree.nominal_sample_hz = sample_hz_;
    p.tree.dwarf = dwarf_;
    out.push_back(std::move(p));
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const ThreadProfile& a, const ThreadProfile& b) { return a.samples > b.samples; });
  return out;
}

}  // namespace looptrace
