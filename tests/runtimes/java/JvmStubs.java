// A JVM program whose main thread spends nearly all its time in one of HotSpot's generated
// stubs: SHA-256 over 64 KiB buffers runs the sha256 intrinsic (StubRoutines), called by
// JIT-compiled Java code (tests/integration/runtime_jvm_leaf_test.cc). The stub keeps no
// frame size for a Java walk to step by; its callers must still be found.
//
// Warms hash() up until compiled, then writes the truth file,
// {"method":"JvmStubs.hash","tid":N,"intrinsic":true}: the method as the JVM names it from
// its own stack, the thread's kernel id, and whether the VM uses the SHA-256 intrinsic
// (UseSHA, as the VM itself reports it: the SHA intrinsics follow it); creates its ready file and runs until
// killed.
//
//   java -cp DIR JvmStubs READY_FILE TRUTH_FILE
import com.sun.management.HotSpotDiagnosticMXBean;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

public class JvmStubs {
  static volatile byte sink;
  static String phaseMethod;
  static final byte[] buffer = new byte[64 * 1024];

  static byte hash(MessageDigest digest, int rounds) {
    if (phaseMethod == null) {
      StackTraceElement self = new Throwable().getStackTrace()[0];
      phaseMethod = self.getClassName() + "." + self.getMethodName();
    }
    for (int i = 0; i < rounds; i++) digest.update(buffer);
    return digest.digest()[0];
  }

  public static void main(String[] args) throws IOException, NoSuchAlgorithmException {
    MessageDigest digest = MessageDigest.getInstance("SHA-256");
    for (int i = 0; i < 3000; i++) sink += hash(digest, 1);  // warm up: compiled by now
    final String intrinsic = ManagementFactory.getPlatformMXBean(HotSpotDiagnosticMXBean.class)
                                 .getVMOption("UseSHA").getValue();
    // "PID/task/TID": the kernel's id of this thread, the one the samples are of.
    final String self = Files.readSymbolicLink(Path.of("/proc/thread-self")).toString();
    final String tid = self.substring(self.lastIndexOf('/') + 1);
    Files.writeString(Path.of(args[1]),
        "{\"method\":\"" + phaseMethod + "\",\"tid\":" + tid + ",\"intrinsic\":" + intrinsic + "}\n");
    Files.createFile(Path.of(args[0]));
    while (true) sink += hash(digest, 16);
  }
}
