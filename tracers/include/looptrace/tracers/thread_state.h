// What a thread is doing, from what the scheduler and a snapshot saw of it: why it left the
// CPU, whether it waits in a deadlock, and the main thread's state for a thread dump. Shared
// by the ANR tracer, the sample store and `snapshot`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "looptrace/report/process.h"
#include "looptrace/report/thread_dump.h"

namespace looptrace {

// The task state bit of an uninterruptible sleep (D).
inline constexpr uint32_t kTaskUninterruptible = 0x2;

// ThreadSwitch::wait_syscall: no system call known (a kernel stack was taken, or nothing), or a
// wait outside one (a page fault); else the x86-64 number of the one the thread waits in.
inline constexpr int32_t kNoWaitSyscall = -1;
inline constexpr int32_t kWaitOutsideSyscall = -2;

// "lock", "io", "sleep", "poll", "preempted" or "other", from the task state at switch-out
// and the kernel stack it blocked in, or where BPF took none (early in a message), the system
// call it waits in.
std::string ClassifyOffCpu(uint32_t state, const std::vector<std::string>& kernel_stack,
                           int32_t wait_syscall = kNoWaitSyscall);

// The same, told more by the user stack where the kernel cannot: a futex wait under a sleep
// call (HotSpot's Thread.sleep parks on a condition variable) is "sleep", not "lock".
std::string ClassifyOffCpu(uint32_t state, const std::vector<std::string>& kernel_stack,
                           const std::vector<std::string>& user_stack, int32_t wait_syscall = kNoWaitSyscall);

// Why a stopped thread of a snapshot waits: "lock" when it waits on a futex, else
// ClassifyOffCpu's reason from its kernel stack; "sleep" for a Java thread in Thread.sleep
// (HotSpot sleeps on a futex too: its Java state says more).
std::string SnapshotWaitReason(const ThreadSnapshot& thread);

// An off-CPU reason in words: "lock" -> "lock wait", "io" -> "disk I/O", ...
std::string StuckText(const std::string& reason);

// Follows "waits on a futex owned by" edges from `start`; the cycle if it comes back.
std::vector<uint32_t> FindDeadlock(const std::vector<ThreadSnapshot>& threads, uint32_t start);

// What the main thread (the loop thread the snapshot is about) is doing by its snapshot
// (state, wait channel, futex edges): fills the dump's main_state and deadlock_cycle.
void ClassifyMainThread(ThreadDump* dump);

}  // namespace looptrace
