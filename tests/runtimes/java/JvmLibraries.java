// A JVM program whose main thread runs a mix of the JDK's library code as a service would:
// AES-GCM and CRC32 over 32 KiB (intrinsic stubs), string building, a regex, a HashMap, a
// sort and String.format, over and over. Many small JIT-compiled methods are called millions
// of times, so samples also land in their prologues and epilogues, where the frame is not
// (or no longer) built (tests/integration/runtime_jvm_leaf_test.cc).
//
// Warms up until compiled, then writes the truth file, {"tid":N}: the thread's kernel id;
// creates its ready file and runs until killed.
//
//   java -cp DIR JvmLibraries READY_FILE TRUTH_FILE
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.Random;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.zip.CRC32;
import javax.crypto.Cipher;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.SecretKeySpec;

public class JvmLibraries {
  static volatile long sink;
  static final byte[] key = new byte[16], iv = new byte[12], data = new byte[32 * 1024];
  static final Pattern pattern = Pattern.compile("([a-z]+)-(\\d+)");

  static void work() throws Exception {
    Cipher cipher = Cipher.getInstance("AES/GCM/NoPadding");
    cipher.init(Cipher.ENCRYPT_MODE, new SecretKeySpec(key, "AES"), new GCMParameterSpec(128, iv));
    sink += cipher.doFinal(data).length;
    CRC32 crc = new CRC32();
    crc.update(data);
    sink += crc.getValue();
    StringBuilder text = new StringBuilder();
    for (int i = 0; i < 2000; i++) text.append("item-").append(i).append(' ');
    Matcher m = pattern.matcher(text);
    while (m.find()) sink += m.group(2).length();
    Map<String, Integer> counts = new HashMap<>();
    for (int i = 0; i < 5000; i++) counts.merge("k" + (i % 700), i, Integer::sum);
    int[] numbers = new Random(sink).ints(20000).toArray();
    Arrays.sort(numbers);
    sink += numbers[0] + String.format("%d %s", sink, "x").length();
  }

  public static void main(String[] args) throws Exception {
    new Random(1).nextBytes(data);
    for (int i = 0; i < 300; i++) work();  // warm up: compiled by now
    // "PID/task/TID": the kernel's id of this thread, the one the samples are of.
    final String self = Files.readSymbolicLink(Path.of("/proc/thread-self")).toString();
    Files.writeString(Path.of(args[1]), "{\"tid\":" + self.substring(self.lastIndexOf('/') + 1) + "}\n");
    Files.createFile(Path.of(args[0]));
    while (true) work();
  }
}
