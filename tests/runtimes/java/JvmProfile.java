// A JVM program whose main thread burns CPU in two known methods in a known ratio, for the
// session profile of a JVM started with no flags (tests/integration/runtime_jvm_profile_test.cc).
// heavy() does three times the work of light(); each call's CPU time is measured by the
// thread's own clock, and the shares since the program got ready are rewritten to the truth
// file every 100 ms: {"heavy":0.75,"light":0.25,"cpu_ns":N}. Creates its ready file once both
// methods are JIT-compiled, then runs until killed.
//
//   java -cp DIR JvmProfile READY_FILE TRUTH_FILE
import java.io.FileWriter;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

public class JvmProfile {
  static volatile long sink;

  static long heavy(int n) {
    long s = 1;
    for (int i = 0; i < 3 * n; i++) s = s * 31 + i ^ (s >>> 7);
    return s;
  }

  static long light(int n) {
    long s = 3;
    for (int i = 0; i < n; i++) s = s * 37 + i ^ (s >>> 5);
    return s;
  }

  public static void main(String[] args) throws IOException {
    ThreadMXBean clock = ManagementFactory.getThreadMXBean();
    final int n = 2_000_000;
    for (int i = 0; i < 200; i++) sink += heavy(n / 100) + light(n / 100);  // warm up: both compiled
    Files.createFile(Path.of(args[0]));
    long heavyNs = 0, lightNs = 0, written = System.nanoTime();
    while (true) {
      long a = clock.getCurrentThreadCpuTime();
      sink += heavy(n);
      long b = clock.getCurrentThreadCpuTime();
      sink += light(n);
      long c = clock.getCurrentThreadCpuTime();
      heavyNs += b - a;
      lightNs += c - b;
      if (System.nanoTime() - written > 100_000_000L) {
        double total = heavyNs + lightNs;
        Path tmp = Path.of(args[1] + ".tmp");
        try (FileWriter w = new FileWriter(tmp.toFile())) {
          w.write(String.format("{\"heavy\":%.4f,\"light\":%.4f,\"cpu_ns\":%d}%n", heavyNs / total, lightNs / total,
              heavyNs + lightNs));
        }
        Files.move(tmp, Path.of(args[1]), StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        written = System.nanoTime();
      }
    }
  }
}
