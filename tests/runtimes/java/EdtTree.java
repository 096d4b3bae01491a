// A headless AWT program for the sampled call tree of a slow event on a JVM started with no
// flags: one slow runnable (slowEvent) computes in parse(), sleeps in pause() (Thread.sleep)
// and computes in render(), each method its own frame. Every part records its begin and end
// (System.nanoTime(), CLOCK_MONOTONIC on Linux: the clock looptrace reports in); the truth is
// written by the main thread at the end, so writing it is no part of the event.
//
//   java -Djava.awt.headless=true [-Xint] -cp DIR EdtTree --truth FILE [--warmup CALLS]
//        [--ready FILE]
//   --warmup CALLS: parse and render are each called that many times (with little work) on
//                   the main thread before the slow event, pause a tenth as often, so that
//                   HotSpot has JIT-compiled them by then (3000 by default; 0: none)
//   --ready FILE: written (with the pid) once the event dispatch thread runs; the slow event
//                 waits for FILE.go to exist (a session attached meanwhile), at most 60 s
//
// Truth lines: {"type":"event","name":"EdtTree.slowEvent",...} and one "method" line for each
// of EdtTree.parse, EdtTree.pause and EdtTree.render, with begin_ns and end_ns.
import java.awt.EventQueue;
import java.io.File;
import java.io.FileWriter;
import java.io.PrintWriter;

public class EdtTree {
  static volatile int finished;
  static long sink;

  // The parts' last calls (the slow event's, once it ran), written by the thread that calls
  // them and read by the main thread after the slow event (`finished` orders them): plain
  // stores, the same at every call, so the warm-up compiled the path the event takes.
  static final String[] NAMES = {"EdtTree.slowEvent", "EdtTree.parse", "EdtTree.pause", "EdtTree.render"};
  static final long[] BEGINS = new long[NAMES.length], ENDS = new long[NAMES.length];

  static void record(int part, long begin) {
    ENDS[part] = System.nanoTime();
    BEGINS[part] = begin;
  }

  // parse and render burn the CPU in their own loop (no helper a compiler would inline into
  // them), reading the clock only now and then: a sample in the clock's code called from a
  // JIT-compiled frame has no Java frame to walk from.
  static void parse(long ns) {
    long b = System.nanoTime();
    long end = b + ns, x = 0;
    do {
      for (int i = 0; i < 20_000; ++i) x += (i * 31L) ^ (x >>> 3);
    } while (System.nanoTime() < end);
    sink += x;
    record(1, b);
  }

  static void pause(long ms) {
    long b = System.nanoTime();
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    record(2, b);
  }

  static void render(long ns) {
    long b = System.nanoTime();
    long end = b + ns, x = 0;
    do {
      for (int i = 0; i < 20_000; ++i) x += (i * 37L) ^ (x >>> 5);
    } while (System.nanoTime() < end);
    sink += x;
    record(3, b);
  }

  // Computes 80 ms, sleeps 100 ms, computes 80 ms: one event, one message, one slow one.
  static void slowEvent() {
    long b = System.nanoTime();
    parse(80_000_000L);
    pause(100);
    render(80_000_000L);
    record(0, b);
    finished++;
  }

  static void tick() {
    finished++;
  }

  // Posts `work` and waits until it ran, polling: waiting on a lock would add the waiting
  // thread's notification to the event.
  static void post(Runnable work) throws InterruptedException {
    final int before = finished;
    EventQueue.invokeLater(work);
    while (finished == before) Thread.sleep(1);
  }

  // A tick every 50 ms for `ms`: the session finds the thread by its name (it looks every half
  // second) and sees it wait for its next event.
  static void ticks(long ms) throws InterruptedException {
    for (long end = System.nanoTime() + ms * 1_000_000L; System.nanoTime() < end;) {
      post(EdtTree::tick);
      Thread.sleep(50);
    }
  }

  public static void main(String[] args) throws Exception {
    String truthPath = null, readyPath = null;
    int warmup = 3000;
    for (int i = 0; i < args.length; ++i) {
      if (args[i].equals("--truth")) truthPath = args[++i];
      else if (args[i].equals("--ready")) readyPath = args[++i];
      else if (args[i].equals("--warmup")) warmup = Integer.parseInt(args[++i]);
    }
    post(EdtTree::tick);  // the event dispatch thread exists from here on
    // Each loop runs its inner loop at every call: the compiled code has seen all its paths.
    // pause() is called a tenth as often (Thread.sleep(0) yields the CPU, which takes
    // milliseconds on a busy machine): still above the 200 calls HotSpot compiles a method at.
    for (int i = 0; i < warmup; ++i) {
      parse(0);
      render(0);
      if (i % 10 == 0) pause(0);
    }
    if (readyPath != null) {
      try (PrintWriter ready = new PrintWriter(new FileWriter(readyPath))) {
        ready.println(ProcessHandle.current().pid());
      }
      File go = new File(readyPath + ".go");
      for (long end = System.nanoTime() + 60_000_000_000L; !go.exists() && System.nanoTime() < end;) ticks(50);
    }
    ticks(1500);  // and the compiler finishes what the warm-up queued
    post(EdtTree::slowEvent);
    for (int i = 0; i < 4; ++i) {  // the thread waits for its next event again: the message ends
      Thread.sleep(50);
      post(EdtTree::tick);
    }
    try (PrintWriter out = new PrintWriter(new FileWriter(truthPath))) {
      for (int i = 0; i < NAMES.length; ++i)
        out.println("{\"type\":\"" + (i == 0 ? "event" : "method") + "\",\"name\":\"" + NAMES[i]
            + "\",\"begin_ns\":" + BEGINS[i] + ",\"end_ns\":" + ENDS[i] + "}");
    }
    System.exit(0);
  }
}
