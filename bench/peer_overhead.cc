// Cost per hit of the same tiny hooks traced by looptrace and by its peers, measured side by
// side in one run (issue 16 items 1 and 3). Root only; not run in CI.
//
//   looptrace_peer_bench [--count N] [--rounds R] [--no-bpftrace]
//
// The target (bench_target.c, -O2 -fomit-frame-pointer -finstrument-functions) times N
// calls of one hook itself, after the tracer has attached; every tracer runs as its own
// process against the target's pid, as a user would run it. Rounds interleave the modes
// and medians are compared, so machine noise hits them alike.
//
// 1. bench_dispatch(id, name), an emulated first instruction (push %rbp), uprobe +
//    uretprobe, one message per call: (a) no tracer, (b) an empty BPF program on both,
//    (b'') a program doing only the process filter and the clock read (the floor of any
//    tracer that timestamps each hit), (c) looptrace record, (d) bpftrace printing one line
//    per message (read as it comes), (e) bpftrace keeping an in-kernel histogram.
// 2. Hooks of optimized code whose first instruction is single-stepped, looptrace with
//    --exact-entry against the default (relocated to call sites / after calls,
//    probe_placement.h), against the emulated reference of the same shape:
//    bench_dispatch_mov (a mov first) vs bench_dispatch, and the -finstrument-functions
//    hooks (a lone ret) vs bench_enter_fp/bench_exit_fp (push %rbp first).
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "bench_child.h"
#include "empty_probe.skel.h"
#include "loader/bpf/bpf_session.h"
#include "looptrace/symbols/elf_file.h"

