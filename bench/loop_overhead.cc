// Cost of looptrace on real event-loop runtimes (root): each loop program of tests/loops runs
// N iterations of W us of work, alone and under `looptrace run` (with its profile),
// in interleaved rounds; the program times its own loop, so attaching is not counted.
// Prints the medians, the time looptrace adds per iteration and the ratio, per runtime,
// for empty iterations and for small (100 us) messages.
//
// The epoll rows isolate the cost of a uprobe on a libc entry point: epoll_wait starts with
// a rip-relative `cmpb`, which the kernel single-steps, while ppoll starts with `push %r12`,
// which it emulates; both are probed the same way (uprobe + uretprobe) by the epoll profile.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

struct Case {
  std::string label;
  std::string profile;  // what auto-detection must pick
  std::string program;  // with its arguments, minus --bench/--work-us
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// Runs `command`, returns the ns per iteration the program printed ("loop_ns=X iterations=N").
double PerIteration(const std::string& command) {
  FILE* p = popen(command.c_str(), "r");
  if (!p) {
    std::perror("popen");
    std::exit(1);
  }
  unsigned long long loop_ns = 0;
  int iterations = 0;
  char line[256];
  while (std::fgets(line, sizeof(line), p))
    if (std::sscanf(line, "loop_ns=%llu iterations=%d", &loop_ns, &iterations) == 2) break;
  while (std::fgets(line, sizeof(line), p)) {
  }
  int status = pclose(p);
  if (status != 0 || iterations <= 0) {
    std::fprintf(stderr, "loop_overhead: '%s' failed (status %d)\n", command.c_str(), status);
    std::exit(1);
  }
  return static_cast<double>(loop_ns) / iterations;
}

}  // namespace

int main(int argc, char** argv) {
  if (geteuid() != 0) {
    std::fprintf(stderr, "loop_overhead: needs root (BPF)\n");
    return 1;
  }
  const int iterations = argc > 1 ? std::atoi(argv[1]) : 20000;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 5;
  const std::string dir = LOOPTRACE_BINARY_DIR;
  const std::string looptrace = dir + "/looptrace";
  const std::vector<Case> cases = {
      {"glib (idle callback)", "glib", dir + "/looptrace-glib-loop"},
      {"android::Looper (native message)", "android-looper", dir + "/looptrace-android-looper"},
      {"epoll loop (epoll_wait)", "epoll", dir + "/looptrace-epoll-loop"},
      {"epoll loop (ppoll)", "epoll", dir + "/looptrace-epoll-loop --ppoll 1"},
  };
  std::printf("looptrace on real event loops: %d iterations per run, median of %d interleaved rounds\n", iterations,
              rounds);
  std::printf("%-34s %-15s %6s %12s %12s %10s %7s\n", "runtime", "profile", "work", "plain", "traced", "added",
              "ratio");
  for (int work_us : {0, 100}) {
    for (const Case& c : cases) {
      const std::string args = fmt::format(" --bench {} --work-us {}", iterations, work_us);
      std::vector<double> plain, traced;
      for (int r = 0; r < rounds; ++r) {
        plain.push_back(PerIteration(c.program + args));
        traced.push_back(PerIteration(
            fmt::format("{} run -q --profile {} -f json -o /dev/null -- {}{}", looptrace, c.profile, c.program, args)));
      }
      const double p = Median(plain), t = Median(traced);
      std::printf("%-34s %-15s %4d us %9.2f us %9.2f us %7.2f us %7.2f\n", c.label.c_str(), c.profile.c_str(), work_us,
                  p / 1e3, t / 1e3, (t - p) / 1e3, t / p);
      std::fflush(stdout);
    }
  }
  return 0;
}
