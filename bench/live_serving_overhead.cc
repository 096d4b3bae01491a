// What serving a background session costs the traced target (issue 14): the target times
// a tiny traced dispatch function itself (looptrace_bench_target --variant dispatch) under a
// background session (`looptrace attach`) that is (a) left alone, without --metrics, and
// (b) served: --metrics on, one /metrics scrape and one `looptrace status` every 1/RATE s
// while the target runs. Rounds interleave (a) and (b); the medians and the ratio served /
// alone are printed (goal: at most 1.01 at one scrape + status a second).
//
//   looptrace_live_serving_bench [--rounds N] [--count N] [--rate HZ]     (root)
#include <httplib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <fmt/core.h>

#include "bench_child.h"

namespace {

using looptrace::bench::Child;

[[noreturn]] void Die(const std::string& what) {
  fmt::print(stderr, "live_serving_bench: {}\n", what);
  std::exit(1);
}

struct Setup {
  std::string looptrace = LOOPTRACE_BIN;
  std::string target = BENCH_TARGET_BIN;
  std::string dir;
  std::string profile;
  uint64_t count = 2'000'000;
  double rate_hz = 1;
  int port = 0;
};

double ParseTiming(Child& target) {
  std::string why;
  const std::optional<double> ns = looptrace::bench::TargetTiming(target, &why);
  if (!ns) Die(why);
  return *ns;
}

int RunQuietly(const std::vector<std::string>& argv, int timeout_s) {
  Child child(argv);
  child.Drain(timeout_s);
  return child.Wait();
}

struct Sample {
  double ns_per_iteration = 0;
  int polls = 0;
};

Sample RunOnce(const Setup& setup, bool served) {
  Child target({setup.target, "--variant", "dispatch", "--count", std::to_string(setup.count)});
  if (!target.WaitFor(false, "ready", 30)) Die("target did not start");
  const std::string pid = std::to_string(target.pid());
  std::vector<std::string> attach = {setup.looptrace,
                                     "-q",
                                     "attach",
                                     "-p",
                                     pid,
                                     "--profile",
                                     setup.profile,
                                     "--no-thread-tracking",
                                     "-o",
                                     setup.dir + "/final-" + pid + ".txt"};
  if (served) {
    attach.push_back("--metrics");
    attach.push_back("127.0.0.1:" + std::to_string(setup.port));
  }
  Child attacher(attach);
  attacher.Drain(60);
  if (attacher.Wait() != 0) Die("looptrace attach failed: " + attacher.err());

  std::atomic<bool> stop = false;
  std::atomic<int> polls = 0;
  std::thread poller;
  if (served)
    poller = std::thread([&] {
      httplib::Client client("127.0.0.1", setup.port);
      const auto period = std::chrono::duration<double>(1.0 / setup.rate_hz);
      while (!stop) {
        auto next = std::chrono::steady_clock::now() + period;
        auto scrape = client.Get("/metrics");
        if (!scrape || scrape->status != 200) Die("the /metrics scrape failed");
        if (RunQuietly({setup.looptrace, "status", "-p", pid}, 30) != 0) Die("looptrace status failed");
        ++polls;
        while (!stop && std::chrono::steady_clock::now() < next)
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    });
  target.Write("go\n");
  Sample sample{ParseTiming(target), 0};
  stop = true;
  if (poller.joinable()) poller.join();
  sample.polls = polls;
  target.Wait();
  // The session ends with its target; detach is only a fallback (its error is expected).
  RunQuietly({setup.looptrace, "-q", "detach", "-p", pid}, 60);
  return sample;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  Setup setup;
  int rounds = 5;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) Die(a + " needs a value");
      return argv[++i];
    };
    if (a == "--rounds")
      rounds = std::stoi(value());
    else if (a == "--count")
      setup.count = std::stoull(value());
    else if (a == "--rate")
      setup.rate_hz = std::stod(value());
    else
      Die("unknown option " + a + " (usage: looptrace_live_serving_bench [--rounds N] [--count N] [--rate HZ])");
  }
  if (geteuid() != 0) Die("needs root (attaches uprobes)");
  char dir[] = "/tmp/looptrace-live-serving-XXXXXX";
  if (!mkdtemp(dir)) Die("mkdtemp");
  setup.dir = dir;
  setup.port = 20000 + getpid() % 20000;
  setup.profile = setup.dir + "/dispatch.profile";
  std::ofstream(setup.profile) << "profile bench-dispatch\n"
                               << "probe dispatch.begin uprobe " << setup.target
                               << " bench_dispatch id=arg1 name=arg2:str\n"
                               << "probe dispatch.end uretprobe " << setup.target << " bench_dispatch id=ret\n";
  std::vector<double> alone, served;
  int polls = 0;
  for (int r = 0; r < rounds; ++r) {
    alone.push_back(RunOnce(setup, false).ns_per_iteration);
    Sample s = RunOnce(setup, true);
    served.push_back(s.ns_per_iteration);
    polls += s.polls;
    fmt::print(stderr, "round {}/{}: alone {:.0f} ns, served {:.0f} ns per message ({} polls)\n", r + 1, rounds,
               alone.back(), served.back(), s.polls);
  }
  const double a = Median(alone), s = Median(served);
  fmt::print("traced dispatch, {} messages per run, {} rounds, medians:\n", setup.count, rounds);
  fmt::print("  background session, not served:             {:8.1f} ns/message\n", a);
  fmt::print("  served (/metrics + status at {:g}/s, {} polls): {:8.1f} ns/message\n", setup.rate_hz, polls, s);
  fmt::print("  ratio served / not served: {:.3f} (goal <= 1.01)\n", s / a);
  std::filesystem::remove_all(setup.dir);
  return 0;
}
