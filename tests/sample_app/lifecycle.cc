#include "lifecycle.h"

#include <atomic>

#include "hooks.h"
#include "looper.h"
#include "sys_util.h"
#include "truth.h"

namespace looptrace::sample::lifecycle {
namespace {

std::atomic<const char*> g_scene{""};
const char* g_launched = nullptr;  // the last launched activity
bool g_warm = false;
bool g_first_frame_pending = false;

void Record(const char* name, uint64_t ts_ns, uint64_t ts_after_ns, const char* activity, bool warm,
            uint64_t frame_id = 0) {
  JsonLine line("milestone");
  line.S("name", name).I("tid", CurrentTid()).U("ts_ns", ts_ns);
  if (ts_after_ns != 0) line.U("ts_after_ns", ts_after_ns);
  line.U("msg_id", Looper::CurrentMessageId());
  if (activity != nullptr) line.S("activity", activity);
  if (frame_id != 0) line.U("frame_id", frame_id);
  line.B("warm", warm);
  TruthRecorder::Global().RecordLine(line.Take());
}

}  // namespace

const char* CurrentScene() { return g_scene.load(std::memory_order_relaxed); }

void RecordProcessStart(uint64_t process_start_ns) {
  JsonLine line("milestone");
  line.S("name", "process.start").I("tid", getpid()).U("ts_ns", process_start_ns);
  line.B("warm", false);
  TruthRecorder::Global().RecordLine(line.Take());
}

void AppCreateBegin() {
  const uint64_t ts = NowNs();
  sample_app_create_begin();
  const uint64_t after = NowNs();
  Record("app.create.begin", ts, after, nullptr, false);
}

void AppCreateEnd() {
  const uint64_t ts = NowNs();
  sample_app_create_end();
  const uint64_t after = NowNs();
  Record("app.create.end", ts, after, nullptr, false);
}

void ActivityLaunch(const char* name, bool warm) {
  const uint64_t ts = NowNs();
  sample_activity_launch(name);
  const uint64_t after = NowNs();
  g_launched = name;
  g_warm = warm;
  g_first_frame_pending = true;
  Record("activity.launch", ts, after, name, warm);
}

void ActivityFocus(const char* name) {
  const uint64_t ts = NowNs();
  sample_activity_focus(name);
  const uint64_t after = NowNs();
  g_scene.store(name, std::memory_order_relaxed);
  Record("activity.focus", ts, after, name, g_warm);
}

void FullyDrawn() {
  const uint64_t ts = NowNs();
  sample_fully_drawn();
  const uint64_t after = NowNs();
  Record("fully.drawn", ts, after, g_launched, g_warm);
}

void OnFrameEnd(uint64_t frame_id, uint64_t end_ns, uint64_t end_after_ns) {
  if (!g_first_frame_pending) return;
  g_first_frame_pending = false;
  Record("first.frame", end_ns, end_after_ns, g_launched, g_warm, frame_id);
}

}  // namespace looptrace::sample::lifecycle
