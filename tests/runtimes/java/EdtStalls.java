// A headless AWT program whose event dispatch thread stalls in known ways, for looptrace's
// flagless JVM tests (no -XX flags: monitor contention from libjvm.so's own lock code, thread
// states and Java frames in stall snapshots). Each event posted to the EventQueue records its
// begin and end (System.nanoTime(), CLOCK_MONOTONIC on Linux: the clock looptrace reports in);
// the truth is written by the main thread at the end, so writing it is no part of any event.
//
//   java -Djava.awt.headless=true -cp DIR EdtStalls --scenario S --truth FILE [--ready FILE]
//        [--stuck-ms MS]
//   scenarios:
//     lock        the event waits for a monitor the "monitor-holder-thread" holds (300 ms);
//                 truth: the wait (begin at the synchronized statement, end when it got it)
//     wait        the event calls Object.wait on a monitor it owns; a "notifier" thread
//                 notifies it and keeps the monitor 50 ms more: a wait, not contention
//     uncontended the event enters a monitor nobody else wants 2,000,000 times
//     stuck       the event sleeps --stuck-ms (1500 ms); truth: the source line it sleeps on
//   --ready FILE: written (with the pid) once the event dispatch thread runs; the stalls wait
//                 for FILE.go to exist (a session attached meanwhile), at most 60 s
import java.awt.EventQueue;
import java.io.File;
import java.io.FileWriter;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;

public class EdtStalls {
  static final Object LOCK = new Object();
  static final Object SIGNAL = new Object();
  static final List<String> TRUTH = new ArrayList<>();  // guarded by itself
  static volatile int finished;
  static long sink;
  static long stuckMs = 1500;

  static void truth(String line) {
    synchronized (TRUTH) {
      TRUTH.add(line);
    }
  }

  static String span(String type, long begin, long end) {
    return "{\"type\":\"" + type + "\",\"begin_ns\":" + begin + ",\"end_ns\":" + end + "}";
  }

  static void spin(long ms) {
    long end = System.nanoTime() + ms * 1_000_000L;
    long x = 0;
    while (System.nanoTime() < end) {
      for (int i = 0; i < 20_000; ++i) x += (i * 31L) ^ (x >>> 3);
    }
    sink = x;
  }

  static void contended() {
    long b = System.nanoTime();
    long got;
    synchronized (LOCK) {
      got = System.nanoTime();
      spin(5);
    }
    truth(span("lock_wait", b, got));
    truth(span("event", b, System.nanoTime()));
  }

  static void waits() {
    long b = System.nanoTime();
    synchronized (SIGNAL) {
      Thread notifier = new Thread(() -> {
        synchronized (SIGNAL) {
          SIGNAL.notifyAll();
          spin(50);  // the waiter reacquires the monitor only after this
        }
      }, "notifier");
      notifier.start();
      try {
        SIGNAL.wait(5000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    truth(span("event", b, System.nanoTime()));
  }

  static void uncontended() {
    long b = System.nanoTime();
    long x = 0;
    for (int i = 0; i < 2_000_000; ++i) {
      synchronized (LOCK) {
        x += i;
      }
    }
    sink = x;
    truth(span("event", b, System.nanoTime()));
  }

  static void stuck() {
    long b = System.nanoTime();
    try {
      int line = new Throwable().getStackTrace()[0].getLineNumber(); Thread.sleep(stuckMs);
      truth("{\"type\":\"stuck\",\"line\":" + line + "}");
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    truth(span("event", b, System.nanoTime()));
  }

  // Posts `work` and waits until it ran, polling: waiting on a lock would add the waiting
  // thread's notification to the event.
  static void post(Runnable work) throws InterruptedException {
    final int before = finished;
    EventQueue.invokeLater(() -> {
      work.run();
      finished = before + 1;
    });
    while (finished == before) Thread.sleep(1);
  }

  public static void main(String[] args) throws Exception {
    String scenario = null, truthPath = null, readyPath = null;
    for (int i = 0; i < args.length; ++i) {
      if (args[i].equals("--scenario")) scenario = args[++i];
      else if (args[i].equals("--truth")) truthPath = args[++i];
      else if (args[i].equals("--ready")) readyPath = args[++i];
      else if (args[i].equals("--stuck-ms")) stuckMs = Long.parseLong(args[++i]);
    }
    post(() -> spin(1));  // the event dispatch thread exists from here on
    if (readyPath != null) {
      try (PrintWriter ready = new PrintWriter(new FileWriter(readyPath))) {
        ready.println(ProcessHandle.current().pid());
      }
      File go = new File(readyPath + ".go");
      for (long end = System.nanoTime() + 60_000_000_000L; !go.exists() && System.nanoTime() < end;) {
        post(() -> spin(1));
        Thread.sleep(50);
      }
    }
    // Events every 50 ms for 1.5 s: the session finds the thread by its name (it looks every
    // half second) and sees it wait for its next event before the stall.
    for (long end = System.nanoTime() + 1_500_000_000L; System.nanoTime() < end;) {
      post(() -> spin(1));
      Thread.sleep(50);
    }
    switch (scenario) {
      case "lock": {
        CountDownLatch held = new CountDownLatch(1);  // the event waits only once the holder holds
        Thread holder = new Thread(() -> {
          synchronized (LOCK) {
            held.countDown();
            spin(300);
          }
        }, "monitor-holder-thread");
        holder.start();
        held.await();
        post(EdtStalls::contended);
        holder.join();
        break;
      }
      case "wait":
        post(EdtStalls::waits);
        break;
      case "uncontended":
        post(EdtStalls::uncontended);
        break;
      case "stuck":
        post(EdtStalls::stuck);
        break;
      default:
        throw new IllegalArgumentException("unknown scenario " + scenario);
    }
    // The thread waits for its next event again (the message ends there), a few times.
    for (int i = 0; i < 4; ++i) {
      Thread.sleep(50);
      post(() -> spin(1));
    }
    Thread.sleep(100);
    try (PrintWriter out = new PrintWriter(new FileWriter(truthPath))) {
      synchronized (TRUTH) {
        for (String line : TRUTH) out.println(line);
      }
    }
    System.exit(0);
  }
}