namespace {

[[noreturn]] void Die(const std::string& what) {
  fmt::print(stderr, "peer_bench: {}\n", what);
  std::exit(1);
}

using looptrace::bench::Child;

struct Paths {
  std::string looptrace = LOOPTRACE_BIN;
  std::string target = BENCH_TARGET_BIN;
  std::string dir;
};

// What a measurement saw besides its time: how many messages the tracer reported.
struct Sample {
  double ns_per_iteration = 0;
  std::optional<uint64_t> reported;
};

double ParseTiming(Child& target) {
  std::string why;
  const std::optional<double> ns = looptrace::bench::TargetTiming(target, &why);
  if (!ns) Die(why);
  return *ns;
}

std::vector<std::string> TargetArgv(const Paths& paths, const std::string& variant, uint64_t count) {
  return {paths.target, "--variant", variant, "--count", std::to_string(count)};
}

Sample RunNone(const Paths& paths, const std::string& variant, uint64_t count) {
  Child target(TargetArgv(paths, variant, count));
  if (!target.WaitFor(false, "ready", 30)) Die("target did not start");
  target.Write("go\n");
  Sample s{ParseTiming(target), std::nullopt};
  target.Wait();
  return s;
}

// Which baseline program RunEmpty attaches (bpf/empty_probe.bpf.c).
enum class Baseline {
  kEmpty,        // returns at once
  kFilterClock,  // the process filter and the clock read, what every timestamped hit needs
};

// An empty program on the hook's entry (uprobe) and return (uretprobe), or entries only.
Sample RunEmpty(const Paths& paths, const std::string& variant, uint64_t count, const std::vector<std::string>& entries,
                const std::vector<std::string>& returns, bool multi = true, Baseline baseline = Baseline::kEmpty) {
  auto elf = looptrace::symbols::ElfFile::Open(paths.target);
  if (!elf) Die(elf.error().message);
  auto offsets_of = [&](const std::vector<std::string>& names) {
    std::vector<uint64_t> offsets;
    for (const auto& name : names) {
      auto found = elf->FindFunctions(name);
      if (found.empty()) Die("no symbol " + name);
      offsets.push_back(found.front()->file_offset);
    }
    return offsets;
  };
  Child target(TargetArgv(paths, variant, count));
  if (!target.WaitFor(false, "ready", 30)) Die("target did not start");
  empty_probe* skel = empty_probe__open();
  if (!skel) Die("cannot open the empty program");
  bpf_program* program = baseline == Baseline::kEmpty ? skel->progs.lt_empty_uprobe : skel->progs.lt_clock_uprobe;
  bpf_program__set_autoload(baseline == Baseline::kEmpty ? skel->progs.lt_clock_uprobe : skel->progs.lt_empty_uprobe,
                            false);
  skel->rodata->target_tgid = static_cast<uint32_t>(target.pid());
  if (multi) looptrace::loader::SetUprobeMultiAttachType(program);
  if (empty_probe__load(skel)) Die("cannot load the empty program");
  std::vector<int> links;
  std::vector<bpf_link*> perf_links;  // one perf-event uprobe per point, as bpftrace attaches
  for (bool ret : {false, true}) {
    auto offsets = offsets_of(ret ? returns : entries);
    if (offsets.empty()) continue;
    if (!multi) {
      for (uint64_t offset : offsets) {
        LIBBPF_OPTS(bpf_uprobe_opts, opts, .retprobe = ret);
        bpf_link* link = bpf_program__attach_uprobe_opts(program, target.pid(), paths.target.c_str(), offset, &opts);
        if (!link) Die("cannot attach the empty program");
        perf_links.push_back(link);
      }
      continue;
    }
    int fd = looptrace::loader::CreateUprobeMultiLink(bpf_program__fd(program), paths.target, offsets, {}, ret,
                                                      target.pid());
    if (fd < 0) Die("cannot attach the empty program");
    links.push_back(fd);
  }
  target.Write("go\n");
  Sample s{ParseTiming(target), std::nullopt};
  target.Wait();
  for (int fd : links) close(fd);
  for (bpf_link* link : perf_links) bpf_link__destroy(link);
  empty_probe__destroy(skel);
  return s;
}

Sample RunLooptrace(const Paths& paths, const std::string& variant, uint64_t count, const std::string& profile,
                    bool exact_entry) {
  Child target(TargetArgv(paths, variant, count));
  if (!target.WaitFor(false, "ready", 30)) Die("target did not start");
  const std::string report = paths.dir + "/report.txt";
  std::vector<std::string> argv = {paths.looptrace, "record", "-p",   std::to_string(target.pid()), "--profile",
                                   profile,         "-o",     report, "--no-thread-tracking"};
  if (exact_entry) argv.push_back("--exact-entry");
  Child tracer(argv);
  if (!tracer.WaitFor(true, "tracing pid", 60)) Die("looptrace did not attach: " + tracer.err());
  target.Write("go\n");
  Sample s{ParseTiming(target), std::nullopt};
  target.Wait();  // looptrace sees the exit, drains and writes the report
  tracer.Drain(120);
  if (tracer.Wait() != 0) Die("looptrace failed: " + tracer.err());
  std::ifstream in(report);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::smatch m;
  static const std::regex re("count ([0-9]+)");
  if (std::regex_search(text, m, re)) s.reported = std::stoull(m[1]);
  return s;
}

// bpftrace as a user runs it: its output read as fast as it comes (a thread drains it, as a
// terminal or a file would take it), with a perf buffer large enough to deliver every message
// (16 MiB per CPU instead of 256 KiB: with the default and a reader that lags, it drops most
// of them and pays for none).
Sample RunBpftrace(const Paths& paths, const std::string& variant, uint64_t count, const std::string& function,
                   bool histogram) {
  Child target(TargetArgv(paths, variant, count));
  if (!target.WaitFor(false, "ready", 30)) Die("target did not start");
  const std::string probe = paths.target + ":" + function;
  std::string script =
      "BEGIN { printf(\"ready\\n\"); } uprobe:" + probe + " { @s[tid] = nsecs; } uretprobe:" + probe + " /@s[tid]/ { ";
  script +=
      histogram ? "@ns = hist(nsecs - @s[tid]); @n = count(); " : "printf(\"%llu %llu\\n\", retval, nsecs - @s[tid]); ";
  script += "delete(@s[tid]); }";
  Child tracer({"env", "BPFTRACE_PERF_RB_PAGES=4096", "bpftrace", "-p", std::to_string(target.pid()), "-e", script});
  tracer.KeepOutput(histogram);
  if (!tracer.WaitFor(false, "ready", 120)) Die("bpftrace did not attach: " + tracer.err());
  const size_t before = tracer.out_lines();
  std::thread reader([&tracer] { tracer.Drain(600); });  // until bpftrace exits
  target.Write("go\n");
  Sample s{ParseTiming(target), std::nullopt};
  target.Wait();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // let it print what is in flight
  kill(tracer.pid(), SIGINT);
  reader.join();
  tracer.Wait();
  if (histogram) {
    std::smatch m;
    static const std::regex re("@n: ([0-9]+)");
    if (std::regex_search(tracer.out(), m, re)) s.reported = std::stoull(m[1]);
  } else {
    // One line per message, plus the blank lines bpftrace prints at exit.
    s.reported = tracer.out_lines() - before;
  }
  return s;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

struct Mode {
  Mode(std::string n, std::function<Sample()> r) : name(std::move(n)), run(std::move(r)) {}
  std::string name;
  std::function<Sample()> run;
  int hits = 2;  // probe hits per iteration
  std::vector<double> samples;
  std::vector<uint64_t> reported;
};

void RunRounds(std::vector<Mode>& modes, int rounds) {
  for (int r = 0; r < rounds; ++r) {
    for (Mode& m : modes) {
      Sample s = m.run();
      m.samples.push_back(s.ns_per_iteration);
      if (s.reported) m.reported.push_back(*s.reported);
    }
    fmt::print(stderr, "round {}/{} done\n", r + 1, rounds);
  }
}

void PrintModes(const std::vector<Mode>& modes, uint64_t count, const std::string& unit) {
  for (const Mode& m : modes) {
    const double median = Median(m.samples);
    std::string seen;
    if (!m.reported.empty()) {
      uint64_t low = *std::min_element(m.reported.begin(), m.reported.end());
      seen = low >= count ? fmt::format("  (all {} {}s seen)", count, unit)
                          : fmt::format("  (as few as {} of {} {}s seen)", low, count, unit);
    }
    fmt::print("  {:<44} {:>9.1f} ns per {}  {:>8.1f} ns per hit{}\n", m.name, median, unit, median / m.hits, seen);
  }
}

double MedianOf(const std::vector<Mode>& modes, const std::string& name) {
  for (const Mode& m : modes)
    if (m.name == name) return Median(m.samples) / m.hits;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t count = 100000;
  int rounds = 5;
  bool bpftrace = true;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--count" && i + 1 < argc)
      count = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--rounds" && i + 1 < argc)
      rounds = std::atoi(argv[++i]);
    else if (a == "--no-bpftrace")
      bpftrace = false;
    else
      Die("usage: looptrace_peer_bench [--count N] [--rounds R] [--no-bpftrace]");
  }
  if (geteuid() != 0) Die("needs root (attaches uprobes)");
  if (bpftrace && system("bpftrace --version >/dev/null 2>&1") != 0)
    Die("bpftrace is not installed (scripts/setup.sh installs it), or pass --no-bpftrace");
  libbpf_set_print(nullptr);
  Paths paths;
  char dir[] = "/tmp/looptrace-peer-XXXXXX";
  if (!mkdtemp(dir)) Die("mkdtemp");
  paths.dir = dir;
  auto write_profile = [&](const std::string& name, const std::string& body) {
    std::string path = paths.dir + "/" + name + ".profile";
    std::ofstream(path) << "profile " << name << "\n" << body;
    return path;
  };
  const std::string& bin = paths.target;
  auto dispatch_profile = [&](const std::string& fn) {
    return write_profile(fn, fmt::format("probe dispatch.begin uprobe {0} {1} id=arg1 name=arg2:str\n"
                                         "probe dispatch.end uretprobe {0} {1} id=ret\n",
                                         bin, fn));
  };
  auto method_profile = [&](const std::string& name, const std::string& enter, const std::string& exit) {
    return write_profile(name, fmt::format("probe method.enter uprobe {0} {1} addr=arg1\n"
                                           "probe method.exit uprobe {0} {2} addr=arg1\n",
                                           bin, enter, exit));
  };
  const std::string dispatch = dispatch_profile("bench_dispatch");
  const std::string dispatch_mov = dispatch_profile("bench_dispatch_mov");
  const std::string cyg = method_profile("cyg", "__cyg_profile_func_enter", "__cyg_profile_func_exit");
  const std::string fp = method_profile("fp", "bench_enter_fp", "bench_exit_fp");

  // 1. Peers on the emulated dispatch hook.
  std::vector<Mode> peers = {
      {"(a) no tracer", [&] { return RunNone(paths, "dispatch", count); }},
      {"(b) empty BPF program (uprobe + uretprobe)",
       [&] { return RunEmpty(paths, "dispatch", count, {"bench_dispatch"}, {"bench_dispatch"}); }},
      {"(b') empty BPF program, perf-event links",
       [&] { return RunEmpty(paths, "dispatch", count, {"bench_dispatch"}, {"bench_dispatch"}, false); }},
      {"(b'') process filter + clock read only",
       [&] {
         return RunEmpty(paths, "dispatch", count, {"bench_dispatch"}, {"bench_dispatch"}, true,
                         Baseline::kFilterClock);
       }},
      {"(c) looptrace", [&] { return RunLooptrace(paths, "dispatch", count, dispatch, false); }},
  };
  if (bpftrace) {
    peers.push_back({"(d) bpftrace, one printf per message",
                     [&] { return RunBpftrace(paths, "dispatch", count, "bench_dispatch", false); }});
    peers.push_back({"(e) bpftrace, in-kernel histogram",
                     [&] { return RunBpftrace(paths, "dispatch", count, "bench_dispatch", true); }});
  }
  // 2. Single-stepped hooks of optimized code: exact entries vs relocated.
  std::vector<Mode> hooks = {
      {"dispatch, emulated entry: looptrace", [&] { return RunLooptrace(paths, "dispatch", count, dispatch, false); }},
      {"dispatch-mov: empty BPF program (exact)",
       [&] { return RunEmpty(paths, "dispatch-mov", count, {"bench_dispatch_mov"}, {"bench_dispatch_mov"}); }},
      {"dispatch-mov: looptrace --exact-entry",
       [&] { return RunLooptrace(paths, "dispatch-mov", count, dispatch_mov, true); }},
      {"dispatch-mov: looptrace (relocated)",
       [&] { return RunLooptrace(paths, "dispatch-mov", count, dispatch_mov, false); }},
      {"methods-fp, emulated hooks: looptrace", [&] { return RunLooptrace(paths, "methods-fp", count, fp, false); }},
      {"methods (lone ret): looptrace --exact-entry", [&] { return RunLooptrace(paths, "methods", count, cyg, true); }},
      {"methods (lone ret): looptrace (relocated)", [&] { return RunLooptrace(paths, "methods", count, cyg, false); }},
  };
  if (bpftrace)
    hooks.push_back({"dispatch-mov: bpftrace, in-kernel histogram",
                     [&] { return RunBpftrace(paths, "dispatch-mov", count, "bench_dispatch_mov", true); }});

  RunRounds(peers, rounds);
  RunRounds(hooks, rounds);

  fmt::print(
      "1. the same tiny dispatch function (emulated push first), uprobe + uretprobe; {} rounds x {} "
      "messages, medians\n",
      rounds, count);
  PrintModes(peers, count, "message");
  const double none = MedianOf(peers, "(a) no tracer") * 2;
  const double ours = MedianOf(peers, "(c) looptrace") * 2 - none;
  const double empty = MedianOf(peers, "(b) empty BPF program (uprobe + uretprobe)") * 2 - none;
  // The floor: no tracer that timestamps every hit costs less than (b''), so a goal below
  // its ratio cannot be met on this machine by any program of that kind.
  const double floor = MedianOf(peers, "(b'') process filter + clock read only") * 2 - none;
  fmt::print("  looptrace / empty program (added cost): {:.2f}   floor (b'') / empty program: {:.2f}\n", ours / empty,
             floor / empty);
  if (bpftrace) {
    const double printf_cost = MedianOf(peers, "(d) bpftrace, one printf per message") * 2 - none;
    const double hist_cost = MedianOf(peers, "(e) bpftrace, in-kernel histogram") * 2 - none;
    fmt::print(
        "  looptrace / bpftrace printf: {:.2f} (floor {:.2f})   looptrace / bpftrace histogram: {:.2f} (floor "
        "{:.2f})\n",
        ours / printf_cost, floor / printf_cost, ours / hist_cost, floor / hist_cost);
  }
  fmt::print(
      "\n2. hooks whose first instruction is single-stepped (-O2, no frame pointer) vs emulated "
      "references; {} rounds x {} calls, medians\n",
      rounds, count);
  PrintModes(hooks, count, "call");
  const double ref_dispatch = MedianOf(hooks, "dispatch, emulated entry: looptrace");
  const double exact_dispatch = MedianOf(hooks, "dispatch-mov: looptrace --exact-entry");
  const double moved_dispatch = MedianOf(hooks, "dispatch-mov: looptrace (relocated)");
  const double ref_methods = MedianOf(hooks, "methods-fp, emulated hooks: looptrace");
  const double exact_methods = MedianOf(hooks, "methods (lone ret): looptrace --exact-entry");
  const double moved_methods = MedianOf(hooks, "methods (lone ret): looptrace (relocated)");
  auto verdict = [](double r) { return r <= 2.0 ? "OK" : "OVER"; };
  fmt::print("  dispatch: relocated / emulated hook {:.2f} (goal <= 2) {}; exact / relocated {:.2f}\n",
             moved_dispatch / ref_dispatch, verdict(moved_dispatch / ref_dispatch), exact_dispatch / moved_dispatch);
  fmt::print("  methods:  relocated / emulated hook {:.2f} (goal <= 2) {}; exact / relocated {:.2f}\n",
             moved_methods / ref_methods, verdict(moved_methods / ref_methods), exact_methods / moved_methods);
  std::filesystem::remove_all(paths.dir);
  return 0;
}
