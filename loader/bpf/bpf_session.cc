#include "loader/bpf/bpf_session.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fmt/format.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>

#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <utility>

#include "loader/bpf/perf_sampler.h"
#include "loader/plan/probe_config.h"
#include "looptrace/events.h"
#include "looptrace/util/log.h"
#include "lt_probes.skel.h"

namespace looptrace::loader {

void BpfSession::SkeletonDeleter::operator()(lt_probes* skel) const { lt_probes__destroy(skel); }
void BpfSession::RingDeleter::operator()(ring_buffer* ring) const { ring_buffer__free(ring); }

namespace {

std::string AttachPermissionHint() {
  return PermissionHint(
      "root lacks CAP_PERFMON or CAP_SYS_ADMIN here (a container?), or a security policy "
      "forbids uprobes on this binary");
}

// Programs and maps only thread tracking uses: not loaded, maps shrunk, when it is off.
void DisableThreadTracking(lt_probes* skel) {
  for (bpf_program* prog : {skel->progs.lt_sched_switch, skel->progs.lt_sched_waking, skel->progs.lt_signal_generate,
                            skel->progs.lt_process_exec, skel->progs.lt_cpu_sample})
    bpf_program__set_autoload(prog, false);
  for (bpf_map* map : {skel->maps.stack_traces, skel->maps.thread_states, skel->maps.stack_copies})
    bpf_map__set_max_entries(map, 1);
  bpf_map__set_max_entries(skel->maps.samples, 4096);
}

}  // namespace

// The function MeasureUprobeHitNs probes: a frame-pointer prologue, as most probed function
// entries have (an emulated `push %rbp`; perf-facts: single-stepped entries cost ~15x more).
extern "C" void looptrace_uprobe_calibration();  // NOLINT(readability-identifier-naming): a C symbol
asm(".text\n"
    ".globl looptrace_uprobe_calibration\n"
    ".type looptrace_uprobe_calibration,@function\n"
    "looptrace_uprobe_calibration:\n"
    "  push %rbp\n"
    "  mov %rsp, %rbp\n"
    "  pop %rbp\n"
    "  ret\n"
    ".size looptrace_uprobe_calibration, .-looptrace_uprobe_calibration\n");

namespace {

// The file and offset a code address of this process is mapped from.
std::optional<std::pair<std::string, uint64_t>> FileOffsetOf(uint64_t address) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    unsigned long low = 0, high = 0, offset = 0;
    char path[4096] = {};
    if (std::sscanf(line.c_str(), "%lx-%lx %*s %lx %*s %*s %4095s", &low, &high, &offset, path) == 4 &&
        address >= low && address < high)
      return std::pair<std::string, uint64_t>(path, address - low + offset);
  }
  return std::nullopt;
}

uint64_t ClockNs(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + ts.tv_nsec;
}
uint64_t MonotonicNs() { return ClockNs(CLOCK_MONOTONIC); }
uint64_t ThreadCpuNs() { return ClockNs(CLOCK_THREAD_CPUTIME_ID); }

// ns per call of the calibration function, the fastest of a few batches (the least disturbed).
double NsPerCall() {
  constexpr int kCalls = 2000;
  void (*volatile call)() = looptrace_uprobe_calibration;
  double best = 1e18;
  for (int batch = 0; batch < 5; ++batch) {
    const uint64_t start = MonotonicNs();
    for (int i = 0; i < kCalls; ++i) call();
    best = std::min(best, static_cast<double>(MonotonicNs() - start) / kCalls);
  }
  return best;
}

}  // namespace

Result<uint64_t> BpfSession::MeasureUprobeHitNs() {
  auto where = FileOffsetOf(reinterpret_cast<uint64_t>(&looptrace_uprobe_calibration));
  if (!where) return MakeError("cannot find looptrace's own code in /proc/self/maps");
  const double plain = NsPerCall();
  bpf_link* link =
      bpf_program__attach_uprobe(skel_->progs.lt_trap_calibration, false, 0, where->first.c_str(), where->second);
  if (!link) return SystemError("cannot probe looptrace's own calibration function", errno);
  const double probed = NsPerCall();
  bpf_link__destroy(link);
  return static_cast<uint64_t>(std::max(probed - plain, 0.0));
}

