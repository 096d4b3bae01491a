// The frames tests' simulator: a vsync grid and a scripted UI thread (Sim) that posts
// vsyncs, frames, phases and messages into the pipeline, and the checks they share.
// Test-only, included by one test file per group (anonymous namespace: a copy each).
#pragma once

#include "looptrace/tracers/evil_method.h"
#include "looptrace/tracers/frames.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <sstream>

#include "event_script.h"
#include "looptrace/report/chrome_trace.h"

namespace looptrace {
namespace {

constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kUs = 1'000;
constexpr uint32_t kTid = 100;
constexpr uint64_t kBase = 1'000'000'000'000;  // CLOCK_MONOTONIC of the first vsync

using testing::S;
using testing::U;

[[maybe_unused]] ProbeEvent Probe(Role role, uint64_t ts, std::vector<EventArg> args, uint32_t tid = kTid) {
  return testing::Probe(role, ts, std::move(args), tid, kTid);
}

// A vsync grid: tick k at origin + floor(k * 1e9 / hz), like the sample app's vsync thread.
struct Grid {
  uint64_t origin;
  uint64_t hz;
  uint64_t Tick(uint64_t k) const { return origin + k * 1'000'000'000 / hz; }
  uint64_t Interval() const { return 1'000'000'000 / hz; }
  // The first tick strictly after `ts`.
  uint64_t After(uint64_t ts) const {
    uint64_t k = ts <= origin ? 0 : (ts - origin) * hz / 1'000'000'000;
    while (Tick(k) <= ts) ++k;
    while (k > 0 && Tick(k - 1) > ts) --k;
    return Tick(k);
  }
};

// Drives the pipeline like the sample app's Choreographer: each frame's vsync is requested
// 1 ms into the previous frame, received when the thread is free, doFrame runs in a message,
// frames starting an interval or more late are moved to the latest vsync (Android's skip).
class Sim {
 public:
  Sim() = default;
  // Changes the frame tracer's options from their defaults.
  explicit Sim(const std::function<void(FrameOptions&)>& configure) {
    configure(options_.Mutable<FrameOptions>("frames"));
  }

  uint64_t now() const { return now_; }
  AnalysisOptions& options() { return options_; }
  const std::vector<Message>& messages() const { return messages_; }
  const Stats& stats() const { return report_.stats; }

  void Add(ProbeEvent e) { script_.Add(std::move(e)); }
  void Focus(const std::string& scene) { Add(Probe(Role::kActivityFocus, now_, {S("name", scene)})); }

  // A non-UI message from now.
  void Busy(uint64_t cost_ns, uint64_t gap_ns = 0) {
    now_ += gap_ns;
    AddMessage(now_, now_ + cost_ns, "bg.work");
    now_ += cost_ns;
  }

  // One frame on `grid`; `end_at` (absolute) stretches it, else it costs `cost_ns`.
  // Returns the frame's (adjusted) vsync.
  uint64_t Frame(const Grid& grid, uint64_t cost_ns = 3 * kMs, uint64_t end_at = 0, bool emit_vsync = true) {
    const uint64_t tick = grid.After(request_);
    const uint64_t received = std::max(tick, now_) + 50 * kUs;
    if (emit_vsync) Add(Probe(Role::kVsync, received, {U("vsync_ns", tick)}));
    const uint64_t msg_begin = received + 10 * kUs;
    const uint64_t begin = msg_begin + 10 * kUs;
    const uint64_t interval = grid.Interval();
    uint64_t vsync = tick;
    if (begin - tick >= interval) vsync = tick + (begin - tick) / interval * interval;
    const uint64_t id = ++frame_id_;
    uint64_t end = end_at ? end_at : begin + cost_ns;
    // N + 1/2 intervals (+ 0.1 ms, as measured: exactly N - 1/2 would be Matrix's rounding edge).
    if (drop_next_) end = vsync + *drop_next_ * interval + interval / 2 + 100 * kUs;
    drop_next_.reset();
    Add(Probe(Role::kFrameBegin, begin, {U("frame_id", id), U("vsync_ns", vsync)}));
    // Five phases splitting [begin, end].
    const uint64_t step = (end - begin) / 5;
    for (uint32_t p = 0; p < 5; ++p) {
      Add(Probe(Role::kPhaseBegin, begin + p * step, {U("phase", p)}));
      Add(Probe(Role::kPhaseEnd, p == 4 ? end : begin + (p + 1) * step, {U("phase", p)}));
    }
    request_ = begin + std::min<uint64_t>(kMs, end - begin);  // the ANIMATION phase asks for the next one
    Add(Probe(Role::kFrameEnd, end, {U("frame_id", id)}));
    if (beats_for_next_) {
      MethodBeats b = *beats_for_next_;
      b.begin_ns = msg_begin;
      b.end_ns = end + 10 * kUs;
      script_.Add(b);  // recorded slice of the doFrame message
      beats_for_next_.reset();
    }
    AddMessage(msg_begin, end + 10 * kUs, "Choreographer#doFrame");
    now_ = end + 10 * kUs;
    return vsync;
  }

  void BeatsForNextFrame(MethodBeats beats) { beats_for_next_ = std::move(beats); }
  // The next frame ends at its vsync + (n + 1/2) intervals (the sample app's frames-jank).
  void DropNext(uint64_t n) { drop_next_ = n; }

  FramesReport Finish(uint64_t end_ns = 0) {
    report_ = script_.Run(options_, end_ns ? end_ns : now_ + kMs);
    return report_.frames;
  }

  void AddMessage(uint64_t begin, uint64_t end, const std::string& name) {
    Message m;
    m.tid = kTid;
    m.begin_ns = begin;
    m.end_ns = end;
    m.msg_id = ++msg_id_;
    m.name = name;
    AddMessage(m);
  }
  void AddMessage(const Message& m) {
    messages_.push_back(m);
    script_.AddMessage(m);
  }

 private:
  AnalysisOptions options_;
  testing::EventScript script_;
  Report report_;
  uint64_t now_ = kBase - 5 * kMs;
  uint64_t request_ = kBase - 5 * kMs;
  uint64_t frame_id_ = 0;
  uint64_t msg_id_ = 0;
  std::vector<Message> messages_;
  std::optional<MethodBeats> beats_for_next_;
  std::optional<uint64_t> drop_next_;
};

[[maybe_unused]] bool NoProblems(const Stats& p) {
  uint64_t sum = 0;
  for (StatId id :
       {StatId::phase_without_frame, StatId::phase_end_without_begin, StatId::phase_mismatch, StatId::phase_unclosed,
        StatId::frame_end_without_begin, StatId::frame_id_mismatch, StatId::nested_frames, StatId::frame_end_lost,
        StatId::unfinished_frames, StatId::frame_without_vsync, StatId::vsync_without_timestamp,
        StatId::refresh_rate_assumed, StatId::refresh_rate_changes})
    sum += p.Get(id);
  return sum == 0;
}

}  // namespace
}  // namespace looptrace
