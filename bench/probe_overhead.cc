// Cost per dispatch event inside the target: the same nop5 hooks called with no probe,
// with an empty BPF program attached, and with looptrace's real program + loader
// (record ring drained, events decoded and analysed by a consumer thread).
// Rounds are interleaved and medians compared, so machine noise hits all modes alike.
#include <bpf/libbpf.h>
#include <fmt/format.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "empty_probe.skel.h"
#include "hooks.h"
#include "loader/bpf/bpf_session.h"
#include "loader/decode/event_decoder.h"
#include "loader/decode/string_reader.h"
#include "loader/plan/attach_plan.h"
#include "loader/plan/probe_config.h"
#include "loader/plan/profile.h"
#include "looptrace/tracers/pipeline.h"

namespace {

using namespace looptrace;
using namespace looptrace::loader;

double NowNs(clockid_t clock = CLOCK_MONOTONIC) {
  timespec ts;
  clock_gettime(clock, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

enum class Hooks { kDispatch, kMethod, kFrame };

// One iteration = two probe hits: dispatch.begin + dispatch.end (a message), or
// method.enter + method.exit (one instrumented call, two method beats).
double RunLoop(Hooks hooks, uint64_t iterations) {
  double start = NowNs();
  if (hooks == Hooks::kDispatch) {
    for (uint64_t i = 0; i < iterations; ++i) {
      sample_looper_dispatch_begin(i, "bench.message");
      sample_looper_dispatch_end(i);
    }
  } else if (hooks == Hooks::kMethod) {
    for (uint64_t i = 0; i < iterations; ++i) {
      sample_method_enter(7);
      sample_method_exit(7);
    }
  } else {
    // A frame: frame.begin, five phase begin/end pairs, frame.end (12 hits), counted as
    // 6 "pairs" so the per-hit figure below stays comparable.
    for (uint64_t i = 0; i < iterations / 6; ++i) {
      sample_choreographer_frame_begin(i, 1000 + i);
      for (uint32_t phase = 0; phase < 5; ++phase) {
        sample_choreographer_phase_begin(phase);
        sample_choreographer_phase_end(phase);
      }
      sample_choreographer_frame_end(i);
    }
    iterations = iterations / 6 * 6;
  }
  return (NowNs() - start) / (2.0 * iterations);  // ns per probe hit
}

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "probe_overhead: %s\n", what.c_str());
  std::exit(1);
}

AttachPlan PlanFor(Hooks hooks) {
  auto profile = LoadProfile(LOOPTRACE_SAMPLE_PROFILE_DIR "/sample.profile");
  if (!profile) Die(profile.error().message);
  std::erase_if(profile->probes, [&](const ProbeSpec& p) {
    if (hooks == Hooks::kMethod) return p.role != Role::kMethodEnter && p.role != Role::kMethodExit;
    if (hooks == Hooks::kFrame)
      return p.role != Role::kFrameBegin && p.role != Role::kFrameEnd && p.role != Role::kPhaseBegin &&
             p.role != Role::kPhaseEnd;
    return p.role != Role::kDispatchBegin && p.role != Role::kDispatchEnd;
  });
  TargetBinaries self;
  self.pid = getpid();
  self.exe_path = "/proc/self/exe";
  auto plan = ResolveProfile(*profile, self);
  if (!plan) Die(plan.error().message);
  return *plan;
}

// A baseline program on the same points: empty, or with looptrace's process filter and
// clock read only (`filter_and_clock`).
struct EmptyProbe {
  EmptyProbe(const AttachPlan& plan, bool filter_and_clock) {
    skel = empty_probe__open();
    if (!skel) Die("cannot open the empty BPF program");
    skel->rodata->target_tgid = static_cast<uint32_t>(getpid());
    bpf_program* program = filter_and_clock ? skel->progs.lt_clock_uprobe : skel->progs.lt_empty_uprobe;
    SetUprobeMultiAttachType(program);
    if (empty_probe__load(skel)) Die("cannot load the empty BPF program (root?)");
    std::vector<uint64_t> offsets;
    for (const auto& p : plan.probes) offsets.push_back(p.file_offset);
    link_fd =
        CreateUprobeMultiLink(bpf_program__fd(program), plan.probes.front().binary_path, offsets, {}, false, getpid());
    if (link_fd < 0) Die("cannot attach the empty BPF program");
  }
  ~EmptyProbe() {
    close(link_fd);
    empty_probe__destroy(skel);
  }
  empty_probe* skel;
  int link_fd;
};

// The real thing: looptrace's BPF program, ring buffer, decoder and analyzer.
struct LooptraceProbe {
  explicit LooptraceProbe(const AttachPlan& plan)
      : plan_(plan), decoder_(&plan_, &strings_, &stats_, static_cast<uint32_t>(getpid())) {
    pipeline_ = std::make_unique<Pipeline>(analysis_);
    BpfSessionOptions options;
    options.target_tgid = getpid();
    options.thread_tracking = false;
    for (const auto& p : plan_.probes) options.probe_configs.push_back(MakeProbeConfig(p));
    auto session = BpfSession::Open(
        options, [this](std::span<const uint8_t> raw) { decoder_.DecodeSide(raw); },
        [this](const lt_record& record) {
          ++records_;
          decoder_.Decode(record, [this](const Event& event) { pipeline_->OnEvent(event); });
        });
    if (!session) Die(session.error().message);
    session_ = std::move(*session);
    std::vector<const ResolvedProbe*> probes;
    for (const auto& p : plan_.probes) probes.push_back(&p);
    if (auto ok = session_->Attach(probes, getpid()); !ok) Die(ok.error().message);
    consumer_ = std::thread([this] { Consume(); });
  }
  ~LooptraceProbe() {
    stop_ = true;
    consumer_.join();
  }
  void Consume() {
    int epoll = epoll_create1(0);
    epoll_event ev{};
    ev.events = EPOLLIN;
    epoll_ctl(epoll, EPOLL_CTL_ADD, session_->ring_epoll_fd(), &ev);
    double cpu_start = NowNs(CLOCK_THREAD_CPUTIME_ID);
    while (!stop_) {
      epoll_wait(epoll, &ev, 1, 20);  // the loader's poll interval is 50 ms; drain faster here
      (void)session_->Consume();
    }
    (void)session_->Consume();
    cpu_ns_ = NowNs(CLOCK_THREAD_CPUTIME_ID) - cpu_start;
    close(epoll);
  }

