/*
 * The closed-loop client of the busy-server benchmark (bench/busy_server_overhead.py): one
 * connection to 127.0.0.1:PORT, one request in flight, the next sent as soon as the answer
 * is in. Runs WARMUP seconds, then counts answers for SECONDS and prints
 * "requests N seconds S total T elapsed E" (T: every answer, warm-up included, in E seconds).
 *   closed_loop_client PORT echo|http|lines SECONDS [WARMUP]
 * echo: 64 bytes, the same 64 back. http: a kept-alive GET, an answer ending "\r\n\r\nok".
 * lines: the kinds of blocking_asyncio.py in turn (cpu, sleep, lock, disk; slow every 2000th),
 * each line back; the output goes on with each kind's median round trip in the counted window,
 * "cpu_us C sleep_us S lock_us L disk_us D": which kind of handler a tracer slows.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Reads until the answer is complete; 0 on success. */
static int read_answer(int fd, const char* mode, size_t expect) {
  char buf[8192];
  size_t have = 0;

  for (;;) {
    ssize_t got = read(fd, buf + have, sizeof(buf) - have);

    if (got <= 0) return -1;
    have += got;
    if (!strcmp(mode, "http")) {
      if (have >= 6 && !memcmp(buf + have - 6, "\r\n\r\nok", 6)) return 0;
    } else if (have >= expect) {
      return 0;
    }
    if (have == sizeof(buf)) return -1;
  }
}

#define KINDS 4
#define KEPT_PER_KIND 400000

static int by_value(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;

  return x < y ? -1 : x > y;
}

static double median_us(double* values, long n) {
  if (n == 0) return 0;
  qsort(values, n, sizeof(*values), by_value);
  return 1e6 * (n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2);
}

int main(int argc, char** argv) {
  static const char* kinds[KINDS] = {"cpu\n", "sleep\n", "lock\n", "disk\n"};
  static double round_trips[KINDS][KEPT_PER_KIND];
  long kept[KINDS] = {0};
  static const char http[] = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n";
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  const char* mode;
  double seconds, warmup, start, end;
  long requests = 0, i = 0;
  char echo[64];
  int fd, one = 1;

  if (argc < 4) return 2;
  addr.sin_port = htons(atoi(argv[1]));
  mode = argv[2];
  seconds = atof(argv[3]);
  warmup = argc > 4 ? atof(argv[4]) : 0.5;
  memset(echo, 'e', sizeof(echo));
  fd = socket(AF_INET, SOCK_STREAM, 0);
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (connect(fd, (struct sockaddr*)&addr, sizeof(addr))) {
    perror("connect");
    return 1;
  }
  start = now() + warmup;
  end = start + seconds;
  for (;; i++) {
    const char* req;
    size_t len;
    double t, sent = now();

    if (!strcmp(mode, "http")) {
      req = http;
      len = sizeof(http) - 1;
    } else if (!strcmp(mode, "lines")) {
      req = i % 2000 == 1999 ? "slow\n" : kinds[i % 4];
      len = strlen(req);
    } else {
      req = echo;
      len = sizeof(echo);
    }
    if (write(fd, req, len) != (ssize_t)len || read_answer(fd, mode, len)) {
      fprintf(stderr, "client: connection lost\n");
      return 1;
    }
    t = now();
    if (t >= end) break;
    if (t >= start) {
      requests++;
      if (!strcmp(mode, "lines") && i % 2000 != 1999 && kept[i % KINDS] < KEPT_PER_KIND)
        round_trips[i % KINDS][kept[i % KINDS]++] = t - sent;
    }
  }
  printf("requests %ld seconds %.3f total %ld elapsed %.3f", requests, seconds, i + 1, now() - (start - warmup));
  if (!strcmp(mode, "lines"))
    for (int k = 0; k < KINDS; k++)
      printf(" %.*s_us %.1f", (int)strlen(kinds[k]) - 1, kinds[k], median_us(round_trips[k], kept[k]));
  printf("\n");
  return 0;
}
