#include "looptrace/report/chrome_trace.h"

#include "looptrace/report/render.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "looptrace/util/text_safety.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace looptrace {
namespace {

using nlohmann::json;

// Slices of one thread, ranked so an enclosing kind sorts first at equal times.
enum class Kind : int { kMessage = 0, kFrame = 1, kPhase = 2 };

struct Slice {
  uint32_t tid = 0;
  uint64_t begin_ns = 0;
  uint64_t end_ns = 0;
  Kind kind = Kind::kMessage;
  uint32_t depth = 0;
  std::string name;
  const char* category = "";
  json args;
};

// ns relative to the base as microseconds with exactly three decimals (no float rounding).
std::string Micros(uint64_t ns, uint64_t base_ns) {
  const uint64_t rel = ns > base_ns ? ns - base_ns : 0;
  return fmt::format("{}.{:03}", rel / 1000, rel % 1000);
}

// Invalid UTF-8 becomes U+FFFD; C1 controls and bidi overrides become \u escapes, so
// the trace is safe to print on a terminal too.
std::string Quote(const std::string& s) {
  return EscapeJsonForTerminal(json(s).dump(-1, ' ', false, json::error_handler_t::replace));
}

std::string Dump(const json& j) {
  return EscapeJsonForTerminal(j.dump(-1, ' ', false, json::error_handler_t::replace));
}

// fps and other ratios, rounded for readability.
double Round3(double x) { return std::isfinite(x) ? std::round(x * 1000.0) / 1000.0 : 0.0; }

json FrameArgs(const FrameRecord& f) {
  json a;
  a["frame_id"] = f.frame_id;
  a["vsync_ns"] = f.vsync_ns;
  a["intended_vsync_ns"] = f.intended_vsync_ns;
  a["interval_ns"] = f.interval_ns;
  a["refresh_hz"] = Round3(f.refresh_hz);
  a["dropped"] = f.dropped_frames;
  a["matrix_dropped"] = Round3(f.matrix_dropped);
  a["bucket"] = f.bucket;
  a["skipped_frames"] = f.skipped_frames;
  a["cost_ms"] = Round3(static_cast<double>(f.cost_ns()) / 1e6);
  a["total_ms"] = Round3(static_cast<double>(f.total_ns()) / 1e6);
  a["deadline_missed"] = f.deadline_missed;
  a["slow"] = f.slow;
  a["frozen"] = f.frozen;
  a["delay_by_messages_ms"] = Round3(static_cast<double>(f.delay_by_messages_ns) / 1e6);
  a["scene"] = f.scene;
  a["finished"] = f.finished;
  return a;
}

// Sorts a thread's slices parents-first and makes them nest: a slice ending after the one
// enclosing it is clipped to it.
void Nest(std::vector<Slice>* slices) {
  std::stable_sort(slices->begin(), slices->end(), [](const Slice& a, const Slice& b) {
    return std::make_tuple(a.begin_ns, b.end_ns, static_cast<int>(a.kind), a.depth) <
           std::make_tuple(b.begin_ns, a.end_ns, static_cast<int>(b.kind), b.depth);
  });
  std::vector<uint64_t> open_ends;
  for (Slice& s : *slices) {
    // A slice starting where the open one ends is its sibling, unless it is an instant there.
    while (!open_ends.empty() &&
           (open_ends.back() < s.begin_ns || (open_ends.back() == s.begin_ns && s.end_ns > s.begin_ns)))
      open_ends.pop_back();
    if (!open_ends.empty() && s.end_ns > open_ends.back()) {
      s.args["clipped_end_ns"] = s.end_ns;
      s.end_ns = open_ends.back();
    }
    open_ends.push_back(s.end_ns);
  }
}

}  // namespace

