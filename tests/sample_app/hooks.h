// Probe points of the looptrace sample target.
//
// Each hook is a global function whose body is exactly a 5-byte nop
// (0f 1f 44 00 00) followed by `ret`, defined in assembly in hooks.cc. A uprobe
// on a nop5 is emulated by the kernel instead of single-stepped, so attaching
// to these costs about 0.7 us per hit (see docs/probe-costs.md). Arguments travel in
// the normal SysV registers (rdi, rsi), where a probe reads them.
//
// The names are a contract: the sample profiles (profiles/*.profile) attach to
// them by symbol. String arguments always point at static storage (string
// literals), so a profiler may read them from the target's memory later.

#ifndef LOOPTRACE_TESTS_SAMPLE_APP_HOOKS_H_
#define LOOPTRACE_TESTS_SAMPLE_APP_HOOKS_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Right before a message's callback/handler runs; msg_id is unique per
// dispatched message within the process and increases.
void sample_looper_dispatch_begin(uint64_t msg_id, const char* name);
// Right after the message's callback/handler returned.
void sample_looper_dispatch_end(uint64_t msg_id);

// Around the looper's idle wait (Android's nativePollOnce). timeout_ms is -1
// for an unbounded wait, 0 for a non-blocking check, otherwise the time to
// the next due message rounded up to whole milliseconds.
void sample_looper_poll_begin(int64_t timeout_ms);
void sample_looper_poll_end(void);

// Around one run of an IdleHandler; idle_id is unique per run within the
// process and increases.
void sample_looper_idle_begin(uint64_t idle_id, const char* name);
void sample_looper_idle_end(uint64_t idle_id);

// ---- Choreographer (frames) ----
// Frame phases (Choreographer callback types, in the order doFrame runs them).
enum {
  SAMPLE_PHASE_INPUT = 0,
  SAMPLE_PHASE_ANIMATION = 1,
  SAMPLE_PHASE_INSETS_ANIMATION = 2,
  SAMPLE_PHASE_TRAVERSAL = 3,
  SAMPLE_PHASE_COMMIT = 4,
};
// Choreographer.doFrame starts / ends (inside the "Choreographer#doFrame"
// message). frame_id starts at 1 and increases per frame in the process;
// vsync_ns is the vsync time (CLOCK_MONOTONIC ns) the frame is for, after
// Android's skipped-frame adjustment (frameTimeNanos).
void sample_choreographer_frame_begin(uint64_t frame_id, uint64_t vsync_ns);
void sample_choreographer_frame_end(uint64_t frame_id);
// Around each callback queue of a frame (phase = SAMPLE_PHASE_*); all five run
// in every frame, in order.
void sample_choreographer_phase_begin(uint32_t phase);
void sample_choreographer_phase_end(uint32_t phase);
// A requested vsync signal arrives at the app (main thread, inside the
// looper's poll, like DisplayEventReceiver.onVsync); vsync_ns is its timestamp.
void sample_vsync(uint64_t vsync_ns);

// ---- Input, sync barriers, queue ----
// An input event is delivered to the app (InputEventReceiver) / its handling
// finished (finishInputEvent). seq starts at 1 and increases.
void sample_input_receive(uint64_t seq);
void sample_input_finish(uint64_t seq);
// A sync barrier is posted / removed (MessageQueue.postSyncBarrier /
// removeSyncBarrier); token identifies it. Called with the queue locked, so
// the order of queue hooks is the order of the queue's operations.
void sample_barrier_post(uint64_t token);
void sample_barrier_remove(uint64_t token);
// Every message accepted into a queue (MessageQueue.enqueueMessage), on the
// posting thread, with the queue locked: when_ns is the due time
// (CLOCK_MONOTONIC ns), is_async 1 for asynchronous messages.
void sample_message_enqueue(uint64_t when_ns, uint32_t is_async);

// ---- Lifecycle (startup) ----
// Around Application.onCreate inside the "bindApplication" message.
void sample_app_create_begin(void);
void sample_app_create_end(void);
// The "launchActivity" message starts creating activity `name`.
void sample_activity_launch(const char* name);
// Window focus gained by activity `name` (the scene of the following frames).
void sample_activity_focus(const char* name);
// Activity.reportFullyDrawn().
void sample_fully_drawn(void);

// Matrix-style method instrumentation (AppMethodBeat.i(id) / AppMethodBeat.o(id)):
// an instrumented method calls sample_method_enter(id) first thing and
// sample_method_exit(id) right before it returns. Ids come from the static
// table in method_trace.cc (1, 2, ...; see methodMapping.txt). Called in
// looptrace-sample-app only; looptrace-sample-app-cyg contains them but never
// calls them.
void sample_method_enter(uint32_t method_id);
void sample_method_exit(uint32_t method_id);

// gcc -finstrument-functions hooks: called at the entry and before the return
// of each function in an instrumented translation unit, with the function's
// runtime address and the return address into its caller. Defined (nop5; ret)
// only in looptrace-sample-app-cyg (cyg_hooks.cc).
void __cyg_profile_func_enter(void* fn, void* call_site);
void __cyg_profile_func_exit(void* fn, void* call_site);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // LOOPTRACE_TESTS_SAMPLE_APP_HOOKS_H_