  AttachPlan plan_;
  ProcessStringReader process_strings_;
  StringTable strings_{&process_strings_};
  Stats stats_;
  EventDecoder decoder_;
  AnalysisOptions analysis_;
  std::unique_ptr<Pipeline> pipeline_;
  std::unique_ptr<BpfSession> session_;
  std::thread consumer_;
  std::atomic<bool> stop_{false};
  uint64_t records_ = 0;
  double cpu_ns_ = 0;
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Measurement {
  double none, empty, clock, traced;
  double loader_cpu_ns = 0;
  uint64_t records = 0, lost = 0;
};

Measurement Measure(Hooks hooks, uint64_t iterations, int rounds) {
  AttachPlan plan = PlanFor(hooks);
  std::vector<double> none, empty, clock, traced;
  Measurement m;
  for (int r = 0; r < rounds; ++r) {
    none.push_back(RunLoop(hooks, iterations));
    {
      EmptyProbe probe(plan, false);
      empty.push_back(RunLoop(hooks, iterations));
    }
    {
      EmptyProbe probe(plan, true);
      clock.push_back(RunLoop(hooks, iterations));
    }
    {
      LooptraceProbe probe(plan);
      traced.push_back(RunLoop(hooks, iterations));
      probe.stop_ = true;
      probe.consumer_.join();
      probe.consumer_ = std::thread([] {});
      m.loader_cpu_ns += probe.cpu_ns_;
      m.records += probe.records_;
      {
        const Stats counters = probe.session_->ReadCounters();
        m.lost += counters.Get(StatId::ringbuf_full) + counters.Get(StatId::records_full);
      }
    }
  }
  m.none = Median(none);
  m.empty = Median(empty);
  m.clock = Median(clock);
  m.traced = Median(traced);
  return m;
}

void Print(const char* what, const Measurement& m, uint64_t iterations, int rounds) {
  double ratio = m.traced / m.empty;
  fmt::print("{} ({} rounds x {} pairs, medians per probe hit)\n", what, rounds, iterations);
  fmt::print("  no probe            {:>9.1f} ns\n", m.none);
  fmt::print("  empty BPF program   {:>9.1f} ns\n", m.empty);
  fmt::print("  filter + clock only {:>9.1f} ns\n", m.clock);
  fmt::print("  looptrace           {:>9.1f} ns\n", m.traced);
  fmt::print("  ratio looptrace / empty program: {:.3f} (goal <= 1.10) {}\n", ratio, ratio <= 1.10 ? "OK" : "OVER");
  fmt::print(
      "  added cost over the empty program: {:.1f} ns per hit ({:.1f} filter + clock, {:.1f} the rest: "
      "configuration, arguments, record)\n",
      m.traced - m.empty, m.clock - m.empty, m.traced - m.clock);
  fmt::print("  floor: filter + clock / empty program {:.3f}\n", m.clock / m.empty);
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t iterations = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 200'000;
  int rounds = argc > 2 ? std::atoi(argv[2]) : 7;
  if (argc > 3 || iterations == 0 || rounds <= 0) {
    fmt::print(stderr, "usage: looptrace_probe_overhead [PAIRS=200000] [ROUNDS=7]\n");
    return 2;
  }
  if (geteuid() != 0) Die("needs root (attaches uprobes to itself)");
  libbpf_set_print(nullptr);

  Measurement dispatch = Measure(Hooks::kDispatch, iterations, rounds);
  Print("dispatch events: record ring", dispatch, iterations, rounds);
  fmt::print("loader CPU (decode + analysis): {:.1f} ms per million events ({} records, {} lost)\n",
             dispatch.loader_cpu_ns / 1e6 / (dispatch.records / 1e6), dispatch.records, dispatch.lost);
  Measurement beats = Measure(Hooks::kMethod, iterations, rounds);
  Print("method beats: beat ring", beats, iterations, rounds);
  Measurement frames = Measure(Hooks::kFrame, iterations, rounds);
  Print("frame and phase hooks: record ring", frames, iterations, rounds);
  return 0;
}
