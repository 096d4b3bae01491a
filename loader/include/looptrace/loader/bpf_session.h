// The BPF side of a session: skeleton, ring buffer and attached links, all owned
// RAII-style. The only code of the project that calls libbpf.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "looptrace/events.h"
#include "looptrace/loader/attach_plan.h"
#include "looptrace/loader/event_decoder.h"
#include "looptrace/tracers/stats.h"
#include "looptrace/util/result.h"

struct lt_probes;  // generated skeleton (bpf/looptrace.bpf.c)
struct ring_buffer;
struct bpf_link;
struct bpf_program;

namespace looptrace::loader {

struct BpfSessionOptions {
  uint32_t target_tgid = 0;
  bool all_threads = false;
  size_t ringbuf_bytes = 8u << 20;  // power of two
  size_t beat_capacity = 1u << 20;  // method-beat ring records, power of two
  bool dwarf_unwind = false;        // copy the main thread's registers + stack top
  std::string btf_path;             // empty: the kernel's /sys/kernel/btf/vmlinux
};

// Checks privileges and kernel features before anything is loaded, so the user gets
// one clear error instead of a libbpf trace.
Result<void> CheckBpfPrerequisites(const std::string& btf_path);

// Owns attached probe points (bpftrace's AttachedProbe): a libbpf link, or the fd of
// a raw uprobe_multi link; detached on destruction.
class AttachedLink {
 public:
  explicit AttachedLink(bpf_link* link) : link_(link) {}
  explicit AttachedLink(int link_fd) : fd_(link_fd) {}
  AttachedLink(AttachedLink&& other) noexcept
      : link_(std::exchange(other.link_, nullptr)), fd_(std::exchange(other.fd_, -1)) {}
  AttachedLink& operator=(AttachedLink&&) = delete;
  AttachedLink(const AttachedLink&) = delete;
  ~AttachedLink();

 private:
  bpf_link* link_ = nullptr;
  int fd_ = -1;
};

// Creates one uprobe_multi link (kernel >= 6.6) for a loaded program: on failure the
// negative errno. The program must have been loaded with the uprobe_multi attach type.
int CreateUprobeMultiLink(int prog_fd, const std::string& path, const std::vector<uint64_t>& offsets,
                          const std::vector<uint64_t>& cookies, bool retprobe, int pid);
// The loader attaches a group of points in uprobe_multi links of at most this many, so it
// can report progress between them. Each link costs one RCU grace period to detach
// (~40-70 ms here, bench/attach_scale.cc), and 20,000 points attach in ~60 ms: links are
// only split where attaching would take seconds.
inline constexpr size_t kMaxPointsPerLink = 1u << 17;
// Without uprobe_multi every point is its own link anyway: progress every this many.
inline constexpr size_t kMaxPointsPerPerfGroup = 256;
// Marks a program (before load) for uprobe_multi attachment.
void SetUprobeMultiAttachType(struct bpf_program* prog);

// Method probes whose identity is their first argument use the cookie-less fast path
// (uprobe_multi kernels only): the group attach keeps them apart.
bool UsesFastBeats(const ResolvedProbe& probe);

class BpfSession : public BeatSource {
 public:
  using RecordCallback = std::function<void(std::span<const uint8_t>)>;

  static Result<std::unique_ptr<BpfSession>> Open(const BpfSessionOptions& options,
                                                  RecordCallback on_record);
  ~BpfSession() override;
  BpfSession(const BpfSession&) = delete;
  BpfSession& operator=(const BpfSession&) = delete;

  // Attaches probe points of one binary and one kind (uprobe or uretprobe, as
  // AttachAsReturnProbe says) for process `pid`, each at all its AttachOffsets: one
  // uprobe_multi link when the kernel has them, else one link per offset.
  // USDT points are attached one by one.
  Result<void> Attach(const std::vector<const ResolvedProbe*>& probes, int pid);
  // Splits attach groups so none holds more points (AttachPointCount) than one step of
  // attaching should: kMaxPointsPerLink, or kMaxPointsPerPerfGroup without uprobe_multi.
  std::vector<std::vector<const ResolvedProbe*>> SplitIntoLinks(
      std::vector<std::vector<const ResolvedProbe*>> groups) const;
  size_t attached_points() const { return attached_points_; }
  size_t skipped_points() const { return skipped_points_; }  // glob matches the kernel refused
  bool uses_uprobe_multi() const { return uprobe_multi_; }

  // Fd that becomes readable when the ring buffer forces a wakeup (it is filling up);
  // otherwise the caller polls on a timer and calls Consume().
  int ring_epoll_fd() const;
  Result<size_t> Consume();

  // Thread-state programs (sched_switch, sched_wakeup, signal_generate) and cpu-clock
  // samples of `sample_tid` at `sample_hz`. A kernel without them turns the feature off
  // with one warning (the result says why), it is not an error.
  Result<void> AttachThreadTracking(int sample_tid, int sample_hz);
  bool thread_tracking() const { return thread_tracking_; }

  // The latest state BPF saw for every thread of the target (tid -> state).
  std::vector<std::pair<uint32_t, lt_thread_state>> ThreadStates() const;
  // The main thread's registers and stack top at its last switch-out or sample
  // (--dwarf-unwind); nothing when off or never captured.
  std::optional<lt_stack_copy> StackCopy(uint32_t tid) const;

  // Instruction pointers of a stack id (innermost first); empty if gone.
  std::vector<uint64_t> StackIps(int32_t stack_id) const;

  // BeatSource: the method-beat ring, read through a read-only mapping of the BPF map.
  uint64_t Copy(uint64_t begin, uint64_t end, std::vector<lt_beat>* out) const override;
  uint64_t beat_head() const;

  // Loss and filter counters kept by the BPF programs (summed over CPUs).
  Stats ReadCounters() const;

  // Detaches every probe (also done by the destructor).
  void Detach();

 private:
  BpfSession() = default;
  Result<void> AttachOne(const ResolvedProbe& probe, int pid);
  Result<void> AttachMulti(const std::vector<const ResolvedProbe*>& probes, int pid);
  int CreateMultiLink(const std::vector<const ResolvedProbe*>& probes, int pid);

  struct ::lt_probes* skel_ = nullptr;
  ring_buffer* ring_ = nullptr;
  RecordCallback on_record_;
  std::vector<AttachedLink> links_;
  const lt_beat* beats_ = nullptr;  // mmap of the beats map
  size_t beats_mapped_bytes_ = 0;
  uint64_t beat_capacity_ = 0;
  size_t attached_points_ = 0;
  bool thread_tracking_ = false;
  std::vector<int> perf_fds_;
  size_t skipped_points_ = 0;
  bool uprobe_multi_ = false;
};

}  // namespace looptrace::loader
