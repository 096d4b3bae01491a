// A JVM program whose main thread spends nearly all its time in a VM leaf call: `double %`
// is SharedRuntime::drem -> fmod (libm), called by interpreted and compiled Java code
// without a state transition or a frame anchor (tests/integration/runtime_jvm_leaf_test.cc).
// Remainders of a huge dividend by a small divisor keep fmod long at work, so the samples
// of the phase land in libm while the thread's state says it runs Java code.
//
// Warms remainders() up until compiled (under -Xint it stays interpreted), then writes the
// truth file, {"method":"JvmLeaf.remainders","tid":N}: the method as the JVM names it from
// its own stack and the thread's kernel id; creates its ready file and runs until killed.
//
//   java -cp DIR JvmLeaf READY_FILE TRUTH_FILE
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

public class JvmLeaf {
  static volatile double sink;
  static String phaseMethod;

  static double remainders(int n) {
    if (phaseMethod == null) {
      StackTraceElement self = new Throwable().getStackTrace()[0];
      phaseMethod = self.getClassName() + "." + self.getMethodName();
    }
    double s = 0;
    for (int i = 0; i < n; i++) s += (1e300 + i) % (1.0 + i * 1e-9);
    return s;
  }

  public static void main(String[] args) throws IOException {
    for (int i = 0; i < 2000; i++) sink += remainders(20);  // warm up: compiled by now
    // "PID/task/TID": the kernel's id of this thread, the one the samples are of.
    final String self = Files.readSymbolicLink(Path.of("/proc/thread-self")).toString();
    final String tid = self.substring(self.lastIndexOf('/') + 1);
    Files.writeString(Path.of(args[1]), "{\"method\":\"" + phaseMethod + "\",\"tid\":" + tid + "}\n");
    Files.createFile(Path.of(args[0]));
    while (true) sink += remainders(1000);
  }
}
