# HotSpot JVMs started with no flags (how production JVMs run): no probe can bound the AWT
# event dispatch thread's events, so its messages are bounded by where it waits. BPF walks
# its Java frames at each switch-out (from the layouts HotSpot exports, gHotSpotVMStructs);
# a switch-out parked in java.awt.EventQueue.getNextEvent is the wait for the next event and
# ends a message, the wake-up from it begins the next. Waits inside an event (Thread.sleep, a
# lock, I/O in a listener) end nothing; events dispatched back to back without a wait are
# one message. Each message is named by the first frame of the program's own code its
# samples find (the runnable, the lambda, the listener: EdtApp.lambda$main$2).
# Monitor contention without -XX:+DTraceMonitorProbes, from libjvm.so's own lock code (its
# symbol table keeps these local functions): ObjectMonitor::EnterI runs only when a thread
# must queue for a contended synchronized monitor (after enter's first spin; never on the
# fast path), from its entry to its return; ObjectMonitor::ExitEpilog runs only when the
# exiting owner hands the monitor to a queued thread, the release that names the holder.
# Object.wait() re-enters through ReenterI (not probed): a wait, not contention. What needs
# the flag still: the monitor's object class (the USDT probe passes it).
# Picked instead of jvm when the JVM runs without -XX:+DTraceMethodProbes; jvm stays the
# exact mode (one message per EventQueue.dispatchEvent) when the flag is on.
profile jvm-edt
description HotSpot JVM, no flags: event dispatch thread messages bounded by its waits in EventQueue.getNextEvent, GC pauses, monitor contention
runtime jvm
thread loop "AWT-EventQueue-*"
messages wait-bounded java.awt.EventQueue.getNextEvent jdk.internal.misc.Unsafe.park sun.misc.Unsafe.park
probe gc.begin        usdt libjvm.so hotspot:gc__begin full=arg1
probe gc.end          usdt libjvm.so hotspot:gc__end
optional probe lock.wait.begin uprobe    libjvm.so "ObjectMonitor::EnterI(JavaThread*)" monitor=arg1
optional probe lock.wait.end   uretprobe libjvm.so "ObjectMonitor::EnterI(JavaThread*)"
optional probe lock.release    uprobe    libjvm.so "ObjectMonitor::ExitEpilog(JavaThread*, ObjectWaiter*)" monitor=arg1
# The same functions as newer JDKs name them (Temurin 25).
optional probe lock.wait.begin uprobe    libjvm.so "ObjectMonitor::enter_internal(JavaThread*)" monitor=arg1
optional probe lock.wait.end   uretprobe libjvm.so "ObjectMonitor::enter_internal(JavaThread*)"
optional probe lock.release    uprobe    libjvm.so "ObjectMonitor::exit_epilog(JavaThread*, ObjectWaiter*)" monitor=arg1