void RenderChromeTrace(const SessionInfo& session, const MessagesReport& messages, const FramesReport& frames,
                       std::ostream& out) {
  const uint32_t pid = session.pid ? session.pid : 1;
  std::map<uint32_t, std::vector<Slice>> by_tid;

  auto add_message = [&](const Message& m, bool finished) {
    Slice s;
    s.tid = m.tid;
    s.begin_ns = m.begin_ns;
    s.end_ns = std::max(m.end_ns, m.begin_ns);
    s.kind = Kind::kMessage;
    s.depth = m.depth;
    s.name = m.name.empty() ? "message" : m.name;
    s.category = "message";
    s.args["msg_id"] = m.msg_id ? json(*m.msg_id) : json(nullptr);
    s.args["cpu_ns"] = m.cpu_ns;
    if (m.depth) s.args["depth"] = m.depth;
    if (!finished) s.args["unfinished"] = true;
    by_tid[m.tid].push_back(std::move(s));
  };
  for (const Message& m : messages.messages) add_message(m, true);
  for (const Message& m : messages.unfinished) add_message(m, false);

  for (const FrameRecord& f : frames.frames) {
    Slice s;
    s.tid = f.tid;
    s.begin_ns = f.begin_ns;
    s.end_ns = std::max(f.end_ns, f.begin_ns);
    s.kind = Kind::kFrame;
    s.name = fmt::format("Frame {}", f.frame_id);
    s.category = "frame";
    s.args = FrameArgs(f);
    by_tid[f.tid].push_back(std::move(s));
    for (const PhaseCost& p : f.phases) {
      Slice ps;
      ps.tid = f.tid;
      ps.begin_ns = p.begin_ns;
      ps.end_ns = std::max(p.end_ns, p.begin_ns);
      ps.kind = Kind::kPhase;
      ps.name = p.name;
      ps.category = "phase";
      ps.args["frame_id"] = f.frame_id;
      ps.args["phase"] = p.phase;
      by_tid[f.tid].push_back(std::move(ps));
    }
  }

  uint64_t base_ns = session.begin_ns;
  for (const auto& [tid, slices] : by_tid)
    for (const Slice& s : slices) base_ns = std::min(base_ns, s.begin_ns);
  for (const FpsSummary& w : frames.windows) base_ns = std::min(base_ns, w.begin_ns);
  for (const FpsSummary& w : frames.scenes) base_ns = std::min(base_ns, w.begin_ns);
  auto ts = [&](uint64_t ns) { return Micros(ns, base_ns); };

  std::vector<std::string> events;
  // Metadata: process and thread names, the main thread first.
  const std::string process = session.command.empty() ? fmt::format("pid {}", pid) : session.command;
  events.push_back(fmt::format(R"({{"name":"process_name","ph":"M","pid":{},"tid":{},"args":{{"name":{}}}}})", pid, pid,
                               Quote(process)));
  std::set<uint32_t> tids;
  for (const auto& [tid, slices] : by_tid) tids.insert(tid);
  for (uint32_t tid : tids) {
    const std::string name = tid == pid ? "main" : fmt::format("looper {}", tid);
    events.push_back(fmt::format(R"({{"name":"thread_name","ph":"M","pid":{},"tid":{},"args":{{"name":{}}}}})", pid,
                                 tid, Quote(name)));
    events.push_back(
        fmt::format(R"({{"name":"thread_sort_index","ph":"M","pid":{},"tid":{},"args":{{"sort_index":{}}}}})", pid, tid,
                    tid == pid ? 0 : 1));
  }

  for (auto& [tid, slices] : by_tid) {
    Nest(&slices);
    for (const Slice& s : slices)
      events.push_back(fmt::format(R"({{"name":{},"cat":"{}","ph":"X","ts":{},"dur":{},"pid":{},"tid":{},"args":{}}})",
                                   Quote(s.name), s.category, ts(s.begin_ns), Micros(s.end_ns - s.begin_ns, 0), pid,
                                   s.tid, Dump(s.args)));
  }

  // Janky frames (deadline missed) as instants at their end.
  for (const FrameRecord& f : frames.frames) {
    if (!f.deadline_missed) continue;
    json args{{"frame_id", f.frame_id},
              {"dropped", f.dropped_frames},
              {"matrix_dropped", Round3(f.matrix_dropped)},
              {"bucket", f.bucket},
              {"total_ms", Round3(static_cast<double>(f.total_ns()) / 1e6)},
              {"scene", f.scene}};
    events.push_back(
        fmt::format(R"({{"name":{},"cat":"jank","ph":"i","s":"t","ts":{},"pid":{},"tid":{},"args":{}}})",
                    Quote(fmt::format("Jank: Frame {} dropped {} ({})", f.frame_id, f.dropped_frames, f.bucket)),
                    ts(f.end_ns), pid, f.tid, Dump(args)));
  }

  // FPS counters: Matrix windows on one track, each scene's session totals on its own.
  auto counter = [&](const std::string& name, uint64_t at_ns, const FpsSummary& s) {
    json args{{"matrix_fps", Round3(s.matrix_fps)}, {"delivered_fps", Round3(s.delivered_fps)}};
    events.push_back(fmt::format(R"({{"name":{},"cat":"fps","ph":"C","ts":{},"pid":{},"args":{}}})", Quote(name),
                                 ts(at_ns), pid, Dump(args)));
  };
  for (const FpsSummary& w : frames.windows) counter("FPS", w.begin_ns, w);
  if (!frames.windows.empty()) counter("FPS", frames.windows.back().end_ns, frames.windows.back());
  for (const FpsSummary& s : frames.scenes) {
    const std::string name = "FPS " + (s.scene.empty() ? std::string("(no scene)") : s.scene);
    counter(name, s.begin_ns, s);
    counter(name, s.end_ns, s);
  }

  json metadata{{"source", "looptrace"},
                {"pid", session.pid},
                {"command", session.command},
                {"profile", session.profile},
                {"thread_filter", session.thread_filter},
                {"begin_ns", session.begin_ns},
                {"end_ns", session.end_ns},
                {"wall_time_ns", session.wall_time_ns},
                {"end_reason", session.end_reason},
                {"ts_base_ns", base_ns},
                {"frames", frames.frames.size()},
                {"messages", messages.messages.size()}};
  json rates = json::array();
  for (double hz : frames.refresh_rates) rates.push_back(Round3(hz));
  metadata["refresh_rates"] = rates;

  out << "{\"traceEvents\":[\n";
  for (size_t i = 0; i < events.size(); ++i) out << events[i] << (i + 1 < events.size() ? ",\n" : "\n");
  out << "],\n\"displayTimeUnit\":\"ms\",\n\"metadata\":" << Dump(metadata) << "}\n";
}

namespace {

class ChromeRenderer : public Renderer {
 public:
  void Render(const Report& report, std::ostream& out) const override {
    RenderChromeTrace(report.session, report.messages, report.frames, out);
  }
};

}  // namespace

std::unique_ptr<Renderer> MakeChromeRenderer(const RenderOptions&) { return std::make_unique<ChromeRenderer>(); }

}  // namespace looptrace