Result<std::unique_ptr<BpfSession>> BpfSession::Open(const BpfSessionOptions& options,
                                                     SideRecordCallback on_side_record, RecordCallback on_record) {
  std::unique_ptr<BpfSession> session(new BpfSession());
  session->on_side_record_ = std::move(on_side_record);
  session->on_record_ = std::move(on_record);
  session->thread_tracking_enabled_ = options.thread_tracking;

  // Load with uprobe_multi first; a kernel without it rejects that program, and the
  // object is loaded again without it.
  const uint64_t open_began_ns = MonotonicNs();
  const uint64_t open_began_cpu_ns = ThreadCpuNs();
  int load_error = 0;
  for (bool with_multi : {true, false}) {
    LIBBPF_OPTS(bpf_object_open_opts, open_opts);
    if (!options.btf_path.empty()) open_opts.btf_custom_path = options.btf_path.c_str();
    std::unique_ptr<lt_probes, SkeletonDeleter> skel(lt_probes__open_opts(&open_opts));
    if (!skel) return SystemError("cannot open the BPF object", errno, ExitCode::kUnsupported);
    skel->rodata->target_tgid = options.target_tgid;
    skel->rodata->thread_filter = options.thread_filter;
    if (options.thread_filter == LT_THREADS_LOOP && !options.loop_name.empty()) {
      // A whole name is compared with its NUL; the kernel keeps 15 bytes of a name.
      const size_t n = std::min<size_t>(options.loop_name.size(), LT_TASK_COMM_LEN - 1);
      std::memcpy(const_cast<char*>(skel->rodata->loop_name), options.loop_name.data(), n);
      skel->rodata->loop_name_len = static_cast<uint32_t>(options.loop_name_exact ? n + 1 : n);
    }
    if (int err = bpf_map__set_max_entries(skel->maps.events, options.ringbuf_bytes))
      return SystemError("cannot size the ring buffer", err);
    if (int err = bpf_map__set_max_entries(skel->maps.records, options.record_capacity))
      return SystemError("cannot size the record ring", err);
    skel->rodata->record_mask = options.record_capacity - 1;
    if (int err = bpf_map__set_max_entries(skel->maps.probe_configs, std::max<size_t>(options.probe_configs.size(), 1)))
      return SystemError("cannot size the probe table", err);
    if (int err = bpf_map__set_max_entries(skel->maps.beats, options.beat_capacity))
      return SystemError("cannot size the method-beat buffer", err);
    skel->rodata->beat_mask = options.beat_capacity - 1;
    skel->rodata->dwarf_stack_bytes = options.dwarf_unwind ? LT_MAX_STACK_COPY : 0;
    skel->rodata->eh_unwind = options.eh_unwind;
    skel->rodata->eh_view_cut = options.eh_view_cut;
    if (int err = bpf_map__set_max_entries(skel->maps.unwind_rows,
                                           static_cast<uint32_t>(std::max<size_t>(options.unwind_row_capacity, 1))))
      return SystemError("cannot size the unwind rows", -err);
    skel->rodata->sample_records = options.sample_records && options.thread_tracking;
    skel->rodata->samples_after_exec = options.samples_after_exec;
    skel->rodata->switch_stacks_idle = options.switch_stacks_idle;
    skel->rodata->messages_poll_bounded = options.messages_poll_bounded;
    skel->rodata->waits_by_syscall = options.waits_by_syscall;
    skel->rodata->early_wait_stacks_deferred = options.waits_by_syscall && options.early_wait_stacks_deferred;
    std::memcpy(const_cast<lt_py_layout*>(&skel->rodata->py_layout), &options.interpreters.python_layout,
                sizeof(lt_py_layout));
    skel->rodata->hs_enabled = options.interpreters.hotspot_enabled;
    std::memcpy(const_cast<lt_v8_layout*>(&skel->rodata->v8_layout), &options.interpreters.v8_layout,
                sizeof(lt_v8_layout));
    if (options.thread_tracking)
      if (int err = bpf_map__set_max_entries(skel->maps.samples, options.sample_ring_bytes))
        return SystemError("cannot size the sample ring", err);
    // Attached on demand (AttachThreadTracking), not by the skeleton.
    bpf_program__set_autoattach(skel->progs.lt_sched_switch, false);
    if (!options.thread_tracking) DisableThreadTracking(skel.get());
    for (bpf_program* prog : {skel->progs.lt_uprobe_multi, skel->progs.lt_beat_enter, skel->progs.lt_beat_exit}) {
      if (with_multi)
        SetUprobeMultiAttachType(prog);
      else
        bpf_program__set_autoload(prog, false);
    }
    // Only the probe programs the plan attaches: lt_uprobe is the fallback of uprobe_multi.
    if (!options.uprobe_points) bpf_program__set_autoload(skel->progs.lt_uprobe_multi, false);
    if (!options.uprobe_points || with_multi) bpf_program__set_autoload(skel->progs.lt_uprobe, false);
    if (!options.usdt_points) bpf_program__set_autoload(skel->progs.lt_usdt, false);
    if (!options.fast_beats || !options.uprobe_points)
      for (bpf_program* prog : {skel->progs.lt_beat_enter, skel->progs.lt_beat_exit})
        bpf_program__set_autoload(prog, false);
    load_error = lt_probes__load(skel.get());
    if (load_error == 0) {
      session->skel_ = std::move(skel);
      session->uprobe_multi_ = with_multi;
      break;
    }
    if (load_error == -EPERM || load_error == -EACCES) break;
    log::V1("loading with uprobe_multi failed ({}); falling back to one link per probe", strerror(-load_error));
  }
  if (!session->skel_) {
    ExitCode code = (load_error == -EPERM || load_error == -EACCES) ? ExitCode::kPermission : ExitCode::kUnsupported;
    return SystemError("cannot load the BPF programs into the kernel", load_error, code,
                       code == ExitCode::kPermission
                           ? PermissionHint("root lacks CAP_BPF or CAP_SYS_ADMIN here (a container?), or kernel "
                                            "lockdown forbids BPF")
                           : "rerun with -vv to see the verifier log");
  }
  session->load_cost_.wall_ns = MonotonicNs() - open_began_ns;
  session->load_cost_.cpu_ns = ThreadCpuNs() - open_began_cpu_ns;
  session->NoteLoadedPrograms();
  lt_probes* skel = session->skel_.get();
  for (uint32_t id = 0; id < options.probe_configs.size(); ++id)
    if (int err = bpf_map__update_elem(skel->maps.probe_configs, &id, sizeof(id), &options.probe_configs[id],
                                       sizeof(lt_probe_config), BPF_ANY))
      return SystemError("cannot write the probe table", err);
  ASSIGN_OR_RETURN(session->records_, RecordRing::Map(bpf_map__fd(skel->maps.records), options.record_capacity,
                                                      reinterpret_cast<const uint64_t*>(&skel->bss->record_head),
                                                      reinterpret_cast<uint64_t*>(&skel->bss->record_tail)));
  ASSIGN_OR_RETURN(session->beats_, BeatRing::Map(bpf_map__fd(skel->maps.beats), options.beat_capacity,
                                                  reinterpret_cast<const uint64_t*>(&skel->bss->beat_head)));
  session->ring_.reset(ring_buffer__new(
      bpf_map__fd(skel->maps.events),
      [](void* ctx, void* data, size_t size) -> int {
        auto* self = static_cast<BpfSession*>(ctx);
        self->on_side_record_(std::span<const uint8_t>(static_cast<const uint8_t*>(data), size));
        return 0;
      },
      session.get(), nullptr));
  if (!session->ring_) return SystemError("cannot create the ring buffer reader", errno);
  if (int err = ring_buffer__add(
          session->ring_.get(), bpf_map__fd(skel->maps.samples),
          [](void* ctx, void* data, size_t size) -> int {
            auto* self = static_cast<BpfSession*>(ctx);
            self->on_side_record_(std::span<const uint8_t>(static_cast<const uint8_t*>(data), size));
            return 0;
          },
          session.get()))
    return SystemError("cannot read the sample ring", err);
  return session;
}

