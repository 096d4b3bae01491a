// Attach and detach at scale (issue 16 item 4): every function of a large binary as
// method probes (method.enter uprobe + method.exit uretprobe) through uprobe_multi links.
// Root only; not run in CI.
//
//   looptrace_attach_bench [--rounds R] [--chunk N] [--library PATH [--pattern GLOB] [--limit N]]
//
// Default target: looptrace_many_functions (gen_many_functions.py, 10,000 functions, half
// starting with a single-stepped mov, half with push %rbp), run as a child that waits until
// the probes are attached, calls every function once, and exits when told: every one of
// the 20,000 beats must arrive. With --library, the first --limit functions of PATH
// matching --pattern (e.g. libLLVM) are attached to this process after dlopen (nothing
// calls them: only attach and detach are timed).
//
// Timed separately: resolving the profile (with --exact-entry semantics, and with probe
// relocation), loading the BPF object, attaching (uprobe_multi links of at most --chunk
// points, the loader's default), detaching. Medians over the rounds.
#include <bpf/libbpf.h>
#include <dlfcn.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "bench_child.h"
#include "loader/bpf/bpf_session.h"
#include "loader/plan/attach_plan.h"
#include "loader/plan/probe_config.h"
#include "loader/plan/profile.h"

namespace {

using namespace looptrace;
using namespace looptrace::loader;
using looptrace::bench::Child;

[[noreturn]] void Die(const std::string& what) {
  fmt::print(stderr, "attach_bench: {}\n", what);
  std::exit(1);
}

double MsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

AttachPlan Resolve(const std::string& profile_path, const std::string& binary, bool exact, size_t limit, double* ms) {
  auto profile = LoadProfile(profile_path);
  if (!profile) Die(profile.error().message);
  TargetBinaries target;
  target.exe_path = binary;
  target.exact_entry = exact;
  auto start = std::chrono::steady_clock::now();
  auto plan = ResolveProfile(*profile, target);
  *ms = MsSince(start);
  if (!plan) Die(plan.error().message);
  // At most `limit` functions per probe line.
  std::vector<ResolvedProbe> kept;
  std::map<int, size_t> per_line;
  for (auto& p : plan->probes)
    if (per_line[p.spec.line]++ < limit) kept.push_back(std::move(p));
  plan->probes = std::move(kept);
  return *plan;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 3;
  size_t chunk = kMaxPointsPerLink;
  std::string library, pattern = "*";
  size_t limit = 10000;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--rounds" && i + 1 < argc)
      rounds = std::atoi(argv[++i]);
    else if (a == "--chunk" && i + 1 < argc)
      chunk = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--library" && i + 1 < argc)
      library = argv[++i];
    else if (a == "--pattern" && i + 1 < argc)
      pattern = argv[++i];
    else if (a == "--limit" && i + 1 < argc)
      limit = std::strtoull(argv[++i], nullptr, 10);
    else
      Die("usage: looptrace_attach_bench [--rounds R] [--chunk N] [--library PATH [--pattern GLOB] [--limit N]]");
  }
  if (geteuid() != 0) Die("needs root (attaches uprobes)");
  libbpf_set_print(nullptr);

  const std::string binary = library.empty() ? std::string(MANY_FUNCTIONS_BIN) : library;
  if (library.empty()) pattern = "gen_fn_*";
  const std::string profile_path = fmt::format("/tmp/looptrace-attach-bench-{}.profile", getpid());
  std::ofstream(profile_path) << fmt::format(
      "profile attach-scale\nprobe method.enter uprobe {0} {1}\nprobe method.exit uretprobe {0} {1}\n", binary,
      pattern);
  if (!library.empty() && !dlopen(library.c_str(), RTLD_LAZY | RTLD_LOCAL)) Die(dlerror());

