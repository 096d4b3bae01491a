// A Java thread's state in jstack's words ("RUNNABLE", "TIMED_WAITING (sleeping)",
// "BLOCKED (on object monitor)"), as `java.lang.Thread.State:` lines print them.
//
// jstack reads java.lang.Thread's threadStatus (JVMTI state bits, which the VM keeps for the
// thread's Java-level state); that field is read from the heap when the JVM lets us
// (java_objects.h). Otherwise the state comes from the VM's own JavaThread::_thread_state
// (VMStructs) and the thread's innermost Java frame:
//   _thread_in_Java, _thread_in_vm, _thread_in_native (and their transitions) -> RUNNABLE
//     (a thread in native code, reading a socket say, is RUNNABLE to jstack too);
//   _thread_blocked, innermost frame java.lang.Thread.sleep*         -> TIMED_WAITING (sleeping)
//                    java.lang.Object.wait*                          -> WAITING (on object monitor)
//                    jdk.internal.misc.Unsafe.park, sun.misc.Unsafe.park -> WAITING (parking)
//                    any other frame (it waits to enter a monitor)   -> BLOCKED (on object monitor)
//   (the VM state cannot tell a timed wait or park from an untimed one: WAITING then);
//   _thread_new                                                      -> NEW.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace looptrace::loader::jvm {

// The JVM's thread state constants (HotSpot exports them; JDK 17's values by default).
struct VmThreadStates {
  int64_t new_thread = 2, in_native = 4, in_vm = 6, in_java = 8, blocked = 10;
};

// From java.lang.Thread's threadStatus (JVMTI_THREAD_STATE_* bits); "" when it says nothing.
std::string StateFromThreadStatus(int32_t thread_status);

// From JavaThread::_thread_state and the thread's innermost Java method
// ("java.lang.Thread.sleep", no line; "" when it has none); "" for a state it does not know.
std::string StateFromVm(int64_t thread_state, std::string_view innermost_method, const VmThreadStates& states);

}  // namespace looptrace::loader::jvm
