// A headless AWT program for looptrace's flagless event-dispatch messages: it posts events of
// known durations straight to the EventQueue (method references, so each event's code is a
// method of its own: the name its message must get) and waits between them, so the event
// dispatch thread waits for each one in EventQueue.getNextEvent. One event sleeps in its
// middle: a wait inside an event, which must not split its message. Each event records its
// begin and end (System.nanoTime(), CLOCK_MONOTONIC on Linux: the clock looptrace reports in);
// the truth is written by the main thread at the end, so writing it is no part of any event.
//
//   java -Djava.awt.headless=true -cp DIR EdtWaits --truth FILE [--ready FILE] [--warmup MS]
//        [--rounds N]
//   --ready FILE: written (with the pid) once the event dispatch thread runs
//   --warmup MS: a tick event every 50 ms for that long first (the thread stays alive and
//                looptrace finds it by name before the measured events)
import java.awt.EventQueue;
import java.io.FileWriter;
import java.io.IOException;
import java.io.PrintWriter;

public class EdtWaits {
  static volatile int finished;

  static long sink;

  // Burns the CPU in Java code (a clock read only now and then: a sample taken inside the
  // clock's native code has no Java frame to name the event by).
  static void spin(long ms) {
    long end = System.nanoTime() + ms * 1_000_000L;
    long x = 0;
    while (System.nanoTime() < end) {
      for (int i = 0; i < 20_000; ++i) x += (i * 31L) ^ (x >>> 3);
    }
    sink = x;
  }

  static String line(String name, long begin, long end) {
    return "{\"type\":\"event\",\"name\":\"" + name + "\",\"begin_ns\":" + begin + ",\"end_ns\":" + end + "}";
  }

  static volatile boolean measuring;
  // Written by the event dispatch thread only, read by the main thread after the last event
  // (`finished` orders them): plain stores, nothing for the event's end to link or load.
  static final String[] NAMES = new String[64];
  static final long[] BEGINS = new long[64], ENDS = new long[64];
  static int events;

  static void event(String name, long begin) {
    long end = System.nanoTime();
    if (measuring && events < NAMES.length) {
      NAMES[events] = name;
      BEGINS[events] = begin;
      ENDS[events++] = end;
    }
    finished++;  // only the event dispatch thread writes it
  }

  static void tick() {
    finished++;
  }

  static void computeShort() {
    long b = System.nanoTime();
    spin(20);
    event("EdtWaits.computeShort", b);
  }

  static void computeLong() {
    long b = System.nanoTime();
    spin(60);
    event("EdtWaits.computeLong", b);
  }

  // Computes, sleeps, computes: one event, one message.
  static void sleepInside() {
    long b = System.nanoTime();
    spin(15);
    try {
      Thread.sleep(40);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    spin(15);
    event("EdtWaits.sleepInside", b);
  }

  // Posts `work` and waits until it ran, polling: waiting on a lock would add the waiting
  // thread's notification to the event.
  static void post(Runnable work) throws InterruptedException {
    final int before = finished;
    EventQueue.invokeLater(work);
    while (finished == before) Thread.sleep(1);
  }

  public static void main(String[] args) throws Exception {
    String truthPath = null, readyPath = null;
    long warmupMs = 1500;
    int rounds = 2;
    for (int i = 0; i < args.length; ++i) {
      if (args[i].equals("--truth")) truthPath = args[++i];
      else if (args[i].equals("--ready")) readyPath = args[++i];
      else if (args[i].equals("--warmup")) warmupMs = Long.parseLong(args[++i]);
      else if (args[i].equals("--rounds")) rounds = Integer.parseInt(args[++i]);
    }
    post(EdtWaits::tick);  // the event dispatch thread exists from here on
    if (readyPath != null) {
      try (PrintWriter ready = new PrintWriter(new FileWriter(readyPath))) {
        ready.println(ProcessHandle.current().pid());
      }
    }
    for (long end = System.nanoTime() + warmupMs * 1_000_000L; System.nanoTime() < end;) {
      post(EdtWaits::tick);
      Thread.sleep(50);
    }
    // One round unmeasured first: whatever the events' first run loads or links is done.
    for (int round = -1; round < rounds; ++round) {
      measuring = round >= 0;
      for (Runnable work : new Runnable[] {EdtWaits::computeShort, EdtWaits::computeLong, EdtWaits::sleepInside}) {
        post(work);
        Thread.sleep(50);  // the thread waits for the next event
      }
    }
    try (PrintWriter out = new PrintWriter(new FileWriter(truthPath))) {
      for (int i = 0; i < events; ++i) out.println(line(NAMES[i], BEGINS[i], ENDS[i]));
    }
    System.exit(0);
  }
}
