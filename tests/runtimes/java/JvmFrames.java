// Threads in known Java methods, for the HotSpot frame walker's tests
// (tests/integration/runtime_jvm_frames_test.cc): one sleeps under two interpreted calls,
// one waits on a monitor, one sleeps under a method called hot enough to be JIT-compiled,
// one burns CPU in a JIT-compiled method too large to be inlined, one sleeps 5 ms at a time.
// Creates the file its argument names once every thread is where it stays; then runs until
// killed.
public class JvmFrames {
  static final Object LOCK = new Object();
  static volatile long sink;
  static volatile boolean compiledAsleep;

  static void napper() throws InterruptedException {
    Thread.sleep(600_000);
  }

  static void sleepyCaller() throws InterruptedException {
    napper();
  }

  static void waiter() throws InterruptedException {
    synchronized (LOCK) {
      LOCK.wait();
    }
  }

  static void tick(long ms) throws InterruptedException {
    Thread.sleep(ms);
    sink++;
  }

  static void compiledSleeper() throws InterruptedException {
    for (int i = 0; i < 60_000; i++) tick(0);
    Thread.sleep(1000);  // lets the compiler finish tick
    compiledAsleep = true;
    tick(600_000);
  }

  // More bytecode than HotSpot inlines (FreqInlineSize, 325 bytes): its own compiled frame.
  static long hot(int n) {
    long s = 1;
    for (int i = 0; i < n; i++) {
      s = s * 31 + i ^ (s >>> 7);
      s = s * 37 + i ^ (s >>> 5);
      s = s * 41 + i ^ (s >>> 3);
      s = s * 43 + i ^ (s >>> 11);
      s = s * 47 + i ^ (s >>> 13);
      s = s * 53 + i ^ (s >>> 17);
      s = s * 59 + i ^ (s >>> 19);
      s = s * 61 + i ^ (s >>> 23);
      s = s * 67 + i ^ (s >>> 29);
      s = s * 71 + i ^ (s >>> 31);
      s = s * 73 + i ^ (s >>> 7);
      s = s * 79 + i ^ (s >>> 5);
      s = s * 83 + i ^ (s >>> 3);
      s = s * 89 + i ^ (s >>> 11);
      s = s * 97 + i ^ (s >>> 13);
      s = s * 101 + i ^ (s >>> 17);
      s = s * 103 + i ^ (s >>> 19);
      s = s * 107 + i ^ (s >>> 23);
      s = s * 109 + i ^ (s >>> 29);
      s = s * 113 + i ^ (s >>> 31);
      s = s * 127 + i ^ (s >>> 7);
      s = s * 131 + i ^ (s >>> 5);
      s = s * 137 + i ^ (s >>> 3);
      s = s * 139 + i ^ (s >>> 11);
      s = s * 149 + i ^ (s >>> 13);
      s = s * 151 + i ^ (s >>> 17);
      s = s * 157 + i ^ (s >>> 19);
      s = s * 163 + i ^ (s >>> 23);
      s = s * 167 + i ^ (s >>> 29);
      s = s * 173 + i ^ (s >>> 31);
    }
    return s;
  }

  static void burner() {
    while (true) sink += hot(100_000);
  }

  static void pause() throws InterruptedException {
    Thread.sleep(5);
  }

  static void ticker() throws InterruptedException {
    while (true) pause();
  }

  static Thread start(String name, Runnable body) {
    Thread t = new Thread(body, name);
    t.setDaemon(true);
    t.start();
    return t;
  }

  interface Body {
    void run() throws InterruptedException;
  }

  static Runnable quietly(Body body) {
    return () -> {
      try {
        body.run();
      } catch (InterruptedException e) {
        // ends the thread
      }
    };
  }

  public static void main(String[] args) throws Exception {
    start("jf-napper", quietly(JvmFrames::sleepyCaller));
    start("jf-waiter", quietly(JvmFrames::waiter));
    start("jf-compiled", quietly(JvmFrames::compiledSleeper));
    start("jf-burner", JvmFrames::burner);
    // A second burner: with both cores busy, every wake-up of the other threads preempts a
    // burner, so its switch-outs are many even on an idle machine.
    start("jf-burner-2", JvmFrames::burner);
    start("jf-ticker", quietly(JvmFrames::ticker));
    Thread.sleep(4000);
    while (!compiledAsleep) Thread.sleep(10);
    Thread.sleep(200);
    java.nio.file.Files.writeString(java.nio.file.Path.of(args[0]), "ready\n");
    Thread.sleep(600_000);
  }
}