BpfSession::~BpfSession() { Detach(); }

// Each perf-event uprobe link waits for an RCU grace period on close (~0.1 s here,
// serialized in the kernel even from parallel threads); uprobe_multi links batch this.
void BpfSession::Detach() {
  links_.clear();
  perf_fds_.clear();
}

Result<void> BpfSession::AttachOne(const ResolvedProbe& probe, int pid) {
  const uint64_t cookie = MakeCookie(probe);
  bpf_link* link = nullptr;
  std::string what;
  if (probe.spec.kind == ProbeKind::kUsdt) {
    size_t colon = probe.spec.point.find(':');
    std::string provider = probe.spec.point.substr(0, colon);
    std::string name = probe.spec.point.substr(colon + 1);
    LIBBPF_OPTS(bpf_usdt_opts, opts, .usdt_cookie = cookie);
    link = bpf_program__attach_usdt(skel_->progs.lt_usdt, pid, probe.binary_path.c_str(), provider.c_str(),
                                    name.c_str(), &opts);
    what = fmt::format("usdt {}:{}", probe.binary_path, probe.spec.point);
  } else {
    // A relocated probe has several locations (probe_placement.h): one link each.
    LIBBPF_OPTS(bpf_uprobe_opts, opts, .bpf_cookie = cookie, .retprobe = AttachAsReturnProbe(probe));
    what = fmt::format("{} {}:{}", ProbeKindName(probe.spec.kind), probe.binary_path, probe.symbol);
    const std::vector<uint64_t> offsets = AttachOffsets(probe);
    for (size_t i = 0; i < offsets.size(); ++i) {
      link = bpf_program__attach_uprobe_opts(skel_->progs.lt_uprobe, pid, probe.binary_path.c_str(), offsets[i], &opts);
      if (!link) break;
      if (i + 1 < offsets.size()) links_.emplace_back(link);
    }
  }
  if (!link) {
    int err = errno;
    if (err == ESRCH)
      return SystemError("failed to attach " + what + ": the target process is gone", err, ExitCode::kTarget);
    if (err == EPERM || err == EACCES)
      return SystemError("failed to attach " + what, err, ExitCode::kPermission, AttachPermissionHint());
    return MakeError(fmt::format("failed to attach {}: {}", what, AttachErrorText(err)));
  }
  links_.emplace_back(link);
  ++attached_points_;
  return {};
}

