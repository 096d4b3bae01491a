# HotSpot JVMs started with no flags, serving from a thread pool (how most Java services run:
# Executors' fixed, cached, single-thread and scheduled pools, whose workers the JDK names
# pool-N-thread-M). Each task a worker runs is a message, bounded by where it waits: a
# switch-out parked (Unsafe.park) under java.util.concurrent.ThreadPoolExecutor.getTask is the
# wait for the next task (the queue's take or poll, a scheduled pool's delay) and ends a
# message; the wake-up from it begins the next. Waits inside a task (Thread.sleep, a lock,
# I/O) end nothing; tasks run back to back without a wait are one message. Each message is
# named by the first frame of the program's own code its samples find (the task's lambda,
# runnable or callable: Service.handle). One worker is watched: the first pool-* thread
# found; --threads loop:NAME watches another. Monitor contention as in jvm-edt.
# Picked instead of jvm-edt (record -p) when the JVM has a pool-* thread and no AWT event
# dispatch thread; --profile jvm-executor otherwise.
profile jvm-executor
description HotSpot JVM, no flags: a thread pool worker's tasks bounded by its waits in ThreadPoolExecutor.getTask, GC pauses, monitor contention
runtime jvm
thread loop "pool-*"
messages wait-bounded java.util.concurrent.ThreadPoolExecutor.getTask jdk.internal.misc.Unsafe.park sun.misc.Unsafe.park
probe gc.begin        usdt libjvm.so hotspot:gc__begin full=arg1
probe gc.end          usdt libjvm.so hotspot:gc__end
optional probe lock.wait.begin uprobe    libjvm.so "ObjectMonitor::EnterI(JavaThread*)" monitor=arg1
optional probe lock.wait.end   uretprobe libjvm.so "ObjectMonitor::EnterI(JavaThread*)"
optional probe lock.release    uprobe    libjvm.so "ObjectMonitor::ExitEpilog(JavaThread*, ObjectWaiter*)" monitor=arg1
# The same functions as newer JDKs name them (Temurin 25).
optional probe lock.wait.begin uprobe    libjvm.so "ObjectMonitor::enter_internal(JavaThread*)" monitor=arg1
optional probe lock.wait.end   uretprobe libjvm.so "ObjectMonitor::enter_internal(JavaThread*)"
optional probe lock.release    uprobe    libjvm.so "ObjectMonitor::exit_epilog(JavaThread*, ObjectWaiter*)" monitor=arg1
