# HotSpot JVMs (OpenJDK) through libjvm.so's USDT probes. The java launcher loads libjvm.so
# with dlopen; looptrace finds it in JAVA_HOME/lib/server. One message per AWT/Swing event
# the event dispatch thread dispatches (java.awt.EventQueue.dispatchEvent: input events,
# repaints, invokeLater/invokeAndWait runnables; headless too), every Java method as a
# method beat (pkg.Class.method(sig)), GC pauses and monitor contention (with the thread
# that held the monitor) as stall causes.
# Method probes need the JVM started with -XX:+DTraceMethodProbes, monitor probes with
# -XX:+DTraceMonitorProbes; looptrace checks the flags and says so when they are off.
profile jvm
description HotSpot JVM (USDT, java -XX:+DTraceMethodProbes): event dispatch thread messages, Java method beats, GC pauses, monitor contention
runtime jvm
# The event dispatch thread (AWT-EventQueue-0) is not the main thread.
thread loop "AWT-EventQueue-*"
# Strings are length-delimited (char* + length): class, method name, signature.
probe dispatch.begin  usdt libjvm.so hotspot:method__entry  if arg4:str(arg5) == "dispatchEvent" && arg2:str(arg3) == "java/awt/EventQueue"
probe dispatch.end    usdt libjvm.so hotspot:method__return if arg4:str(arg5) == "dispatchEvent" && arg2:str(arg3) == "java/awt/EventQueue"
probe method.enter    usdt libjvm.so hotspot:method__entry  class=arg2:str(arg3) name=arg4:str(arg5) sig=arg6:str(arg7)
probe method.exit     usdt libjvm.so hotspot:method__return class=arg2:str(arg3) name=arg4:str(arg5) sig=arg6:str(arg7)
probe gc.begin        usdt libjvm.so hotspot:gc__begin full=arg1
probe gc.end          usdt libjvm.so hotspot:gc__end
probe lock.wait.begin usdt libjvm.so hotspot:monitor__contended__enter   monitor=arg2 class=arg3:str(arg4)
probe lock.wait.end   usdt libjvm.so hotspot:monitor__contended__entered monitor=arg2
probe lock.release    usdt libjvm.so hotspot:monitor__contended__exit    monitor=arg2
