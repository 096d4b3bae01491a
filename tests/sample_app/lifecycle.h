// App lifecycle milestones (ActivityThread-like): application create, activity
// launch, window focus (the scene), first frame, reportFullyDrawn. Each call
// fires its hook and adds a truth record
//   {"type":"milestone","name":"...","tid":N,"ts_ns":N,"ts_after_ns":N,
//    "msg_id":N,"activity":"...","warm":false}
// (ts_ns / ts_after_ns read right before / after the hook; "activity" only
// where an activity is concerned; msg_id = the message it ran in, 0 if none).
// Main looper thread only.

#ifndef LOOPTRACE_TESTS_SAMPLE_APP_LIFECYCLE_H_
#define LOOPTRACE_TESTS_SAMPLE_APP_LIFECYCLE_H_

#include <cstdint>

namespace looptrace::sample {

namespace lifecycle {

// The activity that last gained window focus: the scene of the frames that
// follow ("" before any focus).
const char* CurrentScene();

// {"type":"milestone","name":"process.start","ts_ns":<main() entry>,...}
void RecordProcessStart(uint64_t process_start_ns);
// sample_app_create_begin / sample_app_create_end.
void AppCreateBegin();
void AppCreateEnd();
// sample_activity_launch(name). `warm` marks this launch and its following
// first.frame, activity.focus and fully.drawn milestones as a warm start
// (process already running). The next frame to end is this launch's first
// frame (milestone "first.frame", ts = that frame's end_ns, with frame_id).
void ActivityLaunch(const char* name, bool warm);
// sample_activity_focus(name); `name` becomes the current scene.
void ActivityFocus(const char* name);
// sample_fully_drawn() for the last launched activity.
void FullyDrawn();
// Called by the Choreographer after each frame ended (end_ns: read right
// before sample_choreographer_frame_end).
void OnFrameEnd(uint64_t frame_id, uint64_t end_ns, uint64_t end_after_ns);

}  // namespace lifecycle

}  // namespace looptrace::sample

#endif  // LOOPTRACE_TESTS_SAMPLE_APP_LIFECYCLE_H_
