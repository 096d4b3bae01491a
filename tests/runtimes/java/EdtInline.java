// A headless AWT program whose slow event runs JIT-compiled code with a method inlined into
// it: slowEvent (interpreted: it runs once) calls work, which calls stage, a method of a few
// bytecodes that HotSpot's compilers inline into work, which calls burn, the loop the time is
// spent in. work is called tens of thousands of times before the event (30 us each, so that
// the compiled code has seen every path the event takes and is not thrown away at it), so
// by then it is compiled, stage inside it. A sample of the event must still show
// work -> stage -> burn, each at the line it is at: a walker that names a compiled frame by
// its nmethod's own method loses stage.
//
//   java -Djava.awt.headless=true -cp DIR EdtInline --truth FILE [--warmup CALLS]
//
// Truth lines: {"type":"event","name":"EdtInline.slowEvent",...}, one "method" line for
// EdtInline.burn with begin_ns and end_ns (System.nanoTime(), CLOCK_MONOTONIC), and one
// "line" line for each of EdtInline.work and EdtInline.stage: the line of its call to the
// next method, from the JVM's own stack trace of a call the program made at its start.
import java.awt.EventQueue;
import java.io.FileWriter;
import java.io.PrintWriter;

public class EdtInline {
  static volatile int finished;
  static long sink;
  static long burnBegin, burnEnd;
  static StackTraceElement[] callers;  // burn's callers, from its first call

  // The loop the event's time is spent in; `ns` < 0 records the stack it was called from.
  static long burn(long ns) {
    if (ns < 0) {
      callers = new Throwable().getStackTrace();
      return 0;
    }
    long b = System.nanoTime();
    long end = b + ns, x = 0;
    do {
      for (int i = 0; i < 20_000; ++i) x += (i * 31L) ^ (x >>> 3);
    } while (System.nanoTime() < end);
    burnBegin = b;
    burnEnd = System.nanoTime();
    return x;
  }

  static void stage(long ns) {
    sink += burn(ns);
  }

  static void work(long ns) {
    stage(ns);
    sink++;
  }

  // Computes 200 ms in burn, under work and stage: one event, one slow message.
  static void slowEvent() {
    long b = System.nanoTime();
    work(200_000_000L);
    long e = System.nanoTime();
    eventBegin = b;
    eventEnd = e;
    finished++;
  }

  static long eventBegin, eventEnd;

  static void tick() {
    finished++;
  }

  // Posts `task` and waits until it ran, polling (waiting on a lock would add the waiting
  // thread's notification to the event).
  static void post(Runnable task) throws InterruptedException {
    final int before = finished;
    EventQueue.invokeLater(task);
    while (finished == before) Thread.sleep(1);
  }

  public static void main(String[] args) throws Exception {
    String truthPath = null;
    int warmup = 20000;
    for (int i = 0; i < args.length; ++i) {
      if (args[i].equals("--truth")) truthPath = args[++i];
      else if (args[i].equals("--warmup")) warmup = Integer.parseInt(args[++i]);
    }
    work(-1);  // interpreted: the stack trace has every frame at its line
    post(EdtInline::tick);
    for (int i = 0; i < warmup; ++i) work(30_000);  // a few rounds of burn's loop each
    // The session finds the event dispatch thread by its name (it looks every half second)
    // and the compiler finishes what the warm-up queued.
    for (long end = System.nanoTime() + 1_500_000_000L; System.nanoTime() < end; ) {
      post(EdtInline::tick);
      Thread.sleep(50);
    }
    post(EdtInline::slowEvent);
    for (int i = 0; i < 4; ++i) {  // the thread waits for its next event again: the message ends
      Thread.sleep(50);
      post(EdtInline::tick);
    }
    try (PrintWriter out = new PrintWriter(new FileWriter(truthPath))) {
      out.println("{\"type\":\"event\",\"name\":\"EdtInline.slowEvent\",\"begin_ns\":" + eventBegin + ",\"end_ns\":"
          + eventEnd + "}");
      out.println("{\"type\":\"method\",\"name\":\"EdtInline.burn\",\"begin_ns\":" + burnBegin + ",\"end_ns\":"
          + burnEnd + "}");
      for (StackTraceElement caller : callers) {
        String method = caller.getClassName() + "." + caller.getMethodName();
        if (method.equals("EdtInline.work") || method.equals("EdtInline.stage"))
          out.println("{\"type\":\"line\",\"name\":\"" + method + "\",\"file\":\"" + caller.getFileName()
              + "\",\"line\":" + caller.getLineNumber() + "}");
      }
    }
    System.exit(0);
  }
}
