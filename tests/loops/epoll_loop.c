// A plain C epoll loop that writes its own truth (for tests/integration/loops_test.cc):
//   looptrace-epoll-loop [--truth FILE] [--iterations N] [--slow-ms MS] [--start-delay-ms MS] [--select 1]
//   looptrace-epoll-loop --bench N [--work-us W] [--ppoll 1]   (bench/loop_overhead.cc)
// epoll_wait on a 5 ms timerfd and an eventfd; each wake-up is one loop iteration: the timer
// does 0.2 ms of work ("tick"), and at the middle iteration it does MS of work ("slow") and
// signals the eventfd, which the next iteration drains ("event"). The truth file gets one
// {"type":"iteration","name":...} line per iteration, from just after epoll_wait returns to
// just before the next call (the last iteration, which ends in exit, is not one).
// --select 1 waits in select(2) on the same two fds instead (Python's select.select loops).
#define _GNU_SOURCE  // ppoll
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "truth.h"

static struct truth_log truth;

// Overhead benchmark: N iterations that each find the eventfd ready at once and work W us,
// waiting in epoll_wait (a single-stepped libc entry) or ppoll (an emulated `push`).
static int Bench(int iterations, uint64_t work_ns, int use_ppoll) {
  int ep = epoll_create1(EPOLL_CLOEXEC);
  int event = eventfd(1, EFD_CLOEXEC);
  struct epoll_event ev = {.events = EPOLLIN, .data.fd = event};
  if (ep < 0 || event < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, event, &ev) != 0) return 1;
  struct pollfd pfd = {.fd = event, .events = POLLIN};
  struct timespec zero = {0, 0};
  uint64_t begin = truth_now_ns();
  for (int n = 0; n < iterations; ++n) {
    struct epoll_event ready;
    int count = use_ppoll ? ppoll(&pfd, 1, &zero, NULL) : epoll_wait(ep, &ready, 1, -1);
    if (count != 1) return 1;
    truth_spin_ns(work_ns);
  }
  printf("loop_ns=%llu iterations=%d\n", (unsigned long long)(truth_now_ns() - begin), iterations);
  return 0;
}

int main(int argc, char** argv) {
  const char* truth_path = NULL;
  int iterations = 60, start_delay_ms = 0, bench = 0, use_ppoll = 0, use_select = 0;
  uint64_t slow_ns = 120000000, work_ns = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--truth"))
      truth_path = argv[i + 1];
    else if (!strcmp(argv[i], "--iterations"))
      iterations = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--slow-ms"))
      slow_ns = strtoull(argv[i + 1], NULL, 10) * 1000000ull;
    else if (!strcmp(argv[i], "--start-delay-ms"))
      start_delay_ms = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--bench"))
      bench = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--work-us"))
      work_ns = strtoull(argv[i + 1], NULL, 10) * 1000ull;
    else if (!strcmp(argv[i], "--ppoll"))
      use_ppoll = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--select"))
      use_select = atoi(argv[i + 1]);
    else {
      fprintf(stderr, "usage: %s [--truth FILE] [--iterations N] [--slow-ms MS] [--start-delay-ms MS] [--select 1]\n",
              argv[0]);
      return 2;
    }
  }
  if (bench) return Bench(bench, work_ns, use_ppoll);
  if (start_delay_ms) usleep((useconds_t)start_delay_ms * 1000);
  int ep = epoll_create1(EPOLL_CLOEXEC);
  int timer = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
  int event = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  struct itimerspec period = {{0, 5000000}, {0, 5000000}};
  if (ep < 0 || timer < 0 || event < 0 || timerfd_settime(timer, 0, &period, NULL) != 0) return 1;
  struct epoll_event ev = {.events = EPOLLIN, .data.fd = timer};
  epoll_ctl(ep, EPOLL_CTL_ADD, timer, &ev);
  ev.data.fd = event;
  epoll_ctl(ep, EPOLL_CTL_ADD, event, &ev);

  for (int n = 0; n < iterations; ++n) {
    struct epoll_event ready[4];
    int count = 0;
    if (use_select) {
      fd_set readable;
      FD_ZERO(&readable);
      FD_SET(timer, &readable);
      FD_SET(event, &readable);
      if (select((timer > event ? timer : event) + 1, &readable, NULL, NULL, NULL) > 0) {
        if (FD_ISSET(event, &readable)) ready[count++].data.fd = event;
        if (FD_ISSET(timer, &readable)) ready[count++].data.fd = timer;
      }
    } else {
      count = epoll_wait(ep, ready, 4, -1);
    }
    uint64_t begin = truth_now_ns();
    const char* name = "idle";
    for (int i = 0; i < count; ++i) {
      uint64_t value;
      if (ready[i].data.fd == event) {
        if (read(event, &value, sizeof(value)) < 0) perror("read eventfd");
        truth_spin_ns(100000);
        name = "event";
      } else if (ready[i].data.fd == timer) {
        if (read(timer, &value, sizeof(value)) < 0) continue;  // raced with the next expiry
        if (n == iterations / 2) {
          truth_spin_ns(slow_ns);
          value = 1;
          if (write(event, &value, sizeof(value)) < 0) perror("write eventfd");
          name = "slow";
        } else {
          truth_spin_ns(200000);
          if (strcmp(name, "event")) name = "tick";
        }
      }
    }
    if (n + 1 < iterations) truth_add(&truth, "iteration", name, begin, truth_now_ns());
  }
  return truth_write(&truth, truth_path, syscall(SYS_gettid));
}
