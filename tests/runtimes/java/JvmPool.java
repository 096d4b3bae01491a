// A JVM program serving from a thread pool, for looptrace's flagless thread-pool messages
// (tests/integration/runtime_jvm_pool_test.cc): the main thread hands tasks of known
// durations to a single-thread executor (method references, so each task's code is a method
// of its own: the name its message must get) and waits between them, so the pool's worker
// (pool-1-thread-1) waits for each one in ThreadPoolExecutor.getTask. One task sleeps in its
// middle: a wait inside a task, which must not split its message. Each task records its
// begin and end (System.nanoTime(), CLOCK_MONOTONIC on Linux: the clock looptrace reports in);
// the truth is written by the main thread at the end, so writing it is no part of any task.
//
//   java -cp DIR JvmPool --truth FILE [--ready FILE] [--warmup MS]
//   --ready FILE: written (with the pid) once the worker runs
//   --warmup MS: a tick task every 50 ms for that long first (looptrace attaches meanwhile)
import java.io.FileWriter;
import java.io.PrintWriter;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

public class JvmPool {
  static volatile int finished;
  static long sink;

  // Burns the CPU in Java code (a clock read only now and then: a sample taken inside the
  // clock's native code has no Java frame to name the task by).
  static void spin(long ms) {
    long end = System.nanoTime() + ms * 1_000_000L;
    long x = 0;
    while (System.nanoTime() < end) {
      for (int i = 0; i < 20_000; ++i) x += (i * 31L) ^ (x >>> 3);
    }
    sink = x;
  }

  static volatile boolean measuring;
  // Written by the worker only, read by the main thread after the last task (`finished`
  // orders them).
  static final String[] NAMES = new String[64];
  static final long[] BEGINS = new long[64], ENDS = new long[64];
  static int tasks;

  static void done(String name, long begin) {
    long end = System.nanoTime();
    if (measuring && tasks < NAMES.length) {
      NAMES[tasks] = name;
      BEGINS[tasks] = begin;
      ENDS[tasks++] = end;
    }
    finished++;  // only the worker writes it
  }

  static void tick() {
    finished++;
  }

  static void computeShort() {
    long b = System.nanoTime();
    spin(20);
    done("JvmPool.computeShort", b);
  }

  static void computeLong() {
    long b = System.nanoTime();
    spin(60);
    done("JvmPool.computeLong", b);
  }

  // Computes, sleeps, computes: one task, one message.
  static void sleepInside() {
    long b = System.nanoTime();
    spin(15);
    try {
      Thread.sleep(40);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    spin(15);
    done("JvmPool.sleepInside", b);
  }

  // Hands `work` to the pool and waits until it ran, polling: waiting on a lock would add
  // the waiting thread's notification to the task.
  static void run(ExecutorService pool, Runnable work) throws InterruptedException {
    final int before = finished;
    pool.execute(work);
    while (finished == before) Thread.sleep(1);
  }

  public static void main(String[] args) throws Exception {
    String truthPath = null, readyPath = null;
    long warmupMs = 1500;
    for (int i = 0; i < args.length; ++i) {
      if (args[i].equals("--truth")) truthPath = args[++i];
      else if (args[i].equals("--ready")) readyPath = args[++i];
      else if (args[i].equals("--warmup")) warmupMs = Long.parseLong(args[++i]);
    }
    ExecutorService pool = Executors.newSingleThreadExecutor();
    run(pool, JvmPool::tick);  // the worker exists from here on
    if (readyPath != null) {
      try (PrintWriter ready = new PrintWriter(new FileWriter(readyPath))) {
        ready.println(ProcessHandle.current().pid());
      }
    }
    for (long end = System.nanoTime() + warmupMs * 1_000_000L; System.nanoTime() < end;) {
      run(pool, JvmPool::tick);
      Thread.sleep(50);
    }
    // One round unmeasured first: whatever the tasks' first run loads or links is done.
    for (int round = -1; round < 2; ++round) {
      measuring = round >= 0;
      for (Runnable work : new Runnable[] {JvmPool::computeShort, JvmPool::computeLong, JvmPool::sleepInside}) {
        run(pool, work);
        Thread.sleep(50);  // the worker waits for the next task
      }
    }
    try (PrintWriter out = new PrintWriter(new FileWriter(truthPath))) {
      for (int i = 0; i < tasks; ++i)
        out.println("{\"type\":\"event\",\"name\":\"" + NAMES[i] + "\",\"begin_ns\":" + BEGINS[i] + ",\"end_ns\":"
            + ENDS[i] + "}");
    }
    System.exit(0);
  }
}
