#include "looptrace/loader/bpf_session.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <fstream>
#include <string>

#include "lt_probes.skel.h"
#include "looptrace/events.h"
#include "looptrace/util/log.h"
#include "looptrace/util/safe_file.h"

namespace looptrace::loader {
namespace {

int LibbpfPrint(enum libbpf_print_level level, const char* format, va_list args) {
  log::Level ours = level == LIBBPF_DEBUG ? log::Level::kV2 : log::Level::kV1;
  if (!log::Enabled(ours)) return 0;
  va_list copy;
  va_copy(copy, args);
  int length = vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  if (length < 0) return 0;
  std::string text(static_cast<size_t>(length) + 1, '\0');
  vsnprintf(text.data(), text.size(), format, args);
  text.resize(length);
  while (!text.empty() && text.back() == '\n') text.pop_back();
  log::Write(ours, "libbpf: " + text);
  return 0;
}

bool HasCapability(uint64_t caps, int bit) { return (caps >> bit) & 1; }

uint64_t EffectiveCapabilities() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.starts_with("CapEff:")) return std::stoull(line.substr(7), nullptr, 16);
  }
  return 0;
}

}  // namespace

Result<void> CheckBpfPrerequisites(const std::string& btf_path) {
  libbpf_set_print(LibbpfPrint);
  constexpr int kCapSysAdmin = 21, kCapPerfmon = 38, kCapBpf = 39;
  uint64_t caps = EffectiveCapabilities();
  bool privileged = HasCapability(caps, kCapSysAdmin) ||
                    (HasCapability(caps, kCapBpf) && HasCapability(caps, kCapPerfmon));
  if (!privileged)
    return MakeError("permission denied: attaching BPF probes needs CAP_BPF and CAP_PERFMON "
                     "(or CAP_SYS_ADMIN)",
                     ExitCode::kPermission, "run looptrace as root (sudo looptrace ...)");
  const std::string btf = btf_path.empty() ? "/sys/kernel/btf/vmlinux" : btf_path;
  struct stat st;
  if (stat(btf.c_str(), &st) != 0)
    return SystemError(fmt::format("kernel BTF {} is not available", btf), errno,
                       ExitCode::kUnsupported,
                       btf_path.empty() ? "this kernel lacks CONFIG_DEBUG_INFO_BTF; pass --btf FILE "
                                          "with a BTF file for it"
                                        : "check the --btf path");
  if (!btf_path.empty()) {
    // A regular file of bounded size: a FIFO or device would block libbpf's read.
    if (auto file = OpenRegularFile(btf, "BTF file", kMaxBtfBytes, ExitCode::kUnsupported,
                                    "--btf needs a raw BTF or ELF file with .BTF");
        !file)
      return std::unexpected(file.error());
    struct btf* parsed = btf__parse(btf.c_str(), nullptr);
    if (!parsed)
      return SystemError(fmt::format("cannot parse BTF file {}", btf), errno,
                         ExitCode::kUnsupported, "--btf needs a raw BTF or ELF file with .BTF");
    btf__free(parsed);
  }
  if (stat("/sys/bus/event_source/devices/uprobe/type", &st) != 0)
    return MakeError("this kernel has no uprobe perf events "
                     "(/sys/bus/event_source/devices/uprobe missing)",
                     ExitCode::kUnsupported, "looptrace needs CONFIG_UPROBE_EVENTS");
  return {};
}

AttachedLink::~AttachedLink() {
  if (link_) bpf_link__destroy(link_);
  if (fd_ >= 0) close(fd_);
}

