#include "looptrace/report/chrome_trace.h"

#include "looptrace/report/json_records.h"
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

uint64_t U64(const json& record, const char* key) { return record.at(key).get<uint64_t>(); }

double Ms(const json& record, const char* ns_key) { return Round3(static_cast<double>(U64(record, ns_key)) / 1e6); }

// A frame slice's args, from its JSON record.
json FrameArgs(const json& f) {
  json a;
  for (const char* key : {"frame_id", "vsync_ns", "intended_vsync_ns", "interval_ns"}) a[key] = f.at(key);
  a["refresh_hz"] = Round3(f.at("refresh_hz").get<double>());
  a["dropped"] = f.at("dropped_frames");
  a["matrix_dropped"] = Round3(f.at("matrix_dropped").get<double>());
  a["bucket"] = f.at("bucket");
  a["skipped_frames"] = f.at("skipped_frames");
  a["cost_ms"] = Ms(f, "cost_ns");
  a["total_ms"] = Ms(f, "total_ns");
  for (const char* key : {"deadline_missed", "slow", "frozen"}) a[key] = f.at(key);
  a["delay_by_messages_ms"] = Ms(f, "delay_by_messages_ns");
  a["scene"] = f.at("scene");
  a["finished"] = f.at("finished");
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

void RenderChromeTrace(const Report& report, std::ostream& out) {
  const json session = SessionJson(report);
  const uint32_t pid = report.session.pid ? report.session.pid : 1;
  std::map<uint32_t, std::vector<Slice>> by_tid;

  auto add_message = [&](const json& m) {
    Slice s;
    s.tid = m.at("tid").get<uint32_t>();
    s.begin_ns = U64(m, "begin_ns");
    s.end_ns = std::max(U64(m, "end_ns"), s.begin_ns);
    s.kind = Kind::kMessage;
    s.depth = m.at("depth").get<uint32_t>();
    s.name = m.at("name").is_null() ? "message" : m.at("name").get<std::string>();
    s.category = "message";
    s.args["msg_id"] = m.at("msg_id");
    s.args["cpu_ns"] = m.at("cpu_ns");
    if (s.depth) s.args["depth"] = s.depth;
    if (m.at("type") == "unfinished_message") s.args["unfinished"] = true;
    by_tid[s.tid].push_back(std::move(s));
  };
  for (const Message& m : report.messages.messages) add_message(MessageJson(m, true));
  for (const Message& m : report.messages.unfinished) add_message(MessageJson(m, false));

  std::vector<json> frames;
  frames.reserve(report.frames.frames.size());
  for (const FrameRecord& record : report.frames.frames) {
    const json& f = frames.emplace_back(FrameJson(record));
    Slice s;
    s.tid = f.at("tid").get<uint32_t>();
    s.begin_ns = U64(f, "begin_ns");
    s.end_ns = std::max(U64(f, "end_ns"), s.begin_ns);
    s.kind = Kind::kFrame;
    s.name = fmt::format("Frame {}", U64(f, "frame_id"));
    s.category = "frame";
    s.args = FrameArgs(f);
    const uint32_t tid = s.tid;
    by_tid[tid].push_back(std::move(s));
    for (const json& p : f.at("phases")) {
      Slice ps;
      ps.tid = tid;
      ps.begin_ns = U64(p, "begin_ns");
      ps.end_ns = std::max(U64(p, "end_ns"), ps.begin_ns);
      ps.kind = Kind::kPhase;
      ps.name = p.at("name").get<std::string>();
      ps.category = "phase";
      ps.args["frame_id"] = f.at("frame_id");
      ps.args["phase"] = p.at("phase");
      by_tid[tid].push_back(std::move(ps));
    }
  }
  std::vector<json> windows, scenes;
  for (const FpsSummary& w : report.frames.windows) windows.push_back(FpsJson(report, w, "fps"));
  for (const FpsSummary& w : report.frames.scenes) scenes.push_back(FpsJson(report, w, "fps_scene"));

  uint64_t base_ns = U64(session, "begin_ns");
  for (const auto& [tid, slices] : by_tid)
    for (const Slice& s : slices) base_ns = std::min(base_ns, s.begin_ns);
  for (const json& w : windows) base_ns = std::min(base_ns, U64(w, "begin_ns"));
  for (const json& w : scenes) base_ns = std::min(base_ns, U64(w, "begin_ns"));
  auto ts = [&](uint64_t ns) { return Micros(ns, base_ns); };

  std::vector<std::string> events;
  // Metadata: process and thread names, the main thread first.
  const std::string command = session.at("command").get<std::string>();
  const std::string process = command.empty() ? fmt::format("pid {}", pid) : command;
  events.push_back(fmt::format(R"({{"name":"process_name","ph":"M","pid":{},"tid":{},"args":{{"name":{}}}}})", pid, pid,
                               Quote(process)));
  std::set<uint32_t> tids;
  for (const auto& [tid, slices] : by_tid) tids.insert(tid);
  for (uint32_t tid : tids) {
    // The thread's own name when the session read it; else what it is to looptrace.
    auto known = report.thread_names.find(tid);
    const std::string name = known != report.thread_names.end() ? known->second
                             : tid == pid                       ? "main"
                                                                : fmt::format("looper {}", tid);
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
  for (const json& f : frames) {
    if (!f.at("deadline_missed").get<bool>()) continue;
    json args{{"frame_id", f.at("frame_id")},
              {"dropped", f.at("dropped_frames")},
              {"matrix_dropped", Round3(f.at("matrix_dropped").get<double>())},
              {"bucket", f.at("bucket")},
              {"total_ms", Ms(f, "total_ns")},
              {"scene", f.at("scene")}};
    const std::string name = fmt::format("Jank: Frame {} dropped {} ({})", U64(f, "frame_id"), U64(f, "dropped_frames"),
                                         f.at("bucket").get<std::string>());
    events.push_back(fmt::format(R"({{"name":{},"cat":"jank","ph":"i","s":"t","ts":{},"pid":{},"tid":{},"args":{}}})",
                                 Quote(name), ts(U64(f, "end_ns")), pid, f.at("tid").get<uint32_t>(), Dump(args)));
  }

  // FPS counters: Matrix windows on one track, each scene's session totals on its own.
  auto counter = [&](const std::string& name, uint64_t at_ns, const json& fps) {
    json args{{"matrix_fps", Round3(fps.at("fps").get<double>())},
              {"delivered_fps", Round3(fps.at("delivered_fps").get<double>())}};
    events.push_back(fmt::format(R"({{"name":{},"cat":"fps","ph":"C","ts":{},"pid":{},"args":{}}})", Quote(name),
                                 ts(at_ns), pid, Dump(args)));
  };
  for (const json& w : windows) counter("FPS", U64(w, "begin_ns"), w);
  if (!windows.empty()) counter("FPS", U64(windows.back(), "end_ns"), windows.back());
  for (const json& s : scenes) {
    const std::string scene = s.at("scene").get<std::string>();
    const std::string name = "FPS " + (scene.empty() ? std::string("(no scene)") : scene);
    counter(name, U64(s, "begin_ns"), s);
    counter(name, U64(s, "end_ns"), s);
  }

  json metadata{{"source", "looptrace"},
                {"pid", session.at("pid")},
                {"command", session.at("command")},
                {"profile", session.at("profile")},
                {"thread_filter", session.at("threads")},
                {"begin_ns", session.at("begin_ns")},
                {"end_ns", session.at("end_ns")},
                {"wall_time_ns", session.at("wall_time_ns")},
                {"end_reason", session.at("end_reason")},
                {"ts_base_ns", base_ns},
                {"frames", frames.size()},
                {"messages", report.messages.messages.size()}};
  json rates = json::array();
  for (double hz : report.frames.refresh_rates) rates.push_back(Round3(hz));
  metadata["refresh_rates"] = rates;

  out << "{\"traceEvents\":[\n";
  for (size_t i = 0; i < events.size(); ++i) out << events[i] << (i + 1 < events.size() ? ",\n" : "\n");
  out << "],\n\"displayTimeUnit\":\"ms\",\n\"metadata\":" << Dump(metadata) << "}\n";
}

void RenderThreadDumpChromeTrace(const ThreadDump& dump, std::ostream& out) {
  const json record = ThreadDumpRecord(dump);
  const uint32_t pid = record.at("pid").get<uint32_t>();
  const uint64_t ts_ns = U64(record, "ts_ns");
  const json& message = record.at("message");
  // Timestamps relative to the running message's begin, else to the dump.
  const uint64_t base_ns = message.is_null() ? ts_ns : std::min(ts_ns, U64(message, "begin_ns"));
  auto us = [&](uint64_t ns) { return Round3((ns - base_ns) / 1e3); };
  std::vector<std::string> events;
  events.push_back(fmt::format(R"({{"name":"process_name","ph":"M","pid":{},"tid":{},"args":{{"name":{}}}}})", pid, pid,
                               Quote(fmt::format("{} (pid {})", record.at("command").get<std::string>(), pid))));
  if (!message.is_null()) {
    const std::string name = message.at("name").is_null() ? "message" : message.at("name").get<std::string>();
    json args{{"main_state", record.at("main_state")}, {"stackKey", record.at("stackKey")}};
    events.push_back(
        fmt::format(R"({{"name":{},"cat":"message","ph":"X","ts":{},"dur":{},"pid":{},"tid":{},"args":{}}})",
                    Quote(name), us(U64(message, "begin_ns")), Round3(U64(message, "running_ns") / 1e3), pid,
                    message.at("tid").get<uint32_t>(), Dump(args)));
  }
  for (const json& thread : record.at("threads")) {
    const uint32_t tid = thread.at("tid").get<uint32_t>();
    events.push_back(fmt::format(R"({{"name":"thread_name","ph":"M","pid":{},"tid":{},"args":{{"name":{}}}}})", pid,
                                 tid, Quote(thread.at("name").get<std::string>())));
    json args = thread;
    args.erase("tid");
    args.erase("name");
    events.push_back(fmt::format(R"({{"name":{},"cat":"thread","ph":"i","s":"t","ts":{},"pid":{},"tid":{},"args":{}}})",
                                 Quote(fmt::format("state {}", thread.at("state").get<std::string>())), us(ts_ns), pid,
                                 tid, Dump(args)));
  }
  json metadata{{"source", "looptrace snapshot"}, {"ts_base_ns", base_ns}, {"wall_time_ns", record.at("wall_time_ns")}};
  out << "{\"traceEvents\":[\n";
  for (size_t i = 0; i < events.size(); ++i) out << events[i] << (i + 1 < events.size() ? ",\n" : "\n");
  out << "],\n\"displayTimeUnit\":\"ms\",\n\"metadata\":" << Dump(metadata) << "}\n";
}

namespace {

class ChromeRenderer : public Renderer {
 public:
  void Render(const Report& report, std::ostream& out) const override { RenderChromeTrace(report, out); }
  void RenderDump(const ThreadDump& dump, std::ostream& out) const override { RenderThreadDumpChromeTrace(dump, out); }
};

}  // namespace

std::unique_ptr<Renderer> MakeChromeRenderer(const RenderOptions&) { return std::make_unique<ChromeRenderer>(); }

}  // namespace looptrace
