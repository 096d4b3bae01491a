// What the loader sees of the target process besides its probe hits, as plain data that
// both the event stream (tracers/event.h) and the report carry: the device block, signals
// sent to it, and stall snapshots of its threads.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace looptrace {

// Matrix's device block (DeviceUtil), read by the loader at session start.
struct DeviceInfo {
  std::string machine = "UN_KNOW";  // BEST / HIGH / MIDDLE / LOW / BAD / UN_KNOW by total RAM
  uint64_t mem_total_bytes = 0;     // "mem"
  uint64_t mem_available_kb = 0;    // "mem_free"
  double cpu_app_percent = 0;       // "cpu_app": process CPU share of all CPU time since boot
};

// A signal sent to the target (SIGQUIT: how Android's system_server declares an ANR).
struct SignalSent {
  uint64_t ts_ns = 0;
  int signal = 0;
  uint32_t target_tid = 0;
  uint32_t sender_pid = 0;
  uint32_t sender_tid = 0;
  std::string sender_comm;
  int result = 0;  // 0 = delivered (TRACE_SIGNAL_DELIVERED)
};

// One thread as a stall snapshot saw it.
struct ThreadSnapshot {
  uint32_t tid = 0;
  std::string name;
  char state = '?';                       // /proc state letter: R S D T Z ...
  uint64_t state_since_ns = 0;            // when it entered that state (0 = unknown)
  std::string wchan;                      // kernel wait channel
  std::string java_state;                 // a Java thread's state as jstack says it ("" = not one)
  uint64_t futex_address = 0;             // blocked in futex() on this address (0 = not)
  uint32_t futex_owner_tid = 0;           // owner of that futex when it is a pthread mutex (0 = unknown)
  std::vector<std::string> kernel_stack;  // at its last switch-out (or latest sample if running)
  std::vector<std::string> user_stack;    // frame-pointer walk, or DWARF unwinding; symbolized
  std::string user_stack_stop;            // why the user stack ends early ("" = at its outermost frame)
};

// Taken by the loader's watchdog while a message is still running past the LAG or ANR
// threshold: everything needed to say why the main thread is stuck, as data.
struct StallSnapshot {
  bool anr = false;  // false: LAG level
  uint64_t ts_ns = 0;
  uint32_t tid = 0;
  uint64_t message_begin_ns = 0;
  std::vector<ThreadSnapshot> threads;  // the stalled thread first
  double process_cpu_percent = -1;      // over the last seconds (-1 = unknown)
  uint64_t cpu_window_ns = 0;
  std::vector<std::pair<std::string, uint64_t>> memory_kb;  // /proc status Vm*/Rss* fields
  int priority = 0;  // /proc/PID/stat priority and nice (Matrix's processPriority/Nice)
  int nice = 0;
};

}  // namespace looptrace
