// What stack sampling costs the target: a workload of fixed work (messages of ~2 ms of
// arithmetic through a few nested calls, every tenth one sleeping 200 us, with the sample
// target's dispatch hooks around each) timed with `looptrace record` attached in four
// modes, in interleaved rounds: no looptrace, looptrace with --sample-rate 0 (no stack
// samples), looptrace at the default rate, and the default rate with --dwarf-unwind. The
// ratios of medians are printed; the goal is sampled / unsampled <= 1.05.
// Usage (root): looptrace_sampling_overhead [BUILD_DIR=.] [MESSAGES=1500] [ROUNDS=5]
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "hooks.h"

namespace {

double NowS() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

volatile uint64_t g_sink;

// A few frames deep, like a message handler's code.
__attribute__((noinline)) uint64_t Leaf(uint64_t x, int n) {
  for (int i = 0; i < n; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;
  return x;
}
__attribute__((noinline)) uint64_t Middle(uint64_t x, int n) { return Leaf(x, n) ^ Leaf(x + 1, n); }
__attribute__((noinline)) uint64_t Handler(uint64_t x, int n) { return Middle(x, n) + Middle(x * 3, n); }

// Runs `messages` messages; seconds taken.
double Work(int messages, int iterations) {
  const double start = NowS();
  for (int m = 0; m < messages; ++m) {
    sample_looper_dispatch_begin(static_cast<uint64_t>(m), "bench.work");
    g_sink = Handler(static_cast<uint64_t>(m), iterations);
    if (m % 10 == 0) usleep(200);
    sample_looper_dispatch_end(static_cast<uint64_t>(m));
  }
  return NowS() - start;
}

// Iterations for ~2 ms of work per message.
int Calibrate() {
  int n = 1000;
  for (;;) {
    const double start = NowS();
    g_sink = Handler(1, n);
    if (NowS() - start > 0.5e-3) return static_cast<int>(n * 2e-3 / (NowS() - start));
    n *= 2;
  }
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Starts looptrace on `pid` and returns once its probes are attached (it says so on stderr).
pid_t StartLooptrace(const std::string& build, pid_t pid, const std::vector<std::string>& extra) {
  int err[2];
  if (pipe(err) != 0) std::exit(1);
  pid_t child = fork();
  if (child == 0) {
    dup2(err[1], 2);
    if (!freopen("/dev/null", "w", stdout)) _exit(127);
    std::vector<std::string> argv = {build + "/looptrace",
                                     "record",
                                     "-p",
                                     std::to_string(pid),
                                     "--profile",
                                     LOOPTRACE_SAMPLE_PROFILE_DIR "/sample.profile",
                                     "-d",
                                     "600"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(err[1]);
  std::string text;
  char buf[4096];
  while (text.find("tracing pid") == std::string::npos) {
    ssize_t n = read(err[0], buf, sizeof(buf));
    if (n <= 0) {
      fmt::print(stderr, "looptrace did not start: {}\n", text);
      std::exit(1);
    }
    text.append(buf, static_cast<size_t>(n));
  }
  close(err[0]);  // it writes little more; a closed pipe only loses its log
  return child;
}

void Stop(pid_t looptrace) {
  kill(looptrace, SIGINT);
  waitpid(looptrace, nullptr, 0);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string build = argc > 1 ? argv[1] : ".";
  const int messages = argc > 2 ? std::atoi(argv[2]) : 1500;
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 5;
  if (geteuid() != 0) {
    fmt::print(stderr, "sampling_overhead: needs root\n");
    return 1;
  }
  signal(SIGPIPE, SIG_IGN);
  const int iterations = Calibrate();
  // The target: this program, forked, running the workload on request.
  int request[2], reply[2];
  // Close-on-exec, so looptrace children do not hold the target's request pipe open.
  if (pipe2(request, O_CLOEXEC) || pipe2(reply, O_CLOEXEC)) return 1;
  pid_t target = fork();
  if (target == 0) {
    close(request[1]);  // else the target never sees the end of the requests
    close(reply[0]);
    char c;
    while (read(request[0], &c, 1) == 1) {
      double s = Work(messages, iterations);
      if (write(reply[1], &s, sizeof(s)) != sizeof(s)) _exit(1);
    }
    _exit(0);
  }
  auto run = [&]() {
    char c = 'x';
    double s = 0;
    if (write(request[1], &c, 1) != 1 || read(reply[0], &s, sizeof(s)) != sizeof(s)) std::exit(1);
    return s;
  };
  run();  // warm up
  const std::vector<std::pair<std::string, std::vector<std::string>>> modes = {
      {"no looptrace", {}},
      {"--sample-rate 0", {"--sample-rate", "0"}},
      {"default rate (997 Hz)", {}},
      {"997 Hz + --dwarf-unwind", {"--dwarf-unwind"}},
  };
  std::map<std::string, std::vector<double>> times;
  for (int r = 0; r < rounds; ++r) {
    for (size_t m = 0; m < modes.size(); ++m) {
      pid_t looptrace = m == 0 ? 0 : StartLooptrace(build, target, modes[m].second);
      times[modes[m].first].push_back(run());
      if (looptrace) Stop(looptrace);
    }
  }
  close(request[1]);
  waitpid(target, nullptr, 0);
  const double none = Median(times["no looptrace"]);
  const double off = Median(times["--sample-rate 0"]);
  fmt::print("workload: {} messages of ~2 ms (every 10th sleeps 200 us), {} rounds, medians\n", messages, rounds);
  for (const auto& [name, extra] : modes) {
    const double t = Median(times[name]);
    fmt::print("  {:<26} {:8.3f} s   vs no looptrace {:.3f}   vs --sample-rate 0 {:.3f}\n", name, t, t / none, t / off);
  }
  fmt::print("sampling overhead (default rate vs --sample-rate 0): {:.3f} (goal <= 1.05)\n",
             Median(times["default rate (997 Hz)"]) / off);
  return 0;
}
