# HotSpot JVMs started with no flags (how production JVMs run): no probe can bound the AWT
# event dispatch thread's events, so its messages are bounded by where it waits. BPF walks
# its Java frames at each switch-out (from the layouts HotSpot exports, gHotSpotVMStructs);
# a switch-out parked in java.awt.EventQueue.getNextEvent is the wait for the next event and
# ends a message, the wake-up from it begins the next. Waits inside an event (Thread.sleep, a
# lock, I/O in a listener) end nothing; events dispatched back to back without a wait are
# one message. Each message is named by the first frame of the program's own code its
# samples find (the runnable, the lambda, the listener: EdtApp.lambda$main$2).
# Picked instead of jvm when the JVM runs without -XX:+DTraceMethodProbes; jvm stays the
# exact mode (one message per EventQueue.dispatchEvent) when the flag is on.
profile jvm-edt
description HotSpot JVM, no flags: event dispatch thread messages bounded by its waits in EventQueue.getNextEvent, GC pauses
runtime jvm
thread loop "AWT-EventQueue-*"
messages wait-bounded java.awt.EventQueue.getNextEvent jdk.internal.misc.Unsafe.park sun.misc.Unsafe.park
probe gc.begin        usdt libjvm.so hotspot:gc__begin full=arg1
probe gc.end          usdt libjvm.so hotspot:gc__end