namespace {

// BPF_LINK_CREATE for uprobe_multi (kernel >= 6.6), which the libbpf 1.1 and uapi
// headers here predate; the layout is the kernel's (perf-facts.md).
constexpr uint32_t kBpfTraceUprobeMulti = 48;
constexpr uint32_t kBpfFUprobeMultiReturn = 1;

struct UprobeMultiLinkAttr {
  uint32_t prog_fd;
  uint32_t target_fd;
  uint32_t attach_type;
  uint32_t flags;
  uint64_t path;
  uint64_t offsets;
  uint64_t ref_ctr_offsets;
  uint64_t cookies;
  uint32_t cnt;
  uint32_t multi_flags;
  uint32_t pid;
  uint8_t zero_tail[144 - 60];  // the rest of union bpf_attr must be zero
};
static_assert(sizeof(UprobeMultiLinkAttr) == 144);

// errno 524 is the kernel-internal ENOTSUPP: the instruction cannot be probed.
std::string AttachErrorText(int err) {
  return err == 524 ? "the instruction there cannot be probed" : strerror(err);
}

struct SkeletonDeleter {
  void operator()(lt_probes* skel) const { lt_probes__destroy(skel); }
};

}  // namespace

Result<std::unique_ptr<BpfSession>> BpfSession::Open(const BpfSessionOptions& options,
                                                     RecordCallback on_record) {
  std::unique_ptr<BpfSession> session(new BpfSession());
  session->on_record_ = std::move(on_record);

  // Load with uprobe_multi first; a kernel without it rejects that program, and the
  // object is loaded again without it.
  int load_error = 0;
  for (bool with_multi : {true, false}) {
    LIBBPF_OPTS(bpf_object_open_opts, open_opts);
    if (!options.btf_path.empty()) open_opts.btf_custom_path = options.btf_path.c_str();
    std::unique_ptr<lt_probes, SkeletonDeleter> skel(lt_probes__open_opts(&open_opts));
    if (!skel) return SystemError("cannot open the BPF object", errno, ExitCode::kUnsupported);
    skel->rodata->target_tgid = options.target_tgid;
    skel->rodata->thread_filter = options.all_threads ? LT_THREADS_ALL : LT_THREADS_MAIN;
    skel->rodata->wakeup_bytes = options.ringbuf_bytes / 4;
    if (int err = bpf_map__set_max_entries(skel->maps.events, options.ringbuf_bytes))
      return SystemError("cannot size the ring buffer", err);
    if (int err = bpf_map__set_max_entries(skel->maps.beats, options.beat_capacity))
      return SystemError("cannot size the method-beat buffer", err);
    skel->rodata->beat_mask = options.beat_capacity - 1;
    skel->rodata->dwarf_stack_bytes = options.dwarf_unwind ? LT_MAX_STACK_COPY : 0;
    // Attached on demand (AttachThreadTracking), not by the skeleton.
    bpf_program__set_autoattach(skel->progs.lt_sched_switch, false);
    for (bpf_program* prog : {skel->progs.lt_uprobe_multi, skel->progs.lt_beat_enter, skel->progs.lt_beat_exit}) {
      if (with_multi) SetUprobeMultiAttachType(prog);
      else bpf_program__set_autoload(prog, false);
    }
    load_error = lt_probes__load(skel.get());
    if (load_error == 0) {
      session->skel_ = skel.release();
      session->uprobe_multi_ = with_multi;
      break;
    }
    if (load_error == -EPERM || load_error == -EACCES) break;
    log::V1("loading with uprobe_multi failed ({}); falling back to one link per probe",
            strerror(-load_error));
  }
  if (!session->skel_) {
    ExitCode code = (load_error == -EPERM || load_error == -EACCES) ? ExitCode::kPermission
                                                                    : ExitCode::kUnsupported;
    return SystemError("cannot load the BPF programs into the kernel", load_error, code,
                       code == ExitCode::kPermission ? "run looptrace as root"
                                                     : "rerun with -vv to see the verifier log");
  }
  auto* skel = session->skel_;
  session->beat_capacity_ = options.beat_capacity;
  session->beats_mapped_bytes_ = options.beat_capacity * sizeof(lt_beat);
  void* beats = mmap(nullptr, session->beats_mapped_bytes_, PROT_READ, MAP_SHARED,
                     bpf_map__fd(skel->maps.beats), 0);
  if (beats == MAP_FAILED) return SystemError("cannot map the method-beat buffer", errno);
  session->beats_ = static_cast<const lt_beat*>(beats);

  session->ring_ = ring_buffer__new(
      bpf_map__fd(skel->maps.events),
      [](void* ctx, void* data, size_t size) -> int {
        auto* self = static_cast<BpfSession*>(ctx);
        self->on_record_(std::span<const uint8_t>(static_cast<const uint8_t*>(data), size));
        return 0;
      },
      session.get(), nullptr);
  if (!session->ring_) return SystemError("cannot create the ring buffer reader", errno);
  return session;
}

