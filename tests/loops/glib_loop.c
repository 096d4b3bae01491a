// A GLib main loop that writes its own truth (for tests/integration/loops_test.cc):
//   looptrace-glib-loop [--truth FILE] [--ticks N] [--slow-ms MS] [--start-delay-ms MS]
//   looptrace-glib-loop --bench N [--work-us W]   (bench/loop_overhead.cc: an idle callback N times)
// A 10 ms timeout (on_tick, 0.3 ms of work) runs N times; halfway it adds an idle callback
// that works for MS (on_slow_idle) and writes to a pipe that a unix fd source reads
// (on_pipe_readable); a custom GSource (its own GSourceFuncs) runs custom_callback every
// 4th tick. Every callback records its begin and end (CLOCK_MONOTONIC); the truth file gets
// one {"type":"message","name":...} line each at exit.
#include <glib-unix.h>
#include <glib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "truth.h"

static struct truth_log truth;
static GMainLoop* loop;
static int ticks_left = 40, ticks_total = 40;
static uint64_t slow_ns = 120000000;
static int pipe_fds[2];
static gboolean custom_ready;

static gboolean on_slow_idle(gpointer data) {
  (void)data;
  uint64_t begin = truth_now_ns();
  truth_spin_ns(slow_ns);
  truth_add(&truth, "message", "on_slow_idle", begin, truth_now_ns());
  return G_SOURCE_REMOVE;
}

static gboolean on_pipe_readable(gint fd, GIOCondition condition, gpointer data) {
  (void)condition, (void)data;
  uint64_t begin = truth_now_ns();
  char buffer[16];
  if (read(fd, buffer, sizeof(buffer)) < 0) perror("read");
  truth_spin_ns(200000);
  truth_add(&truth, "message", "on_pipe_readable", begin, truth_now_ns());
  return G_SOURCE_CONTINUE;
}

static gboolean custom_callback(gpointer data) {
  (void)data;
  uint64_t begin = truth_now_ns();
  truth_spin_ns(100000);
  truth_add(&truth, "custom", "custom_callback", begin, truth_now_ns());
  return G_SOURCE_CONTINUE;
}

// A source type of the program's own: GLib does not export its table, so the glib profile
// sees it only as a g_main_context_dispatch message, unnamed.
static gboolean custom_prepare(GSource* source, gint* timeout) {
  (void)source;
  *timeout = -1;
  return custom_ready;
}
static gboolean custom_check(GSource* source) {
  (void)source;
  return custom_ready;
}
static gboolean custom_dispatch(GSource* source, GSourceFunc callback, gpointer data) {
  (void)source;
  custom_ready = FALSE;
  return callback(data);
}
static GSourceFuncs custom_funcs = {custom_prepare, custom_check, custom_dispatch, NULL, NULL, NULL};

static int bench_left;
static uint64_t bench_work_ns;

static gboolean on_bench_idle(gpointer data) {
  (void)data;
  truth_spin_ns(bench_work_ns);
  if (--bench_left > 0) return G_SOURCE_CONTINUE;
  g_main_loop_quit(loop);
  return G_SOURCE_REMOVE;
}

static gboolean on_tick(gpointer data) {
  (void)data;
  uint64_t begin = truth_now_ns();
  truth_spin_ns(300000);
  --ticks_left;
  if (ticks_left == ticks_total / 2) {
    g_idle_add(on_slow_idle, NULL);
    if (write(pipe_fds[1], "x", 1) != 1) perror("write");
  }
  if (ticks_left % 4 == 0) custom_ready = TRUE;
  truth_add(&truth, "message", "on_tick", begin, truth_now_ns());
  if (ticks_left == 0) {
    g_main_loop_quit(loop);
    return G_SOURCE_REMOVE;
  }
  return G_SOURCE_CONTINUE;
}

int main(int argc, char** argv) {
  const char* truth_path = NULL;
  int start_delay_ms = 0, bench = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--truth"))
      truth_path = argv[i + 1];
    else if (!strcmp(argv[i], "--ticks"))
      ticks_left = ticks_total = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--slow-ms"))
      slow_ns = strtoull(argv[i + 1], NULL, 10) * 1000000ull;
    else if (!strcmp(argv[i], "--start-delay-ms"))
      start_delay_ms = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--bench"))
      bench = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--work-us"))
      bench_work_ns = strtoull(argv[i + 1], NULL, 10) * 1000ull;
    else {
      fprintf(stderr, "usage: %s [--truth FILE] [--ticks N] [--slow-ms MS] [--start-delay-ms MS]\n", argv[0]);
      return 2;
    }
  }
  if (start_delay_ms) g_usleep((gulong)start_delay_ms * 1000);
  if (bench > 0) {
    loop = g_main_loop_new(NULL, FALSE);
    bench_left = bench;
    g_idle_add(on_bench_idle, NULL);
    uint64_t begin = truth_now_ns();
    g_main_loop_run(loop);
    printf("loop_ns=%llu iterations=%d\n", (unsigned long long)(truth_now_ns() - begin), bench);
    return 0;
  }
  if (pipe(pipe_fds) != 0) return 1;
  loop = g_main_loop_new(NULL, FALSE);
  g_timeout_add(10, on_tick, NULL);
  g_unix_fd_add(pipe_fds[0], G_IO_IN, on_pipe_readable, NULL);
  GSource* custom = g_source_new(&custom_funcs, sizeof(GSource));
  g_source_set_callback(custom, custom_callback, NULL, NULL);
  g_source_attach(custom, NULL);
  g_main_loop_run(loop);
  return truth_write(&truth, truth_path, syscall(SYS_gettid));
}
