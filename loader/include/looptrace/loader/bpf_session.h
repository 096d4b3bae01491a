// The BPF side of a session: skeleton, ring buffer and attached links, all owned
// RAII-style. The only code of the project that calls libbpf.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "looptrace/loader/attach_plan.h"
#include "looptrace/tracers/stats.h"
#include "looptrace/util/result.h"

struct lt_probes;  // generated skeleton (bpf/looptrace.bpf.c)
struct ring_buffer;
struct bpf_link;

namespace looptrace::loader {

struct BpfSessionOptions {
  uint32_t target_tgid = 0;
  bool all_threads = false;
  size_t ringbuf_bytes = 8u << 20;  // power of two
  std::string btf_path;             // empty: the kernel's /sys/kernel/btf/vmlinux
};

// Checks privileges and kernel features before anything is loaded, so the user gets
// one clear error instead of a libbpf trace.
Result<void> CheckBpfPrerequisites(const std::string& btf_path);

// Owns one attached probe point (bpftrace's AttachedProbe): detached on destruction.
class AttachedLink {
 public:
  explicit AttachedLink(bpf_link* link) : link_(link) {}
  AttachedLink(AttachedLink&& other) noexcept : link_(other.link_) { other.link_ = nullptr; }
  AttachedLink& operator=(AttachedLink&&) = delete;
  AttachedLink(const AttachedLink&) = delete;
  ~AttachedLink();

 private:
  bpf_link* link_;
};

class BpfSession {
 public:
  using RecordCallback = std::function<void(std::span<const uint8_t>)>;

  static Result<std::unique_ptr<BpfSession>> Open(const BpfSessionOptions& options,
                                                  RecordCallback on_record);
  ~BpfSession();
  BpfSession(const BpfSession&) = delete;
  BpfSession& operator=(const BpfSession&) = delete;

  // Attaches one probe point of the plan for process `pid`.
  Result<void> Attach(const ResolvedProbe& probe, int pid);
  size_t attached_count() const { return links_.size(); }

  // Fd that becomes readable when the ring buffer forces a wakeup (it is filling up);
  // otherwise the caller polls on a timer and calls Consume().
  int ring_epoll_fd() const;
  Result<size_t> Consume();

  // Loss and filter counters kept by the BPF programs (summed over CPUs).
  Stats ReadCounters() const;

  // Detaches every probe (also done by the destructor).
  void Detach();

 private:
  BpfSession() = default;
  struct ::lt_probes* skel_ = nullptr;
  ring_buffer* ring_ = nullptr;
  RecordCallback on_record_;
  std::vector<AttachedLink> links_;
};

}  // namespace looptrace::loader
