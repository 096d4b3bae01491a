// The floor of thread tracking, for bench/busy_server_overhead.py (issue 32): attaches to
// sched_switch, sched_waking and a cpu-clock event on every CPU programs that do only the
// process filter and a clock read (bpf/tracking_floor.bpf.c), i.e. what any tool must pay
// to see one process's switches, wake-ups and CPU, and holds them until SIGINT/SIGTERM.
// Run beside `looptrace record --no-thread-tracking --sample-rate 0`, it is the floor that
// looptrace's default mode (the same attach points with real work) is measured against.
//
//   looptrace_tracking_floor PID [--sample-rate HZ]    (root; prints "attached" when ready)
#include <bpf/libbpf.h>
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "loader/bpf/perf_sampler.h"
#include "loader/bpf/uprobe_multi.h"
#include "tracking_floor.skel.h"

namespace {

using looptrace::loader::AttachedLink;

[[noreturn]] void Die(const std::string& what) {
  fmt::print(stderr, "tracking_floor: {}\n", what);
  std::exit(1);
}

struct SkeletonDeleter {
  void operator()(tracking_floor* skel) const { tracking_floor__destroy(skel); }
};

AttachedLink AttachOrDie(bpf_link* link, const char* what) {
  if (!link) Die(fmt::format("cannot attach {}: {}", what, std::strerror(errno)));
  return AttachedLink(link);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 && !(argc == 4 && std::string(argv[2]) == "--sample-rate"))
    Die("usage: looptrace_tracking_floor PID [--sample-rate HZ]");
  const int pid = std::atoi(argv[1]);
  const int hz = argc == 4 ? std::atoi(argv[3]) : 997;  // looptrace's default --sample-rate
  if (pid <= 0 || hz < 0) Die("PID and HZ must be positive numbers");

  std::unique_ptr<tracking_floor, SkeletonDeleter> skel(tracking_floor__open());
  if (!skel) Die("cannot open the BPF object");
  skel->rodata->target_tgid = static_cast<uint32_t>(pid);
  if (tracking_floor__load(skel.get())) Die("cannot load the BPF object (root?)");

  // Links before the fds they hold: destroyed in reverse order of declaration.
  std::vector<looptrace::UniqueFd> perf_fds;
  std::vector<AttachedLink> links;
  links.push_back(AttachOrDie(bpf_program__attach(skel->progs.floor_sched_switch), "sched_switch"));
  links.push_back(AttachOrDie(bpf_program__attach(skel->progs.floor_sched_waking), "sched_waking"));
  if (hz > 0) {
    auto cpus = looptrace::loader::OnlineCpus();
    if (!cpus) Die(cpus.error().message);
    for (int cpu : *cpus) {
      auto fd = looptrace::loader::OpenCpuClockOfCpu(cpu, hz);
      if (!fd) Die(fd.error().message);
      links.push_back(
          AttachOrDie(bpf_program__attach_perf_event(skel->progs.floor_cpu_sample, fd->get()), "cpu-clock"));
      perf_fds.push_back(std::move(*fd));
    }
  }

  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  sigprocmask(SIG_BLOCK, &stop, nullptr);
  fmt::print("attached\n");
  std::fflush(stdout);
  int signal_number = 0;
  sigwait(&stop, &signal_number);
  return 0;
}
