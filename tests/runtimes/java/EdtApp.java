// A headless AWT program that knows its own truth, for looptrace's JVM tests.
//
// Runnables posted with EventQueue.invokeLater run on the event dispatch thread
// ("AWT-EventQueue-0"); each records its begin and end (System.nanoTime(), CLOCK_MONOTONIC on
// Linux: the clock looptrace reports in), and the slow one also the methods it calls, named as
// looptrace prints Java methods. Truth lines are kept in memory and written by the main
// thread at the end, so writing them is no part of any event.
//
//   java -Djava.awt.headless=true -XX:+DTraceMethodProbes [-XX:+DTraceMonitorProbes] \
//        -cp DIR EdtApp --scenario S --truth FILE [--start-delay MS]
//   scenarios: slow (quick runnables and a slow one), gc (System.gc() inside a slow runnable),
//              lock (the EDT waits for a monitor the "lock-holder" thread holds),
//              forever (a quick runnable every 20 ms until killed),
//              busy (--calls N small method calls on the EDT; prints their CPU and wall time),
//              work (--calls N steps of a multiply chain on the EDT, printed as busy prints)
//   --start-delay MS: wait before posting anything (for `looptrace record -p`)
import java.awt.EventQueue;
import java.io.FileWriter;
import java.io.IOException;
import java.io.PrintWriter;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;

public class EdtApp {
  static final ConcurrentLinkedQueue<String> TRUTH = new ConcurrentLinkedQueue<>();
  static final Object LOCK = new Object();
  static PrintWriter out;

  static void flush() {
    if (out == null) return;
    for (String line; (line = TRUTH.poll()) != null;) out.println(line);
    out.flush();
  }

  static void spin(long ms) {
    long end = System.nanoTime() + ms * 1_000_000L;
    while (System.nanoTime() < end) {
    }
  }

  static void method(String name, int depth, long begin, long end) {
    TRUTH.add("{\"type\":\"method\",\"name\":\"" + name + "\",\"depth\":" + depth + ",\"begin_ns\":" + begin
        + ",\"end_ns\":" + end + "}");
  }

  static void callback(String name, long begin, long end) {
    TRUTH.add("{\"type\":\"callback\",\"name\":\"" + name + "\",\"begin_ns\":" + begin + ",\"end_ns\":" + end + "}");
  }

  static void parseRecords(int ms) {
    spin(ms);
  }

  static void renderRows(int ms) {
    spin(ms / 2);
    long b = System.nanoTime();
    parseRecords(ms / 2);
    method("EdtApp.parseRecords(I)V", 2, b, System.nanoTime());
  }

