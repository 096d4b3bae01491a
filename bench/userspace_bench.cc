// User-space hot paths: raw record decoding, looper analysis, JSON recording.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <cstring>
#include <vector>

#include "loader/decode/event_decoder.h"
#include "looptrace/events.h"
#include "looptrace/tracers/event_json.h"
#include "looptrace/tracers/event_sanitize.h"
#include "looptrace/tracers/frames.h"
#include "looptrace/tracers/matrix_compat.h"
#include "looptrace/tracers/method_tree.h"
#include "looptrace/tracers/pipeline.h"
#include "looptrace/tracers/text_pool.h"

namespace {

using namespace looptrace;
using namespace looptrace::loader;

AttachPlan DispatchPlan() {
  AttachPlan plan;
  ResolvedProbe begin, end;
  begin.probe_id = 0;
  begin.spec.role = Role::kDispatchBegin;
  ArgSpec id;
  id.name = "id";
  begin.spec.args = {id};
  end.probe_id = 1;
  end.spec.role = Role::kDispatchEnd;
  end.spec.args = {id};
  plan.probes = {begin, end};
  return plan;
}

std::vector<lt_record> Records(size_t n) {
  std::vector<lt_record> records(n);
  for (size_t i = 0; i < n; ++i) {
    auto& r = records[i];
    std::memset(&r, 0, sizeof(r));
    r.seq = i + 1;
    r.type = LT_RECORD_PROBE;
    r.ts_ns = 1000 + i * 1000;
    r.tid = 42;
    r.probe_id = i % 2;
    r.probe.role = i % 2 ? LT_ROLE_DISPATCH_END : LT_ROLE_DISPATCH_BEGIN;
    r.probe.args[0] = i / 2;
  }
  return records;
}

// What a live session tells the pipeline first: its probes and the default stack sampling
// (997 Hz), so the tracers run as they do by default.
SessionStart DispatchSession() {
  SessionStart start;
  start.pid = 42;
  start.thread_filter = "main";
  start.sample_hz = 997;
  ProbeDescription begin, end;
  begin.probe_id = 0;
  begin.role = Role::kDispatchBegin;
  end.probe_id = 1;
  end.role = Role::kDispatchEnd;
  start.probes = {begin, end};
  return start;
}

// Dispatch records decoded one at a time, as the session does, and (with `analyze`) fed to
// the pipeline: span tracker + every registered tracer. Out of line and apart from making
// the records, so bench/analysis_breakdown.sh counts this and nothing else.
[[gnu::noinline]] void RunSession(const AttachPlan& plan, const std::vector<lt_record>& records, bool analyze) {
  Stats stats;
  EventDecoder decoder(&plan, nullptr, &stats, 42);
  AnalysisOptions options;
  Pipeline analyzer(options);
  if (analyze) analyzer.OnEvent(DispatchSession());
  for (const auto& r : records) {
    decoder.Decode(r, [&](const Event& event) {
      if (analyze) analyzer.OnEvent(event);
      benchmark::DoNotOptimize(&event);
    });
  }
  if (analyze) benchmark::DoNotOptimize(analyzer.TakeReport());
}

void DecodeRecords(benchmark::State& state, bool analyze) {
  AttachPlan plan = DispatchPlan();
  auto records = Records(1 << 16);
  for (auto _ : state) RunSession(plan, records, analyze);
  state.SetItemsProcessed(state.iterations() * records.size());
}

void BM_DecodeAndAnalyze(benchmark::State& state) { DecodeRecords(state, true); }
BENCHMARK(BM_DecodeAndAnalyze)->Unit(benchmark::kMillisecond);

// The two halves of BM_DecodeAndAnalyze apart: the decoder alone (raw records -> events),
// and the pipeline alone on events decoded once.
void BM_DecodeOnly(benchmark::State& state) { DecodeRecords(state, false); }
BENCHMARK(BM_DecodeOnly)->Unit(benchmark::kMillisecond);

void BM_AnalyzeOnly(benchmark::State& state) {
  AttachPlan plan = DispatchPlan();
  auto records = Records(1 << 16);
  Stats stats;
  EventDecoder decoder(&plan, nullptr, &stats, 42);
  std::vector<Event> events;
  for (const auto& r : records) decoder.Decode(r, &events);
  for (auto _ : state) {
    AnalysisOptions options;
    Pipeline analyzer(options);
    analyzer.OnEvent(DispatchSession());
    for (const Event& event : events) analyzer.OnEvent(event);
    benchmark::DoNotOptimize(analyzer.TakeReport());
  }
  state.SetItemsProcessed(state.iterations() * events.size());
}
BENCHMARK(BM_AnalyzeOnly)->Unit(benchmark::kMillisecond);

// The price of SanitizingSink (every string of every event checked for valid UTF-8 and
// its cap) in front of the pipeline: the same named dispatch events without (0) and with (1).
void BM_AnalyzeNamedEvents(benchmark::State& state) {
  const bool sanitized = state.range(0) != 0;
  std::vector<Event> events;
  for (uint64_t i = 0; i < (1 << 15); ++i) {
    ProbeEvent begin;
    begin.ts_ns = 1000 + i * 2000;
    begin.pid = begin.tid = 42;
    begin.role = Role::kDispatchBegin;
    begin.args.push_back({"id", i, nullptr, false});
    begin.args.push_back({"name", 0x1000 + i % 64,
                          TextPool::Intern("android.os.Handler.dispatchMessage#" + std::to_string(i % 64)), true});
    ProbeEvent end = begin;
    end.ts_ns += 1000;
    end.role = Role::kDispatchEnd;
    end.args.clear();
    end.args.push_back({"id", i, nullptr, false});
    events.push_back(begin);
    events.push_back(end);
  }
  for (auto _ : state) {
    AnalysisOptions options;
    Pipeline pipeline(options);
    SanitizingSink safe(pipeline);
    EventSink& sink = sanitized ? static_cast<EventSink&>(safe) : pipeline;
    for (const Event& event : events) sink.OnEvent(event);
    benchmark::DoNotOptimize(pipeline.TakeReport());
  }
  state.SetItemsProcessed(state.iterations() * events.size());
}
BENCHMARK(BM_AnalyzeNamedEvents)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

// A busy server's messages as the pipeline gets them in the default mode: each message (one
// request, 300 us) holds a switch-out with its stack (a 24-frame Python-and-native stack, one
// of 8 handlers' own) and its switch-in, and an on-CPU sample every third message, the
// stacks going to the session's folded totals once no span wants them. Messages per second
// the pipeline keeps up with: the loader's share of a busy server's cost that is the
// report's, not the decoding's.
void BM_AnalyzeBusyServerSamples(benchmark::State& state) {
  constexpr uint64_t kMessages = 1 << 14;
  std::vector<Event> events;
  std::vector<std::vector<std::string>> stacks(8);
  for (size_t h = 0; h < stacks.size(); ++h)
    for (int f = 0; f < 24; ++f)
      stacks[h].push_back(f < 3 ? fmt::format("handler_{}_{} (server.py:{})", h, f, 10 + f)
                                : fmt::format("_PyEval_EvalFrameDefault+{:#x} (libpython3.11.so.1.0)", 0x100 * f));
  for (uint64_t i = 0; i < kMessages; ++i) {
    const uint64_t at = 1'000'000 + i * 400'000;
    ProbeEvent begin;
    begin.ts_ns = at;
    begin.pid = begin.tid = 42;
    begin.role = Role::kDispatchBegin;
    begin.args.push_back({"id", i, nullptr, false});
    events.push_back(begin);
    const auto& frames = stacks[i % stacks.size()];
    if (i % 3 == 0) events.push_back(StackSample{at + 50'000, 42, true, frames, "", ""});
    events.push_back(StackSample{at + 100'000, 42, false, frames, "", ""});
    events.push_back(ThreadSwitch{at + 100'000, 42, true, 1, {"futex_wait_queue", "do_futex"}, {}});
    events.push_back(ThreadSwitch{at + 250'000, 42, false, 0, {}, {}});
    ProbeEvent end = begin;
    end.ts_ns = at + 300'000;
    end.role = Role::kDispatchEnd;
    events.push_back(end);
  }
  for (auto _ : state) {
    AnalysisOptions options;
    Pipeline pipeline(options);
    pipeline.OnEvent(DispatchSession());
    for (const Event& event : events) pipeline.OnEvent(event);
    benchmark::DoNotOptimize(pipeline.TakeReport());
  }
  state.SetItemsProcessed(state.iterations() * kMessages);  // messages
}
BENCHMARK(BM_AnalyzeBusyServerSamples)->Unit(benchmark::kMillisecond);

void BM_EventToJsonLine(benchmark::State& state) {
  ProbeEvent e;
  e.ts_ns = 123456789;
  e.pid = e.tid = 42;
  e.role = Role::kDispatchBegin;
  e.args.push_back({"id", 7, nullptr, false});
  e.args.push_back({"name", 0x1000, TextPool::Intern("msg.spin"), true});
  Event event = e;
  for (auto _ : state) benchmark::DoNotOptimize(EventToJsonLine(event));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_EventToJsonLine);

}  // namespace

namespace {

// One message's beats: a realistic tree (fan-out 4, depth 6), repeated to 1M records.
looptrace::MethodBeats MillionBeats() {
  looptrace::MethodBeats m;
  m.tid = 1;
  m.begin_ns = 1000;
  uint64_t ts = 1000;
  std::vector<uint64_t> stack;
  uint64_t next_id = 1;
  while (m.beats.size() < (1u << 20) - 64) {
    // Walk a fixed pattern: enter until depth 6, then exit and re-enter siblings.
    if (stack.size() < 6 && (next_id % 5) != 0) {
      uint64_t id = (next_id++ % 500) + 1;
      stack.push_back(id);
      m.beats.push_back({ts += 100, id, true});
    } else if (!stack.empty()) {
      m.beats.push_back({ts += 100, stack.back(), false});
      stack.pop_back();
      ++next_id;
    } else {
      ++next_id;
    }
  }
  while (!stack.empty()) {
    m.beats.push_back({ts += 100, stack.back(), false});
    stack.pop_back();
  }
  m.end_ns = ts + 100;
  return m;
}

void BM_BuildCallTreeMillionBeats(benchmark::State& state) {
  auto beats = MillionBeats();
  for (auto _ : state) {
    looptrace::Stats stats;
    auto tree = looptrace::BuildCallTree(beats, {}, &stats);
    looptrace::TrimCallTree(&tree, 30);
    benchmark::DoNotOptimize(tree);
  }
  state.SetItemsProcessed(state.iterations() * beats.beats.size());
}
BENCHMARK(BM_BuildCallTreeMillionBeats)->Unit(benchmark::kMillisecond);

void BM_MatrixStructuredDataToStackMillion(benchmark::State& state) {
  auto beats = MillionBeats();
  std::vector<int64_t> records;
  records.push_back(looptrace::matrix::EncodeRecord(true, looptrace::matrix::kMethodIdDispatch, 0));
  for (const auto& b : beats.beats)
    records.push_back(looptrace::matrix::EncodeRecord(b.enter, static_cast<int>(b.id), b.ts_ns / 1'000'000));
  records.push_back(
      looptrace::matrix::EncodeRecord(false, looptrace::matrix::kMethodIdDispatch, beats.end_ns / 1'000'000));
  for (auto _ : state) {
    auto stack = looptrace::matrix::StructuredDataToStack(records, true, beats.end_ns / 1'000'000);
    looptrace::matrix::TrimStack(stack, 30);
    benchmark::DoNotOptimize(stack);
  }
  state.SetItemsProcessed(state.iterations() * records.size());
}
BENCHMARK(BM_MatrixStructuredDataToStackMillion)->Unit(benchmark::kMillisecond);

}  // namespace

namespace {

// A 60 Hz frame stream with phases: frames per second the span tracker and tracers analyse.
void BM_FrameTracer(benchmark::State& state) {
  using namespace looptrace;
  std::vector<ProbeEvent> events;
  constexpr uint64_t kInterval = 16'666'666;
  for (uint64_t f = 0; f < 10'000; ++f) {
    uint64_t vsync = 1'000'000'000 + f * kInterval;
    auto ev = [&](Role role, uint64_t ts, std::vector<EventArg> args) {
      ProbeEvent e;
      e.ts_ns = ts;
      e.pid = e.tid = 1;
      e.role = role;
      for (const auto& a : args) e.args.push_back(a);
      events.push_back(std::move(e));
    };
    ev(Role::kVsync, vsync, {{"vsync_ns", vsync, nullptr, false}});
    ev(Role::kFrameBegin, vsync + 100'000, {{"frame_id", f, nullptr, false}, {"vsync_ns", vsync, nullptr, false}});
    for (uint64_t p = 0; p < 5; ++p) {
      ev(Role::kPhaseBegin, vsync + 200'000 + p * 500'000, {{"phase", p, nullptr, false}});
      ev(Role::kPhaseEnd, vsync + 600'000 + p * 500'000, {{"phase", p, nullptr, false}});
    }
    ev(Role::kFrameEnd, vsync + 3'000'000, {{"frame_id", f, nullptr, false}});
  }
  AnalysisOptions options;
  for (auto _ : state) {
    Pipeline pipeline(options);
    for (const auto& e : events) pipeline.OnEvent(e);
    benchmark::DoNotOptimize(pipeline.TakeReport());
  }
  state.SetItemsProcessed(state.iterations() * 10'000);  // frames
}
BENCHMARK(BM_FrameTracer)->Unit(benchmark::kMillisecond);

}  // namespace