int BpfSession::CreateMultiLink(const std::vector<const ResolvedProbe*>& probes, int pid) {
  std::vector<uint64_t> offsets, cookies;
  for (const ResolvedProbe* p : probes) {
    for (uint64_t offset : AttachOffsets(*p)) {
      offsets.push_back(offset);
      cookies.push_back(MakeCookie(*p));
    }
  }
  bpf_program* prog = skel_->progs.lt_uprobe_multi;
  if (UsesFastBeats(*probes.front()))
    prog = probes.front()->spec.role == Role::kMethodEnter ? skel_->progs.lt_beat_enter : skel_->progs.lt_beat_exit;
  return CreateUprobeMultiLink(bpf_program__fd(prog), probes.front()->binary_path, offsets, cookies,
                               AttachAsReturnProbe(*probes.front()), pid);
}

// One link for the whole group; when the kernel refuses it, the group is split in
// halves to find the points it refuses. A refused point that a glob matched is skipped
// (and counted); a refused point named exactly is an error.
Result<void> BpfSession::AttachMulti(const std::vector<const ResolvedProbe*>& probes, int pid) {
  int fd = CreateMultiLink(probes, pid);
  if (fd >= 0) {
    links_.emplace_back(UniqueFd(fd));
    attached_points_ += probes.size();
    return {};
  }
  int err = -fd;
  const ResolvedProbe& first = *probes.front();
  if (err == ESRCH)
    return SystemError(fmt::format("failed to attach {}: pid {} is gone", first.binary_path, pid), err,
                       ExitCode::kTarget);
  if (err == EPERM || err == EACCES)
    return SystemError(fmt::format("failed to attach {}", first.binary_path), err, ExitCode::kPermission,
                       AttachPermissionHint());
  if (probes.size() > 1) {
    size_t half = probes.size() / 2;
    RETURN_IF_ERROR(AttachMulti({probes.begin(), probes.begin() + half}, pid));
    return AttachMulti({probes.begin() + half, probes.end()}, pid);
  }
  std::string what = fmt::format("{} {}:{}", ProbeKindName(first.spec.kind), first.binary_path, first.symbol);
  if (first.spec.point.find_first_of("*?[") != std::string::npos) {
    log::V1("skipping {}: {}", what, AttachErrorText(err));
    ++skipped_points_;
    return {};
  }
  return MakeError(fmt::format("failed to attach {}: {}", what, AttachErrorText(err)));
}

Result<void> BpfSession::Attach(const std::vector<const ResolvedProbe*>& probes, int pid) {
  if (probes.empty()) return {};
  bool is_uprobe = probes.front()->spec.kind != ProbeKind::kUsdt;
  if (is_uprobe && uprobe_multi_) {
    // Fast-path method entries and exits each need their own program (and link).
    std::vector<const ResolvedProbe*> enters, exits, rest;
    for (const ResolvedProbe* p : probes) {
      if (!UsesFastBeats(*p))
        rest.push_back(p);
      else if (p->spec.role == Role::kMethodEnter)
        enters.push_back(p);
      else
        exits.push_back(p);
    }
    for (auto* group : {&enters, &exits, &rest})
      if (!group->empty()) RETURN_IF_ERROR(AttachMulti(*group, pid));
    return {};
  }
  for (const ResolvedProbe* p : probes) RETURN_IF_ERROR(AttachOne(*p, pid));
  return {};
}

int BpfSession::ring_epoll_fd() const { return ring_buffer__epoll_fd(ring_.get()); }