BpfSession::~BpfSession() {
  Detach();
  for (int fd : perf_fds_) close(fd);
  if (beats_) munmap(const_cast<lt_beat*>(beats_), beats_mapped_bytes_);
  if (ring_) ring_buffer__free(ring_);
  if (skel_) lt_probes__destroy(skel_);
}

// Each perf-event uprobe link waits for an RCU grace period on close (~0.1 s here,
// serialized in the kernel even from parallel threads); uprobe_multi links would
// batch this (perf-facts.md).
void BpfSession::Detach() { links_.clear(); }

Result<void> BpfSession::AttachOne(const ResolvedProbe& probe, int pid) {
  const uint64_t cookie = MakeCookie(probe);
  bpf_link* link = nullptr;
  std::string what;
  if (probe.spec.kind == ProbeKind::kUsdt) {
    size_t colon = probe.spec.point.find(':');
    std::string provider = probe.spec.point.substr(0, colon);
    std::string name = probe.spec.point.substr(colon + 1);
    LIBBPF_OPTS(bpf_usdt_opts, opts, .usdt_cookie = cookie);
    link = bpf_program__attach_usdt(skel_->progs.lt_usdt, pid, probe.binary_path.c_str(),
                                    provider.c_str(), name.c_str(), &opts);
    what = fmt::format("usdt {}:{}", probe.binary_path, probe.spec.point);
  } else {
    LIBBPF_OPTS(bpf_uprobe_opts, opts, .bpf_cookie = cookie,
                .retprobe = probe.spec.kind == ProbeKind::kUretprobe);
    link = bpf_program__attach_uprobe_opts(skel_->progs.lt_uprobe, pid, probe.binary_path.c_str(),
                                           probe.file_offset, &opts);
    what = fmt::format("{} {}:{}", ProbeKindName(probe.spec.kind), probe.binary_path, probe.symbol);
  }
  if (!link) {
    int err = errno;
    if (err == ESRCH)
      return SystemError("failed to attach " + what + ": the target process is gone", err,
                         ExitCode::kTarget);
    if (err == EPERM || err == EACCES)
      return SystemError("failed to attach " + what, err, ExitCode::kPermission);
    return MakeError(fmt::format("failed to attach {}: {}", what, AttachErrorText(err)));
  }
  links_.emplace_back(link);
  ++attached_points_;
  return {};
}

int CreateUprobeMultiLink(int prog_fd, const std::string& path, const std::vector<uint64_t>& offsets,
                          const std::vector<uint64_t>& cookies, bool retprobe, int pid) {
  UprobeMultiLinkAttr attr{};
  attr.prog_fd = static_cast<uint32_t>(prog_fd);
  attr.attach_type = kBpfTraceUprobeMulti;
  attr.path = reinterpret_cast<uint64_t>(path.c_str());
  attr.offsets = reinterpret_cast<uint64_t>(offsets.data());
  attr.cookies = cookies.empty() ? 0 : reinterpret_cast<uint64_t>(cookies.data());
  attr.cnt = static_cast<uint32_t>(offsets.size());
  attr.multi_flags = retprobe ? kBpfFUprobeMultiReturn : 0;
  attr.pid = static_cast<uint32_t>(pid);
  int fd = static_cast<int>(syscall(__NR_bpf, BPF_LINK_CREATE, &attr, sizeof(attr)));
  return fd < 0 ? -errno : fd;
}