  double resolve_exact_ms = 0, resolve_relocated_ms = 0;
  AttachPlan relocated = Resolve(profile_path, binary, false, limit, &resolve_relocated_ms);
  size_t moved = 0;
  for (const auto& p : relocated.probes) moved += p.placement != Placement::kEntry;
  std::vector<double> load_ms, attach_ms, detach_ms;
  size_t points = 0, functions = 0;
  uint64_t beats_seen = 0, beats_expected = 0;
  bool all_beats = true;
  for (int r = 0; r < rounds; ++r) {
    AttachPlan plan = Resolve(profile_path, binary, true, limit, &resolve_exact_ms);
    points = plan.probes.size();
    functions = points / 2;
    std::unique_ptr<Child> target;
    pid_t pid = getpid();
    if (library.empty()) {
      target = std::make_unique<Child>(std::vector<std::string>{binary});
      if (!target->WaitFor(false, "ready", 30)) Die("the target did not start");
      pid = target->pid();
    }
    BpfSessionOptions options;
    options.target_tgid = static_cast<uint32_t>(pid);
    options.thread_tracking = false;
    for (const auto& p : plan.probes) options.probe_configs.push_back(MakeProbeConfig(p));
    auto start = std::chrono::steady_clock::now();
    auto session = BpfSession::Open(
        options, [](std::span<const uint8_t>) {}, [](const lt_record&) {});
    if (!session) Die(session.error().message);
    load_ms.push_back(MsSince(start));
    if (!(*session)->uses_uprobe_multi()) Die("this kernel has no uprobe_multi links (needs >= 6.6)");

    // The loader's grouping: ends first, then begins, one group per kind, in links of at
    // most `chunk` points.
    std::vector<const ResolvedProbe*> exits, enters;
    for (const auto& p : plan.probes) (p.spec.role == Role::kMethodExit ? exits : enters).push_back(&p);
    start = std::chrono::steady_clock::now();
    for (auto* group : {&exits, &enters}) {
      for (size_t at = 0; at < group->size(); at += chunk) {
        std::vector<const ResolvedProbe*> part(group->begin() + at,
                                               group->begin() + std::min(group->size(), at + chunk));
        if (auto ok = (*session)->Attach(part, pid); !ok) Die(ok.error().message);
      }
    }
    attach_ms.push_back(MsSince(start));

    if (target) {
      target->Write("go\n");
      if (!target->WaitFor(false, "called", 60)) Die("the target did not call its functions");
      beats_seen = (*session)->beats().head();
      beats_expected = 2 * functions;
      all_beats &= beats_seen == beats_expected;
    }
    start = std::chrono::steady_clock::now();
    (*session)->Detach();
    detach_ms.push_back(MsSince(start));
    if (target) {
      target->Write("exit\n");
      target->Wait();
    }
    fmt::print(stderr, "round {}/{}: attach {:.0f} ms, detach {:.0f} ms\n", r + 1, rounds, attach_ms.back(),
               detach_ms.back());
  }
  std::remove(profile_path.c_str());

  fmt::print(
      "{} functions of {} as method probes ({} uprobes + {} uretprobes), uprobe_multi links of at most {} "
      "points, {} rounds, medians\n",
      functions, binary, functions, functions, chunk, rounds);
  fmt::print("  resolve (exact entries)       {:>8.1f} ms\n", resolve_exact_ms);
  fmt::print("  resolve (with relocation)     {:>8.1f} ms  ({} of {} probes moved off single-stepped entries)\n",
             resolve_relocated_ms, moved, relocated.probes.size());
  fmt::print("  load BPF object               {:>8.1f} ms\n", Median(load_ms));
  fmt::print("  attach {:>6} points          {:>8.1f} ms  (goal < 500) {}\n", points, Median(attach_ms),
             Median(attach_ms) < 500 ? "OK" : "OVER");
  fmt::print("  detach                        {:>8.1f} ms  (goal < 300) {}\n", Median(detach_ms),
             Median(detach_ms) < 300 ? "OK" : "OVER");
  if (library.empty())
    fmt::print("  beats after one call of each function: {} of {} {}\n", beats_seen, beats_expected,
               all_beats ? "(all, every round)" : "(MISSING)");
  return all_beats ? 0 : 1;
}