Result<size_t> BpfSession::Consume() {
  // Side records first: a ring record's strings, and its thread's earlier stack samples,
  // were sent before it was claimed. Records claimed after the side records were read wait
  // for the next call, so no side record written before them can come after them.
  const uint64_t limit = records_.head();
  int n = ring_buffer__consume(ring_.get());
  if (n < 0) return SystemError("cannot read the ring buffer", n);
  size_t records = 0;
  records_lost_ += records_.Drain(
      [&](const lt_record& record) {
        ++records;
        on_record_(record);
      },
      limit);
  return records;
}

Result<void> BpfSession::AttachThreadTracking(int sample_hz) {
  if (!thread_tracking_enabled_) return MakeError("thread tracking was not loaded", ExitCode::kUsage);
  for (bpf_program* prog : {skel_->progs.lt_sched_switch, skel_->progs.lt_sched_waking, skel_->progs.lt_signal_generate,
                            skel_->progs.lt_process_exec}) {
    bpf_link* link = bpf_program__attach(prog);
    if (!link)
      return SystemError(fmt::format("cannot attach {}", bpf_program__section_name(prog)), errno,
                         ExitCode::kUnsupported);
    links_.emplace_back(link);
  }
  thread_tracking_ = true;
  // sched_switch bounds the loop thread's stretches on CPU from now on: records may carry
  // its exact CPU time instead of the kernel's tick-granular sum_exec_runtime.
  __atomic_store_n(&skel_->bss->loop_cpu_exact, 1, __ATOMIC_RELEASE);
  if (sample_hz <= 0) return {};
  return AttachCpuSampler(sample_hz);
}

void BpfSession::PublishInterpreterAddresses(const InterpreterBpfConfig& config) {
  // The code type last: BPF walks nothing while it is 0.
  __atomic_store_n(&skel_->bss->py_addresses.interp_head, config.python_addresses.interp_head, __ATOMIC_RELAXED);
  __atomic_store_n(&skel_->bss->py_addresses.code_type, config.python_addresses.code_type, __ATOMIC_RELEASE);
  if (config.hotspot.ready) {  // the layout first, `ready` last
    lt_hotspot_config hotspot = config.hotspot;
    hotspot.ready = 0;
    std::memcpy(&skel_->bss->hs_config, &hotspot, sizeof(hotspot));
    __atomic_store_n(&skel_->bss->hs_config.ready, 1, __ATOMIC_RELEASE);
  }
}

Result<void> BpfSession::WriteUnwindRows(uint32_t first, std::span<const lt_unwind_row> rows) {
  const size_t capacity = bpf_map__max_entries(skel_->maps.unwind_rows);
  if (rows.empty() || first > capacity || capacity - first < rows.size())
    return MakeError("no room for the unwind rows");
  std::vector<uint32_t> keys(rows.size());
  for (uint32_t i = 0; i < keys.size(); ++i) keys[i] = first + i;
  uint32_t count = static_cast<uint32_t>(rows.size());
  const int fd = bpf_map__fd(skel_->maps.unwind_rows);
  if (bpf_map_update_batch(fd, keys.data(), rows.data(), &count, nullptr) != 0) {
    for (uint32_t i = 0; i < keys.size(); ++i) {  // kernels without batch updates of arrays
      if (bpf_map_update_elem(fd, &keys[i], &rows[i], BPF_ANY) != 0)
        return SystemError("cannot write the unwind rows", errno);
    }
  }
  return {};
}

Result<void> BpfSession::PublishUnwindModules(std::span<const lt_unwind_module> modules) {
  if (modules.size() > LT_MAX_UNWIND_MODULES) modules = modules.first(LT_MAX_UNWIND_MODULES);
  // BPF's row cache keeps entries of one generation: bumped before the rewrite (entries of the
  // old modules go) and after it (entries filled from a half-written list go too).
  __atomic_add_fetch(&skel_->bss->eh_generation, 1u, __ATOMIC_RELEASE);
  __atomic_store_n(&skel_->bss->eh_modules, 0u, __ATOMIC_RELEASE);
  for (uint32_t i = 0; i < modules.size(); ++i) {
    if (bpf_map__update_elem(skel_->maps.unwind_modules, &i, sizeof(i), &modules[i], sizeof(modules[i]), BPF_ANY) != 0)
      return SystemError("cannot publish the target's unwind modules", errno);
  }
  __atomic_store_n(&skel_->bss->eh_modules, static_cast<uint32_t>(modules.size()), __ATOMIC_RELEASE);
  __atomic_add_fetch(&skel_->bss->eh_generation, 1u, __ATOMIC_RELEASE);
  return {};
}

void BpfSession::BatchSampleWakeups(bool batched) {
  __atomic_store_n(&skel_->bss->samples_batched, batched ? 1u : 0u, __ATOMIC_RELAXED);
}