void SetUprobeMultiAttachType(bpf_program* prog) {
  bpf_program__set_expected_attach_type(prog, static_cast<bpf_attach_type>(kBpfTraceUprobeMulti));
}

int BpfSession::CreateMultiLink(const std::vector<const ResolvedProbe*>& probes, int pid) {
  std::vector<uint64_t> offsets, cookies;
  for (const ResolvedProbe* p : probes) {
    offsets.push_back(p->file_offset);
    cookies.push_back(MakeCookie(*p));
  }
  bpf_program* prog = skel_->progs.lt_uprobe_multi;
  if (UsesFastBeats(*probes.front()))
    prog = probes.front()->spec.role == Role::kMethodEnter ? skel_->progs.lt_beat_enter : skel_->progs.lt_beat_exit;
  return CreateUprobeMultiLink(bpf_program__fd(prog),
                               probes.front()->binary_path, offsets, cookies,
                               probes.front()->spec.kind == ProbeKind::kUretprobe, pid);
}

// One link for the whole group; when the kernel refuses it, the group is split in
// halves to find the points it refuses. A refused point that a glob matched is skipped
// (and counted); a refused point named exactly is an error.
Result<void> BpfSession::AttachMulti(const std::vector<const ResolvedProbe*>& probes, int pid) {
  int fd = CreateMultiLink(probes, pid);
  if (fd >= 0) {
    links_.emplace_back(fd);
    attached_points_ += probes.size();
    return {};
  }
  int err = -fd;
  const ResolvedProbe& first = *probes.front();
  if (err == ESRCH)
    return SystemError(fmt::format("failed to attach {}: pid {} is gone", first.binary_path, pid),
                       err, ExitCode::kTarget);
  if (err == EPERM || err == EACCES)
    return SystemError(fmt::format("failed to attach {}", first.binary_path), err,
                       ExitCode::kPermission);
  if (probes.size() > 1) {
    size_t half = probes.size() / 2;
    RETURN_IF_ERROR(AttachMulti({probes.begin(), probes.begin() + half}, pid));
    return AttachMulti({probes.begin() + half, probes.end()}, pid);
  }
  std::string what = fmt::format("{} {}:{}", ProbeKindName(first.spec.kind), first.binary_path,
                                 first.symbol);
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
      if (!UsesFastBeats(*p)) rest.push_back(p);
      else if (p->spec.role == Role::kMethodEnter) enters.push_back(p);
      else exits.push_back(p);
    }
    for (auto* group : {&enters, &exits, &rest})
      if (!group->empty()) RETURN_IF_ERROR(AttachMulti(*group, pid));
    return {};
  }
  for (const ResolvedProbe* p : probes) RETURN_IF_ERROR(AttachOne(*p, pid));
  return {};
}

int BpfSession::ring_epoll_fd() const { return ring_buffer__epoll_fd(ring_); }

Result<size_t> BpfSession::Consume() {
  int n = ring_buffer__consume(ring_);
  if (n < 0) return SystemError("cannot read the ring buffer", n);
  return static_cast<size_t>(n);
}

