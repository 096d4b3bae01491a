// The truth a loop program writes about itself: one JSON line per piece of work it timed,
// kept in memory while it runs (no I/O inside the timed loop) and written at exit.
#pragma once

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

static inline uint64_t truth_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

// Busy (on-CPU) for `ns`: the work is CPU time, so wall and CPU time agree.
static inline void truth_spin_ns(uint64_t ns) {
  const uint64_t end = truth_now_ns() + ns;
  while (truth_now_ns() < end) {
  }
}

struct truth_entry {
  const char* kind;  // "message" (a unit of work), "iteration" (poll-bounded), ...
  const char* name;
  uint64_t begin_ns, end_ns;
};

struct truth_log {
  struct truth_entry entries[4096];
  int count;
};

static inline void truth_add(struct truth_log* log, const char* kind, const char* name, uint64_t begin_ns,
                             uint64_t end_ns) {
  if (log->count < (int)(sizeof(log->entries) / sizeof(log->entries[0])))
    log->entries[log->count++] = (struct truth_entry){kind, name, begin_ns, end_ns};
}

// Writes every entry as {"type":KIND,"name":NAME,"begin_ns":..,"end_ns":..,"tid":..}.
static inline int truth_write(const struct truth_log* log, const char* path, long tid) {
  if (!path) return 0;
  FILE* f = fopen(path, "w");
  if (!f) {
    perror(path);
    return 1;
  }
  for (int i = 0; i < log->count; ++i) {
    const struct truth_entry* e = &log->entries[i];
    fprintf(f, "{\"type\":\"%s\",\"name\":\"%s\",\"begin_ns\":%llu,\"end_ns\":%llu,\"tid\":%ld}\n", e->kind, e->name,
            (unsigned long long)e->begin_ns, (unsigned long long)e->end_ns, tid);
  }
  return fclose(f) == 0 ? 0 : 1;
}

#ifdef __cplusplus
}
#endif
