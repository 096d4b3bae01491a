#include "looptrace/tracers/thread_state.h"

#include <map>
#include <set>
#include <string_view>

namespace looptrace {
namespace {

bool AnyFrame(const std::vector<std::string>& stack, std::initializer_list<std::string_view> needles) {
  for (const auto& frame : stack)
    for (auto needle : needles)
      if (frame.find(needle) != std::string::npos) return true;
  return false;
}

// The reason the kernel stack of a wait in system call `nr` (x86-64) would give: the
// functions ClassifyOffCpu looks for are the ones these calls block in.
std::string ClassifyBySyscall(uint32_t state, int32_t nr) {
  switch (nr) {
    case 202:  // futex
      return "lock";
    case 35:   // nanosleep
    case 230:  // clock_nanosleep
      return "sleep";
    case 7:    // poll
    case 23:   // select
    case 232:  // epoll_wait
    case 270:  // pselect6
    case 271:  // ppoll
    case 281:  // epoll_pwait
    case 441:  // epoll_pwait2
      return "poll";
    case 74:   // fsync
    case 75:   // fdatasync
    case 277:  // sync_file_range
      return "io";
    case 0:    // read: a pipe's or a socket's data, or a file's blocks (uninterruptible)
    case 17:   // pread64
    case 19:   // readv
    case 45:   // recvfrom
    case 47:   // recvmsg
    case 299:  // recvmmsg
      return state & kTaskUninterruptible ? "io" : "poll";
    default:
      break;
  }
  return state & kTaskUninterruptible ? "io" : "other";
}

}  // namespace

std::string ClassifyOffCpu(uint32_t state, const std::vector<std::string>& kernel_stack, int32_t wait_syscall) {
  if (state == 0) return "preempted";  // still runnable: it lost the CPU, it did not wait
  if (kernel_stack.empty() && wait_syscall != kNoWaitSyscall)
    return wait_syscall == kWaitOutsideSyscall ? (state & kTaskUninterruptible ? "io" : "other")
                                               : ClassifyBySyscall(state, wait_syscall);
  if (AnyFrame(kernel_stack, {"futex_wait", "futex_lock_pi", "rt_mutex", "__mutex_lock", "rwsem_down", "__down"}))
    return "lock";
  if (AnyFrame(kernel_stack,
               {"io_schedule", "blk_", "bio_", "folio_wait", "wait_on_page", "ext4_", "xfs_", "btrfs_", "jbd2",
                "file_write_and_wait", "filemap_fdatawait", "__filemap_fdatawait", "nvme", "submit_bio"}))
    return "io";
  if (AnyFrame(kernel_stack, {"do_nanosleep", "hrtimer_nanosleep", "clock_nanosleep", "msleep"})) return "sleep";
  if (AnyFrame(kernel_stack, {"ep_poll", "do_epoll_wait", "do_sys_poll", "do_select", "poll_schedule", "pipe_read",
                              "unix_stream_read", "sk_wait", "tcp_recvmsg"}))
    return "poll";
  if (state & kTaskUninterruptible) return "io";  // D state without a known frame: most likely I/O
  return "other";
}

std::string ClassifyOffCpu(uint32_t state, const std::vector<std::string>& kernel_stack,
                           const std::vector<std::string>& user_stack, int32_t wait_syscall) {
  std::string reason = ClassifyOffCpu(state, kernel_stack, wait_syscall);
  if (reason != "lock") return reason;
  // Java frames are "java.lang.Thread.sleep(...)" (sleep0/sleepNanos in later JDKs); native
  // ones name the VM's entry point.
  for (const auto& frame : user_stack)
    if (frame.starts_with("java.lang.Thread.sleep") || frame.starts_with("JVM_Sleep")) return "sleep";
  return reason;
}

std::string SnapshotWaitReason(const ThreadSnapshot& t) {
  if (t.java_state.starts_with("TIMED_WAITING (sleeping)")) return "sleep";
  if (t.futex_address) return "lock";
  return ClassifyOffCpu(t.state == 'D' ? kTaskUninterruptible : 1, t.kernel_stack);
}

std::vector<uint32_t> FindDeadlock(const std::vector<ThreadSnapshot>& threads, uint32_t start) {
  std::map<uint32_t, uint32_t> waits_on;  // tid -> owner of the futex it waits on
  for (const auto& t : threads)
    if (t.futex_address && t.futex_owner_tid && t.futex_owner_tid != t.tid) waits_on[t.tid] = t.futex_owner_tid;
  std::vector<uint32_t> path = {start};
  std::set<uint32_t> seen = {start};
  uint32_t at = start;
  while (waits_on.contains(at)) {
    at = waits_on[at];
    if (at == start) return path;
    if (!seen.insert(at).second) return {};  // a cycle that does not include `start`
    path.push_back(at);
  }
  return {};
}

std::string StuckText(const std::string& reason) {
  static const std::map<std::string, std::string> kText = {{"lock", "lock wait"},
                                                           {"io", "disk I/O"},
                                                           {"sleep", "sleep"},
                                                           {"poll", "poll/epoll wait"},
                                                           {"preempted", "waiting for a CPU"},
                                                           {"other", "blocked"}};
  auto it = kText.find(reason);
  return it != kText.end() ? it->second : reason;
}

void ClassifyMainThread(ThreadDump* dump) {
  const auto& threads = dump->snapshot.threads;
  // The loop thread is not the process's first thread in every runtime (a JVM's is the
  // event dispatch thread).
  const uint32_t tid = dump->snapshot.tid ? dump->snapshot.tid : dump->pid;
  dump->deadlock_cycle = FindDeadlock(threads, tid);
  const ThreadSnapshot* self = nullptr;
  for (const auto& t : threads)
    if (t.tid == tid) self = &t;
  if (!dump->deadlock_cycle.empty()) {
    dump->main_state = "deadlock";
  } else if (!self) {
    dump->main_state = "unknown";
  } else if (self->state == 'R') {
    dump->main_state = "running";
  } else {
    dump->main_state = StuckText(SnapshotWaitReason(*self));
  }
}

}  // namespace looptrace