Result<void> BpfSession::AttachThreadTracking(int sample_tid, int sample_hz) {
  for (bpf_program* prog : {skel_->progs.lt_sched_switch, skel_->progs.lt_sched_wakeup,
                            skel_->progs.lt_signal_generate, skel_->progs.lt_process_exec}) {
    bpf_link* link = bpf_program__attach(prog);
    if (!link)
      return SystemError(fmt::format("cannot attach {}", bpf_program__section_name(prog)), errno,
                         ExitCode::kUnsupported);
    links_.emplace_back(link);
  }
  thread_tracking_ = true;
  if (sample_hz <= 0) return {};
  perf_event_attr attr{};
  attr.size = sizeof(attr);
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_CPU_CLOCK;
  attr.freq = 1;
  attr.sample_freq = static_cast<uint64_t>(sample_hz);
  int fd = static_cast<int>(syscall(__NR_perf_event_open, &attr, sample_tid, -1, -1, PERF_FLAG_FD_CLOEXEC));
  if (fd < 0)
    return SystemError(fmt::format("cannot sample thread {} (perf cpu-clock)", sample_tid), errno,
                       ExitCode::kUnsupported);
  perf_fds_.push_back(fd);
  bpf_link* link = bpf_program__attach_perf_event(skel_->progs.lt_cpu_sample, fd);
  if (!link) return SystemError("cannot attach the cpu-clock sampler", errno, ExitCode::kUnsupported);
  links_.emplace_back(link);
  return {};
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

std::optional<lt_stack_copy> BpfSession::StackCopy(uint32_t tid) const {
  auto copy = std::make_unique<lt_stack_copy>();
  if (bpf_map_lookup_elem(bpf_map__fd(skel_->maps.stack_copies), &tid, copy.get()) != 0) return std::nullopt;
  return *copy;
}

std::vector<uint64_t> BpfSession::StackIps(int32_t stack_id) const {
  if (stack_id < 0) return {};
  std::vector<uint64_t> ips(127);
  uint32_t key = static_cast<uint32_t>(stack_id);
  if (bpf_map_lookup_elem(bpf_map__fd(skel_->maps.stack_traces), &key, ips.data()) != 0) return {};
  while (!ips.empty() && ips.back() == 0) ips.pop_back();
  return ips;
}

uint64_t BpfSession::beat_head() const {
  return __atomic_load_n(&skel_->bss->beat_head, __ATOMIC_ACQUIRE);
}

uint64_t BpfSession::Copy(uint64_t begin, uint64_t end, std::vector<lt_beat>* out) const {
  uint64_t head = beat_head();
  end = std::min(end, head);
  if (begin >= end) return 0;
  const uint64_t requested_begin = begin;
  // Slots older than head - capacity were reused by newer beats.
  if (head - begin > beat_capacity_) {
    begin = head - beat_capacity_;
    if (begin >= end) return end - requested_begin;
  }
  uint64_t overwritten = begin - requested_begin;
  const size_t first = out->size();
  for (uint64_t i = begin; i < end; ++i) out->push_back(beats_[i & (beat_capacity_ - 1)]);
  // The writer may have lapped the copy while it ran: drop what it could have reused.
  uint64_t after = beat_head();
  if (after - begin > beat_capacity_) {
    uint64_t unsafe = std::min(end, after - beat_capacity_) - begin;
    out->erase(out->begin() + first, out->begin() + first + unsafe);
    overwritten += unsafe;
  }
  return overwritten;
}

bool UsesFastBeats(const ResolvedProbe& probe) {
  const ProbeSpec& spec = probe.spec;
  return (spec.role == Role::kMethodEnter || spec.role == Role::kMethodExit) &&
         spec.kind == ProbeKind::kUprobe && spec.args.size() == 1 && spec.args[0].source == 0 &&
         spec.args[0].type != ArgType::kStr;
}

Stats BpfSession::ReadCounters() const {
  Stats stats;
  int ncpu = libbpf_num_possible_cpus();
  if (ncpu <= 0) return stats;
  std::vector<uint64_t> values(ncpu);
  auto sum = [&](uint32_t key) {
    uint64_t total = 0;
    if (bpf_map__lookup_elem(skel_->maps.stats, &key, sizeof(key), values.data(),
                             values.size() * sizeof(uint64_t), 0) == 0)
      for (uint64_t v : values) total += v;
    return total;
  };
  stats.Set(StatId::ringbuf_full, sum(LT_STAT_RINGBUF_FULL));
  stats.Set(StatId::other_thread_hits, sum(LT_STAT_OTHER_THREAD));
  stats.Set(StatId::arg_read_failed, sum(LT_STAT_ARG_READ_FAILED));
  return stats;
}

}  // namespace looptrace::loader