void BpfSession::SetPreemptStacksAfter(uint64_t ns) {
  __atomic_store_n(&skel_->bss->preempt_stacks_after_ns, ns, __ATOMIC_RELAXED);
}

void BpfSession::DeferEarlyWaitStacks(bool now) {
  __atomic_store_n(&skel_->bss->early_wait_defer_now, now ? 1u : 0u, __ATOMIC_RELAXED);
}

Result<void> BpfSession::SetSampleRate(int hz) {
  // The kernel's cpu-clock turns a frequency into a fixed period when the event is made
  // (perf_swevent_init_hrtimer clears attr.freq): a new rate is a new period, in ns.
  uint64_t period_ns = 1'000'000'000ull / static_cast<uint64_t>(std::max(hz, 1));
  for (const UniqueFd& fd : perf_fds_)
    if (ioctl(fd.get(), PERF_EVENT_IOC_PERIOD, &period_ns) != 0)
      return SystemError(fmt::format("cannot set the cpu-clock sample rate to {} Hz", hz), errno,
                         ExitCode::kUnsupported);
  return {};
}

uint32_t BpfSession::loop_tid() const {
  return static_cast<uint32_t>(__atomic_load_n(&skel_->bss->loop_tid, __ATOMIC_RELAXED));
}

void BpfSession::SetLoopTid(uint32_t tid, uint32_t replacing) {
  // Only before BPF claimed one (or in place of `replacing`, a loop thread that exited).
  __u64 expected = replacing;
  __atomic_compare_exchange_n(&skel_->bss->loop_tid, &expected, __u64{tid}, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

Result<void> BpfSession::AttachCpuSampler(int sample_hz) {
  if (!thread_tracking_ || cpu_samplers_attached_) return {};
  ASSIGN_OR_RETURN(std::vector<int> cpus, OnlineCpus());
  std::vector<UniqueFd> fds;
  std::vector<AttachedLink> links;
  for (int cpu : cpus) {
    ASSIGN_OR_RETURN(UniqueFd fd, OpenCpuClockOfCpu(cpu, sample_hz));
    bpf_link* link = bpf_program__attach_perf_event(skel_->progs.lt_cpu_sample, fd.get());
    if (!link)
      return SystemError(fmt::format("cannot attach the cpu-clock sampler of CPU {}", cpu), errno,
                         ExitCode::kUnsupported);
    links.emplace_back(link);
    fds.push_back(std::move(fd));
  }
  for (auto& link : links) links_.push_back(std::move(link));
  for (auto& fd : fds) perf_fds_.push_back(std::move(fd));
  cpu_samplers_attached_ = true;
  return {};
}

Result<void> BpfSession::SampleUnwatchedThread(int tid, int sample_hz) {
  if (!thread_tracking_) return {};
  const uint32_t key = static_cast<uint32_t>(tid);
  const uint8_t yes = 1;
  if (bpf_map_update_elem(bpf_map__fd(skel_->maps.runtime_sampled), &key, &yes, BPF_ANY) != 0)
    return SystemError(fmt::format("cannot sample thread {}", tid), errno, ExitCode::kUnsupported);
  auto attached = AttachCpuSampler(sample_hz);
  if (!attached) bpf_map_delete_elem(bpf_map__fd(skel_->maps.runtime_sampled), &key);
  return attached;
}

std::vector<std::pair<uint32_t, lt_thread_state>> BpfSession::ThreadStates() const {
  std::vector<std::pair<uint32_t, lt_thread_state>> out;
  int fd = bpf_map__fd(skel_->maps.thread_states);
  uint32_t key = 0, next = 0;
  uint32_t* previous = nullptr;
  while (bpf_map_get_next_key(fd, previous, &next) == 0) {
    lt_thread_state state{};
    if (bpf_map_lookup_elem(fd, &next, &state) == 0) out.emplace_back(next, state);
    key = next;
    previous = &key;
  }
  return out;
}

std::optional<lt_thread_state> BpfSession::ThreadState(uint32_t tid) const {
  lt_thread_state state{};
  if (bpf_map_lookup_elem(bpf_map__fd(skel_->maps.thread_states), &tid, &state) != 0) return std::nullopt;
  return state;
}

std::optional<lt_stack_copy> BpfSession::StackCopy(uint32_t tid) const {
  auto copy = std::make_unique<lt_stack_copy>();
  if (bpf_map_lookup_elem(bpf_map__fd(skel_->maps.stack_copies), &tid, copy.get()) != 0) return std::nullopt;
  return *copy;
}

std::vector<lt_shadow_frame> BpfSession::ShadowStack(uint32_t tid) const {
  lt_shadow_stack stack{};
  const uint32_t index = tid & (LT_SHADOW_SLOTS - 1);
  if (bpf_map_lookup_elem(bpf_map__fd(skel_->maps.shadow_stacks), &index, &stack) != 0 || stack.tid != tid) return {};
  std::vector<lt_shadow_frame> frames;
  for (uint32_t i = 0; i < stack.depth && i < LT_MAX_SHADOW; ++i) frames.push_back(stack.frames[stack.depth - 1 - i]);
  return frames;  // innermost first
}

std::vector<uint64_t> BpfSession::StackIps(int32_t stack_id) const {
  if (stack_id < 0) return {};
  std::vector<uint64_t> ips(127);
  uint32_t key = static_cast<uint32_t>(stack_id);
  if (bpf_map_lookup_elem(bpf_map__fd(skel_->maps.stack_traces), &key, ips.data()) != 0) return {};
  while (!ips.empty() && ips.back() == 0) ips.pop_back();
  return ips;
}

std::vector<std::vector<const ResolvedProbe*>> BpfSession::SplitIntoLinks(
    std::vector<std::vector<const ResolvedProbe*>> groups) const {
  const size_t limit = uprobe_multi_ ? kMaxPointsPerLink : kMaxPointsPerPerfGroup;
  std::vector<std::vector<const ResolvedProbe*>> out;
  for (auto& group : groups) {
    out.emplace_back();
    size_t points = 0;
    for (const ResolvedProbe* p : group) {
      if (points > 0 && points + AttachPointCount(*p) > limit) {
        out.emplace_back();
        points = 0;
      }
      out.back().push_back(p);
      points += AttachPointCount(*p);
    }
  }
  return out;
}

uint64_t BpfSession::RecordsLost() const {
  const int ncpu = libbpf_num_possible_cpus();
  if (ncpu <= 0) return records_lost_;
  std::vector<uint64_t> values(ncpu);
  const uint32_t key = LT_STAT_RECORDS_FULL;
  uint64_t total = records_lost_;
  if (bpf_map__lookup_elem(skel_->maps.stats, &key, sizeof(key), values.data(), values.size() * sizeof(uint64_t), 0) ==
      0)
    for (uint64_t v : values) total += v;
  return total;
}

Stats BpfSession::ReadCounters() const {
  Stats stats;
  int ncpu = libbpf_num_possible_cpus();
  if (ncpu <= 0) return stats;
  std::vector<uint64_t> values(ncpu);
  auto sum = [&](uint32_t key) {
    uint64_t total = 0;
    if (bpf_map__lookup_elem(skel_->maps.stats, &key, sizeof(key), values.data(), values.size() * sizeof(uint64_t),
                             0) == 0)
      for (uint64_t v : values) total += v;
    return total;
  };
  // Every counter BPF keeps (events.h LT_STAT_*) has its name in stats.h.
  stats.Set(StatId::ringbuf_full, sum(LT_STAT_RINGBUF_FULL));
  stats.Set(StatId::records_full, sum(LT_STAT_RECORDS_FULL));
  stats.Set(StatId::records_overwritten, records_lost_);
  stats.Set(StatId::predicate_rejected, sum(LT_STAT_PREDICATE_REJECTED));
  stats.Set(StatId::verdicts_evicted, sum(LT_STAT_VERDICTS_EVICTED));
  stats.Set(StatId::verdicts_stale, sum(LT_STAT_VERDICTS_STALE));
  stats.Set(StatId::other_process_hits, sum(LT_STAT_OTHER_PROCESS));
  stats.Set(StatId::other_thread_hits, sum(LT_STAT_OTHER_THREAD));
  stats.Set(StatId::arg_read_failed, sum(LT_STAT_ARG_READ_FAILED));
  stats.Set(StatId::bpf_string_copy_failed, sum(LT_STAT_STRING_READ_FAILED));
  stats.Set(StatId::stack_failed, sum(LT_STAT_STACK_FAILED));
  stats.Set(StatId::samples_dropped, sum(LT_STAT_SAMPLES_DROPPED));
  stats.Set(StatId::shadow_overflow, sum(LT_STAT_SHADOW_OVERFLOW));
  stats.Set(StatId::cpu_switch_untraced, sum(LT_STAT_CPU_SWITCH_UNTRACED));
  stats.Set(StatId::cost_switch_stacks, sum(LT_STAT_SWITCH_STACKED));
  stats.Set(StatId::switch_stacks_idle, sum(LT_STAT_SWITCH_IDLE));
  stats.Set(StatId::samples_idle, sum(LT_STAT_SAMPLE_IDLE));
  stats.Set(StatId::early_preemptions_unstacked, sum(LT_STAT_SWITCH_YOUNG));
  stats.Set(StatId::early_waits_by_syscall, sum(LT_STAT_SWITCH_YOUNG_WAIT));
  stats.Set(StatId::early_wait_stacks_at_switch_out, sum(LT_STAT_EARLY_WAIT_STACKED));
  stats.Set(StatId::switch_stacks_waiting, sum(LT_STAT_SWITCH_WAIT));
  AddProgramCosts(&stats);
  stats.Set(StatId::interp_stacks_dropped, sum(LT_STAT_INTERP_STACKS_DROPPED));
  stats.Set(StatId::stack_walks_unsupported_row, sum(LT_STAT_WALK_UNSUPPORTED));
  stats.Set(StatId::stack_walks_no_cfi, sum(LT_STAT_WALK_NO_CFI));
  stats.Set(StatId::stack_walks_depth_limit, sum(LT_STAT_WALK_DEPTH));
  stats.Set(StatId::stack_walks_read_fault, sum(LT_STAT_WALK_READ_FAULT));
  stats.Set(StatId::stack_walks_no_frame_pointer, sum(LT_STAT_WALK_NO_FP));
  stats.Set(StatId::stack_frames_by_frame_pointer, sum(LT_STAT_FP_FRAMES));
  stats.Set(StatId::stack_walks_finished_from_copy, sum(LT_STAT_WALK_COPIED));
  stats.Set(StatId::stack_walks_cut_at_interpreter, sum(LT_STAT_WALK_AT_INTERPRETER));
  return stats;
}

// What each loaded program cost the verifier (-v), and the sum for the start line.
void BpfSession::NoteLoadedPrograms() {
  bpf_program* prog = nullptr;
  bpf_object__for_each_program(prog, skel_->obj) {
    const int fd = bpf_program__fd(prog);
    if (fd < 0) continue;
    ++load_cost_.programs;
    bpf_prog_info info{};
    uint32_t size = sizeof(info);
    if (bpf_obj_get_info_by_fd(fd, &info, &size) != 0) continue;
    load_cost_.verified_insns += info.verified_insns;
    log::V2("bpf program {}: {} instructions, {} verified", bpf_program__name(prog), info.xlated_prog_len / 8,
            info.verified_insns);
  }
  log::V1("bpf: {} programs loaded in {:.0f} ms ({:.0f} ms CPU, {} instructions verified)", load_cost_.programs,
          load_cost_.wall_ns / 1e6, load_cost_.cpu_ns / 1e6, load_cost_.verified_insns);
}

// What looptrace's programs cost: each counts its runs and times about one in 64 of them
// (events.h lt_prog_cost), so the time of all runs is an estimate from the timed ones. The
// probe programs run once per hit on the target, the others at every switch, wakeup,
// signal and exec of every process (they filter) and at every cpu-clock sample.
std::optional<BpfSession::ProgramCost> BpfSession::CostOfProgram(uint32_t prog) const {
  const int ncpu = libbpf_num_possible_cpus();
  if (ncpu <= 0) return std::nullopt;
  std::vector<lt_prog_cost> per_cpu(ncpu);
  if (bpf_map__lookup_elem(skel_->maps.prog_costs, &prog, sizeof(prog), per_cpu.data(),
                           per_cpu.size() * sizeof(lt_prog_cost), 0) != 0)
    return std::nullopt;
  lt_prog_cost total{};
  for (const lt_prog_cost& cpu : per_cpu) {
    total.runs += cpu.runs;
    total.timed_runs += cpu.timed_runs;
    total.timed_ns += cpu.timed_ns;
  }
  const auto estimated_ns = static_cast<uint64_t>(
      total.timed_runs ? static_cast<double>(total.timed_ns) * total.runs / total.timed_runs : 0.0);
  return ProgramCost{total.runs, estimated_ns};
}

void BpfSession::AddProgramCosts(Stats* stats) const {
  for (uint32_t prog = 0; prog < LT_PROG_MAX; ++prog) {
    const std::optional<ProgramCost> cost = CostOfProgram(prog);
    if (!cost) continue;
    const bool probe = prog < LT_PROG_PROBES_END;
    stats->Add(probe ? StatId::cost_probe_hits : StatId::cost_sched_runs, cost->runs);
    stats->Add(probe ? StatId::cost_probe_bpf_ns : StatId::cost_sched_bpf_ns, cost->ns);
  }
}

uint64_t BpfSession::SamplerBpfNs() const {
  const std::optional<ProgramCost> cost = CostOfProgram(LT_PROG_CPU_SAMPLE);
  return cost ? cost->ns : 0;
}

}  // namespace looptrace::loader
