#include "loader/runtimes/jvm/thread_state.h"

namespace looptrace::loader::jvm {
namespace {

// JVMTI's thread state bits (jvmti.h), the ones java.lang.Thread.State is made of.
constexpr int32_t kAlive = 0x0001, kTerminated = 0x0002, kRunnable = 0x0004;
constexpr int32_t kWaitingIndefinitely = 0x0010, kWaitingWithTimeout = 0x0020, kSleeping = 0x0040;
constexpr int32_t kInObjectWait = 0x0100, kParked = 0x0200, kBlockedOnMonitorEnter = 0x0400;

}  // namespace

std::string StateFromThreadStatus(int32_t status) {
  if (status & kTerminated) return "TERMINATED";
  if (!(status & kAlive)) return status == 0 ? "NEW" : "";
  if (status & kRunnable) return "RUNNABLE";
  if (status & kBlockedOnMonitorEnter) return "BLOCKED (on object monitor)";
  std::string state;
  if (status & kWaitingWithTimeout)
    state = "TIMED_WAITING";
  else if (status & kWaitingIndefinitely)
    state = "WAITING";
  else
    return "RUNNABLE";  // alive, nothing else said: what Thread.getState() answers
  if (status & kSleeping) return state + " (sleeping)";
  if (status & kInObjectWait) return state + " (on object monitor)";
  if (status & kParked) return state + " (parking)";
  return state;
}

std::string StateFromVm(int64_t thread_state, std::string_view innermost, const VmThreadStates& s) {
  // Odd values are the transitions out of the even state below them (_thread_in_vm_trans...).
  const int64_t base = thread_state & ~int64_t{1};
  if (base == s.in_java || base == s.in_vm || base == s.in_native) return "RUNNABLE";
  if (thread_state == s.new_thread) return "NEW";
  if (base != s.blocked) return "";
  if (innermost.starts_with("java.lang.Thread.sleep")) return "TIMED_WAITING (sleeping)";
  if (innermost.starts_with("java.lang.Object.wait")) return "WAITING (on object monitor)";
  if (innermost == "jdk.internal.misc.Unsafe.park" || innermost == "sun.misc.Unsafe.park") return "WAITING (parking)";
  return "BLOCKED (on object monitor)";
}

}  // namespace looptrace::loader::jvm