  static void waitForDisk(int ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  static void slowWork() {
    long b = System.nanoTime();
    renderRows(40);
    method("EdtApp.renderRows(I)V", 1, b, System.nanoTime());
    b = System.nanoTime();
    waitForDisk(30);
    method("EdtApp.waitForDisk(I)V", 1, b, System.nanoTime());
  }

  static int small(int x) {
    return x + 1;
  }

  // The benchmark: `calls` small method calls on the EDT; its CPU time (a probe's trap is
  // charged to the thread) and wall time.
  static void busy(int calls) {
    java.lang.management.ThreadMXBean bean = java.lang.management.ManagementFactory.getThreadMXBean();
    long cpu = bean.getCurrentThreadCpuTime();
    long wall = System.nanoTime();
    int total = 0;
    for (int i = 0; i < calls; ++i) total = small(total);
    cpu = bean.getCurrentThreadCpuTime() - cpu;
    wall = System.nanoTime() - wall;
    System.out.println("busy " + total + " calls " + cpu + " ns cpu " + wall + " ns wall");
  }

  static long step(long x, int i) {
    return x * 6364136223846793005L + i;
  }

  // The sampling benchmark: `calls` steps of a multiply chain the JIT cannot fold away (busy's
  // calls it can), printed as busy prints.
  static void work(int calls) {
    java.lang.management.ThreadMXBean bean = java.lang.management.ManagementFactory.getThreadMXBean();
    long cpu = bean.getCurrentThreadCpuTime();
    long wall = System.nanoTime();
    long x = 1;
    for (int i = 0; i < calls; ++i) x = step(x, i);
    cpu = bean.getCurrentThreadCpuTime() - cpu;
    wall = System.nanoTime() - wall;
    System.out.println("busy " + (x & 0xffff) + " calls " + cpu + " ns cpu " + wall + " ns wall");
  }

  static void quick() {
    long b = System.nanoTime();
    spin(1);
    callback("quick", b, System.nanoTime());
  }

  static void slow() {
    long b = System.nanoTime();
    slowWork();
    callback("slow", b, System.nanoTime());
  }

  static void slowWithGc() {
    long b = System.nanoTime();
    spin(20);
    long g = System.nanoTime();
    System.gc();
    long e = System.nanoTime();
    spin(20);
    TRUTH.add("{\"type\":\"gc\",\"begin_ns\":" + g + ",\"end_ns\":" + e + "}");
    callback("slow_with_gc", b, System.nanoTime());
  }

  static void contended() {
    long b = System.nanoTime();
    long got;
    synchronized (LOCK) {
      got = System.nanoTime();
      spin(5);
    }
    TRUTH.add("{\"type\":\"lock_wait\",\"begin_ns\":" + b + ",\"end_ns\":" + got + ",\"holder\":\"lock-holder\"}");
    callback("contended", b, System.nanoTime());
  }

  static volatile int finished;

  // Posts `work` and waits until it ran, by polling: invokeAndWait (or a latch) would add the
  // notification of the waiting thread to the event.
  static void runOnEdt(Runnable work) throws InterruptedException {
    final int before = finished;
    EventQueue.invokeLater(() -> {
      work.run();
      finished = before + 1;
    });
    while (finished == before) Thread.sleep(1);
  }

  public static void main(String[] args) throws Exception {
    String scenario = "slow";
    long startDelay = 0;
    int calls = 1_000_000;
    for (int i = 0; i < args.length; ++i) {
      if (args[i].equals("--scenario")) scenario = args[++i];
      else if (args[i].equals("--truth")) out = new PrintWriter(new FileWriter(args[++i]));
      else if (args[i].equals("--start-delay")) startDelay = Long.parseLong(args[++i]);
      else if (args[i].equals("--calls")) calls = Integer.parseInt(args[++i]);
    }
    TRUTH.add("{\"type\":\"ready\",\"pid\":" + ProcessHandle.current().pid() + "}");
    flush();
    if (startDelay > 0) Thread.sleep(startDelay);
    // Warm up: the EDT exists and the classes are loaded before the measured work.
    runOnEdt(() -> spin(1));
    switch (scenario) {
      case "slow":
        for (int i = 0; i < 5; ++i) runOnEdt(EdtApp::quick);
        runOnEdt(EdtApp::slow);
        for (int i = 0; i < 5; ++i) runOnEdt(EdtApp::quick);
        break;
      case "gc":
        runOnEdt(EdtApp::slowWithGc);
        break;
      case "lock": {
        CountDownLatch held = new CountDownLatch(1);  // the EDT waits only once the holder holds
        Thread holder = new Thread(() -> {
          synchronized (LOCK) {
            held.countDown();
            spin(400);
          }
        }, "lock-holder");
        holder.start();
        held.await();
        runOnEdt(EdtApp::contended);
        holder.join();
        break;
      }
      case "busy": {
        final int n = calls;
        runOnEdt(() -> busy(n));
        break;
      }
      case "work": {
        final int n = calls;
        runOnEdt(() -> work(n));
        break;
      }
      case "forever":
        while (true) {
          runOnEdt(EdtApp::quick);
          flush();
          Thread.sleep(20);
        }
      default:
        throw new IllegalArgumentException("unknown scenario " + scenario);
    }
    flush();
    System.exit(0);
  }
}
