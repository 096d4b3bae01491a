// System-wide cost of looptrace's sched_switch/sched_wakeup programs on a context-switch-
// heavy workload that does not belong to the target: two threads ping-pong over pipes,
// timed without looptrace and with `looptrace record` attached to an idle sample target,
// in interleaved rounds; the median of the rounds' ratios is printed (goal <= 1.05).
// Usage (root): looptrace_sched_overhead [BUILD_DIR=.] [ROUND_TRIPS=200000] [ROUNDS=5]
#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace {

double NowS() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

// ns per context switch of a pipe ping-pong between two threads of this process.
double PingPong(long round_trips) {
  int a[2], b[2];
  if (pipe(a) || pipe(b)) std::exit(1);
  std::thread peer([&] {
    char c;
    for (long i = 0; i < round_trips; ++i) {
      if (read(a[0], &c, 1) != 1 || write(b[1], &c, 1) != 1) break;
    }
  });
  double start = NowS();
  char c = 'x';
  for (long i = 0; i < round_trips; ++i) {
    if (write(a[1], &c, 1) != 1 || read(b[0], &c, 1) != 1) break;
  }
  double elapsed = NowS() - start;
  peer.join();
  for (int fd : {a[0], a[1], b[0], b[1]}) close(fd);
  return elapsed * 1e9 / (2.0 * round_trips);
}

pid_t Spawn(const std::vector<std::string>& argv, bool quiet) {
  pid_t pid = fork();
  if (pid == 0) {
    if (quiet) {
      freopen("/dev/null", "w", stdout);
      freopen("/dev/null", "w", stderr);
    }
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  return pid;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::string build = argc > 1 ? argv[1] : ".";
  long round_trips = argc > 2 ? std::atol(argv[2]) : 200'000;
  int rounds = argc > 3 ? std::atoi(argv[3]) : 5;
  if (geteuid() != 0) {
    fmt::print(stderr, "sched_overhead: needs root\n");
    return 1;
  }
  pid_t target = Spawn({build + "/looptrace-sample-app", "--scenario", "idle", "--count", "600000"}, true);
  usleep(200'000);
  // Each round times the workload without looptrace, with it, and without again: the ratio
  // of a round (with over the mean of its two untraced runs) cancels the drift of a shared
  // machine, which swings the absolute times by more than the effect.
  std::vector<double> without, with, ratios;
  for (int r = 0; r < rounds; ++r) {
    const double before = PingPong(round_trips);
    pid_t tracer = Spawn({build + "/looptrace", "-q", "record", "-p", std::to_string(target), "--profile",
                          LOOPTRACE_SAMPLE_PROFILE_DIR "/sample.profile", "-o", "/dev/null"},
                         true);
    usleep(1'500'000);  // attached
    with.push_back(PingPong(round_trips));
    kill(tracer, SIGINT);
    waitpid(tracer, nullptr, 0);
    without.push_back((before + PingPong(round_trips)) / 2);
    ratios.push_back(with.back() / without.back());
  }
  kill(target, SIGKILL);
  waitpid(target, nullptr, 0);
  const double a = Median(without), b = Median(with), ratio = Median(ratios);
  fmt::print("context switches of an unrelated workload ({} rounds x {} round trips, medians)\n", rounds, round_trips);
  fmt::print("  without looptrace   {:>8.1f} ns per switch\n", a);
  fmt::print("  with looptrace      {:>8.1f} ns per switch (sched_switch + sched_wakeup programs, tgid filter first)\n",
             b);
  fmt::print("  ratio {:.3f}, median of the rounds' own (goal <= 1.05) {}\n", ratio, ratio <= 1.05 ? "OK" : "OVER");
  return 0;
}
