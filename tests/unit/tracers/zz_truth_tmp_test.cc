#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <fstream>
#include <cstdlib>
#include "looptrace/tracers/frames.h"
namespace looptrace { namespace {
using nlohmann::json;
EventArg U(const char* n, uint64_t v) { EventArg a; a.name = n; a.value = v; return a; }
TEST(TruthTmp, Replay) {
  const char* path = std::getenv("LOOPTRACE_TRUTH"); if (!path) GTEST_SKIP();
  std::ifstream in(path); std::string line;
  struct Ev { uint64_t ts; int order; std::function<void(FrameTracer&)> fn; };
  std::vector<Ev> evs; std::map<uint64_t, json> truth;
  auto probe = [](Role r, uint64_t ts, uint32_t tid, std::vector<EventArg> a) { ProbeEvent e; e.ts_ns = ts; e.tid = tid; e.role = r; e.args = a; return e; };
  while (std::getline(in, line)) {
    json j = json::parse(line); std::string t = j["type"];
    if (t == "vsync") { auto e = probe(Role::kVsync, j["ts_ns"], j["tid"], {U("vsync_ns", j["vsync_ns"])}); evs.push_back({e.ts_ns, 1, [e](FrameTracer& f){ f.OnProbe(e);} }); }
    if (t == "message") { Message m; m.tid = j["tid"]; m.begin_ns = j["begin_ns"]; m.end_ns = j["end_ns"]; m.msg_id = j["msg_id"].get<uint64_t>(); m.name = j["name"]; evs.push_back({m.end_ns, 3, [m](FrameTracer& f){ f.OnMessage(m);} }); }
    if (t == "milestone" && j["name"] == "activity.focus") { ProbeEvent e = probe(Role::kActivityFocus, j["ts_ns"], j["tid"], {}); EventArg a; a.name = "name"; a.text = j["activity"].get<std::string>(); e.args.push_back(a); evs.push_back({e.ts_ns, 1, [e](FrameTracer& f){ f.OnProbe(e);} }); }
    if (t == "frame") {
      truth[j["frame_id"]] = j; uint32_t tid = j["tid"];
      auto b = probe(Role::kFrameBegin, j["begin_ns"], tid, {U("frame_id", j["frame_id"]), U("vsync_ns", j["vsync_ns"])}); evs.push_back({b.ts_ns, 2, [b](FrameTracer& f){ f.OnProbe(b);} });
      for (auto& p : j["phases"]) { auto pb = probe(Role::kPhaseBegin, p["begin_ns"], tid, {U("phase", p["phase"])}); auto pe = probe(Role::kPhaseEnd, p["end_ns"], tid, {U("phase", p["phase"])});
        evs.push_back({pb.ts_ns, 2, [pb](FrameTracer& f){ f.OnProbe(pb);} }); evs.push_back({pe.ts_ns, 2, [pe](FrameTracer& f){ f.OnProbe(pe);} }); }
      auto e = probe(Role::kFrameEnd, j["end_ns"], tid, {U("frame_id", j["frame_id"])}); evs.push_back({e.ts_ns, 2, [e](FrameTracer& f){ f.OnProbe(e);} });
    }
  }
  std::stable_sort(evs.begin(), evs.end(), [](const Ev& a, const Ev& b) { return a.ts < b.ts; });
  FrameTracer tracer({}, nullptr, nullptr);
  for (auto& e : evs) e.fn(tracer);
  tracer.Finish(evs.back().ts + 1);
  FramesReport r; tracer.Contribute(&r);
  int bad = 0;
  for (auto& f : r.frames) { json& t = truth[f.frame_id];
    uint64_t dropped = (f.end_ns - f.vsync_ns) / t["interval_ns"].get<uint64_t>();
    if (f.refresh_hz != t["refresh_hz"].get<double>() || f.interval_ns != t["interval_ns"] || f.dropped_frames != dropped || f.skipped_frames != t["skipped_frames"] || f.scene != t["scene"]) { ++bad;
      printf("frame %lu: hz %g/%g int %lu skip %lu/%lu drop %lu/%lu scene %s\n", f.frame_id, f.refresh_hz, t["refresh_hz"].get<double>(), f.interval_ns, f.skipped_frames, t["skipped_frames"].get<uint64_t>(), f.dropped_frames, dropped, f.scene.c_str()); }
    if (f.dropped_frames || f.delay_by_messages_ns > 0) printf("  frame %lu dropped %lu md %.3f %s skip %lu delay %.3f ms\n", f.frame_id, f.dropped_frames, f.matrix_dropped, f.bucket.c_str(), f.skipped_frames, f.delay_by_messages_ns / 1e6);
  }
  for (auto& s : r.scenes) printf("scene %s n=%zu hz=%.2f mfps=%.2f dfps=%.2f janky=%zu delay=%.1fms\n", s.scene.c_str(), s.frames, s.refresh_hz, s.matrix_fps, s.delivered_fps, s.janky, s.delay_by_messages_ns/1e6);
  for (auto& s : r.windows) printf("window %s n=%zu mfps=%.2f\n", s.scene.c_str(), s.frames, s.matrix_fps);
  auto& p = tracer.problems(); printf("problems: changes %lu assumed %lu lost %lu\n", p.refresh_rate_changes, p.refresh_rate_assumed, p.frame_end_lost);
  EXPECT_EQ(bad, 0);
}
}}
