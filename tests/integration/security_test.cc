// looptrace runs as root and reads names from processes that may belong to anyone. A
// hostile target (tests/fixtures/testprogs/hostile_target.c) running as nobody, under a
// hostile file name, pushes invalid UTF-8, escape sequences, 100 kB names and NULs through
// every string path; a hostile profile and methodMapping.txt do the same from files. The
// report (text, JSON, the recording and its replay) must be complete and valid, and
// nothing looptrace prints may carry a raw control byte. Output files planted by other
// users must never be followed.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <zlib.h>

#include <fstream>
#include <set>
#include <sstream>

#include "harness.h"

namespace looptrace::testing {
namespace {

using nlohmann::json;

std::string HostileTarget() { return std::string(LOOPTRACE_FIXTURE_DIR) + "/hostile_target"; }

// Raw bytes a terminal acts on: C0 controls except the layout's newline and tab, DEL, the
// UTF-8 C1 controls and bidi overrides.
void ExpectTerminalSafe(const std::string& text, const std::string& what) {
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\n' || c == '\t') continue;
    if (c < 0x20 || c == 0x7F) {
      ADD_FAILURE() << what << ": raw control byte " << int(c) << " at offset " << i;
      return;
    }
    if (c == 0xC2 && i + 1 < text.size() && (static_cast<unsigned char>(text[i + 1]) & 0xE0) == 0x80) {
      ADD_FAILURE() << what << ": raw C1 control at offset " << i;
      return;
    }
  }
  EXPECT_EQ(text.find("\xE2\x80\xAE"), std::string::npos) << what << ": raw right-to-left override";
  EXPECT_EQ(text.find('\x9B'), std::string::npos) << what << ": raw 8-bit CSI";
}

bool AllJsonLinesParse(const std::string& text, size_t* count) {
  std::istringstream in(text);
  *count = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    if (!json::accept(line)) {
      ADD_FAILURE() << "not JSON: " << line.substr(0, 200);
      return false;
    }
    ++*count;
  }
  return true;
}

class SecurityTest : public BpfTest {
 protected:
  void SetUp() override {
    BpfTest::SetUp();
    if (IsSkipped()) return;
    chmod(dir_.path().c_str(), 0755);  // nobody must be able to run the copy
  }

  // The target under a hostile file name: escape sequences, invalid UTF-8, a newline.
  std::string HostileCopy() {
    std::string path = dir_ / "evil\x1b]0;exe\x07\xff\n\x1b[2Jname";
    std::filesystem::copy_file(HostileTarget(), path);
    chmod(path.c_str(), 0755);
    return path;
  }

  std::string WriteProfile() {
    std::string path = dir_ / "hostile.profile";
    std::ofstream(path) << "profile hostile\x1b[5m\n"
                           "description hostile target \xff\x1b]0;profile\x07\n"
                           "probe dispatch.begin   uprobe exe hostile_dispatch_begin  id=arg1 name=arg2:str\n"
                           "probe dispatch.end     uprobe exe hostile_dispatch_end    id=arg1\n"
                           "probe idle.begin       uprobe exe hostile_idle_begin      id=arg1 name=arg2:str\n"
                           "probe idle.end         uprobe exe hostile_idle_end        id=arg1\n"
                           "probe method.enter     uprobe exe hostile_method_enter    id=arg1\n"
                           "probe method.exit      uprobe exe hostile_method_exit     id=arg1\n"
                           "probe activity.launch  uprobe exe hostile_activity_launch name=arg1:str\n"
                           "probe activity.focus   uprobe exe hostile_activity_focus  name=arg1:str\n";
    return path;
  }

  std::string WriteMapping() {
    std::string path = dir_ / "methodMapping.txt";
    std::ofstream out(path, std::ios::binary);
    out << "1,1,evil.Map\x1b]0;mapping\x07 run ()V\n";
    out << "2,1,bad\xff\xfe.Utf8\x9b"
           "31m go ()V\n";
    out << "3,1," << std::string(100 * 1024, 'C') << " huge ()V\n";
    out << "x\x1b[2J,1,malformed line with escapes\n";  // warned about, escaped
    return path;
  }

  TempDir dir_;
};

TEST_F(SecurityTest, HostileTargetProfileAndMappingCannotCorruptOrEscape) {
  const std::string exe = HostileCopy();
  const std::string profile = WriteProfile();
  const std::string mapping = WriteMapping();
  Process target({"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", exe, "40"});
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // setpriv has exec'ed the target
  const std::string pid = std::to_string(target.pid());
  const std::string recording = dir_ / "rec.jsonl.gz";

  // Probe listing: symbols and paths from the target's files.
  CommandResult probes = RunCommand({Looptrace(), "probes", "-p", pid, "--profile", profile});
  EXPECT_EQ(probes.exit_code, 0) << probes.err;
  ExpectTerminalSafe(probes.out, "probes stdout");
  ExpectTerminalSafe(probes.err, "probes stderr");
  EXPECT_NE(probes.out.find("evil\\x1b]0;exe\\x07\\xff\\n\\x1b[2Jname"), std::string::npos) << probes.out;

  CommandResult live = RunCommand({Looptrace(),
                                   "record",
                                   "-p",
                                   pid,
                                   "--profile",
                                   profile,
                                   "--method-mapping",
                                   mapping,
                                   "-d",
                                   "5",
                                   "--threads",
                                   "all",
                                   "--evil-threshold",
                                   "300",
                                   "--lag-threshold",
                                   "500",
                                   "--idle-lag-threshold",
                                   "200",
                                   "--save",
                                   recording,
                                   "--full"});
  ASSERT_EQ(live.exit_code, 0) << live.err;
  ExpectTerminalSafe(live.out, "live text report");
  ExpectTerminalSafe(live.err, "live stderr");
  // Complete (--full): every section is there, names escaped and visible.
  for (const char* needle : {"messages on thread", "slowest messages", "messages by name", "evil methods", "----- LAG",
                             "idle handler lag", "startup timeline", "data quality"})
    EXPECT_NE(live.out.find(needle), std::string::npos) << needle << " missing in:\n" << live.out;
  for (const char* needle :
       {"title\\x1b]0;pwned-title\\x07", "clear\\x1b[2J\\x1b[H\\x07", "layout\\nnewline\\ttab\\rcr",
        "csi\\u009b31m\xEF\xBF\xBD"
        "32m",
        "rlo\\u202egpj.exe", "badutf8\xEF\xBF\xBD", "evil.Map\\x1b]0;mapping\\x07.run()V",
        "\\x1b[31mm\xEF\xBF\xBD\\nain", "[...]"})
    EXPECT_NE(live.out.find(needle), std::string::npos) << needle << " missing in:\n" << live.out;
  EXPECT_NE(live.err.find("x\\x1b[2J"), std::string::npos) << "the malformed mapping line, escaped:\n" << live.err;
  EXPECT_EQ(live.out.find("hidden-after-nul"), std::string::npos);  // a C string ends at its NUL

  // The recording replays into valid JSON with the raw names (as JSON escapes).
  CommandResult as_json = RunCommand({Looptrace(), "report", recording, "-f", "json", "--method-mapping", mapping,
                                      "--evil-threshold", "300", "--idle-lag-threshold", "200"});
  ASSERT_EQ(as_json.exit_code, 0) << as_json.err;
  size_t lines = 0;
  ASSERT_TRUE(AllJsonLinesParse(as_json.out, &lines));
  ExpectTerminalSafe(as_json.out, "JSON report");
  auto records = ParseJsonLines(as_json.out);
  std::set<std::string> names;
  for (const auto& m : OfType(records, "message"))
    if (m["name"].is_string()) names.insert(m["name"].get<std::string>());
  EXPECT_TRUE(names.contains("title\x1b]0;pwned-title\x07")) << as_json.out.substr(0, 2000);
  EXPECT_TRUE(names.contains("layout\nnewline\ttab\rcr"));
  EXPECT_TRUE(names.contains("badutf8\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD("));  // one U+FFFD per bad byte
  EXPECT_TRUE(names.contains("nul"));
  bool huge_seen = false;
  for (const auto& n : names) huge_seen |= n.size() >= 100 && n.starts_with("\x01\x02\x03");
  EXPECT_TRUE(huge_seen) << "the 100 kB name, cut by the string reader";
  EXPECT_FALSE(OfType(records, "evil_method").empty());
  EXPECT_NE(as_json.out.find("evil.Map\\u001b]0;mapping\\u0007.run()V"), std::string::npos);
  EXPECT_FALSE(OfType(records, "lag").empty());
  EXPECT_NE(as_json.out.find("\\u001b[31mm\xEF\xBF\xBD\\nain"), std::string::npos) << "main thread name";
  EXPECT_NE(as_json.out.find("wk\\u001b]0;t\\u0007\xEF\xBF\xBD\\n"), std::string::npos) << "worker thread name";

  // The recording itself: valid JSON lines, with the exe path of the probes.
  std::string saved;
  {
    gzFile gz = gzopen(recording.c_str(), "rb");
    ASSERT_NE(gz, nullptr);
    char buf[65536];
    for (int n; (n = gzread(gz, buf, sizeof(buf))) > 0;) saved.append(buf, n);
    gzclose(gz);
  }
  ASSERT_TRUE(AllJsonLinesParse(saved, &lines));
  ExpectTerminalSafe(saved, "recording");
  EXPECT_NE(saved.find("evil\\u001b]0;exe\\u0007\xEF\xBF\xBD\\n\\u001b[2Jname"), std::string::npos) << "exe path";

  CommandResult as_text = RunCommand({Looptrace(), "report", recording, "--method-mapping", mapping, "--evil-threshold",
                                      "300", "--idle-lag-threshold", "200"});
  ASSERT_EQ(as_text.exit_code, 0) << as_text.err;
  ExpectTerminalSafe(as_text.out, "replayed text report");
  ExpectTerminalSafe(as_text.err, "replay stderr");
  EXPECT_NE(as_text.out.find("title\\x1b]0;pwned-title\\x07"), std::string::npos);

  CommandResult as_chrome = RunCommand({Looptrace(), "report", recording, "-f", "chrome"});
  ASSERT_EQ(as_chrome.exit_code, 0) << as_chrome.err;
  EXPECT_TRUE(json::accept(as_chrome.out));
  ExpectTerminalSafe(as_chrome.out, "chrome trace");
  target.Signal(SIGKILL);
}

// Error lines quote file content: escaped, and cut when huge.
TEST_F(SecurityTest, ErrorsQuotingHostileFilesAreEscaped) {
  std::string profile = dir_ / "bad.profile";
  std::ofstream(profile) << "profile x\nprobe \x1b]0;pwned\x07" << std::string(50'000, 'Z') << " uprobe exe f\n";
  CommandResult r = RunCommand({Looptrace(), "probes", "--exe", "/bin/true", "--profile", profile});
  EXPECT_EQ(r.exit_code, 6) << r.err;
  ExpectTerminalSafe(r.err, "profile error");
  EXPECT_NE(r.err.find("\\x1b]0;pwned\\x07"), std::string::npos) << r.err;
  EXPECT_LT(r.err.size(), 20'000u) << "a 50 kB word is cut in the message";

  std::string recording = dir_ / "bad.jsonl";
  std::ofstream(recording) << "{\"type\":\"recording\",\"format\":\"looptrace-events\",\"version\":1}\n"
                           << "{\"type\":\"\\u001b]0;pwned\\u0007\"}\n";
  r = RunCommand({Looptrace(), "report", recording});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  ExpectTerminalSafe(r.err, "recording warning");
  EXPECT_NE(r.err.find("\\x1b]0;pwned\\x07"), std::string::npos) << r.err;
}

// Inputs that never end or never come: refused at once, with a clear error.
TEST_F(SecurityTest, EndlessAndBlockingInputsAreRefused) {
  ASSERT_EQ(mkfifo((dir_ / "fifo").c_str(), 0600), 0);
  const auto start = std::chrono::steady_clock::now();
  struct Case {
    std::vector<std::string> argv;
    int code;
    std::string needle;
  };
  const std::vector<Case> cases = {
      {{Looptrace(), "probes", "--exe", "/bin/true", "--profile", "/dev/zero"},
       6,
       "/dev/zero: it is a character device"},
      {{Looptrace(), "probes", "--exe", "/bin/true", "--profile", dir_ / "fifo"}, 6, "it is a FIFO"},
      {{Looptrace(), "report", "/dev/zero"}, 2, "/dev/zero: it is a character device"},
      {{Looptrace(), "report", dir_ / "fifo"}, 2, "it is a FIFO"},
      {{Looptrace(), "report", "/dev/null", "--method-mapping", dir_ / "fifo"}, 2, "it is a FIFO"},
      {{Looptrace(), "record", "-p", "1", "--btf", dir_ / "fifo", "-d", "1"}, 5, "it is a FIFO"},
  };
  for (const auto& c : cases) {
    CommandResult r = RunCommand(c.argv, 20);
    EXPECT_EQ(r.exit_code, c.code) << c.argv[1] << " " << c.argv.back() << ": " << r.err;
    EXPECT_NE(r.err.find(c.needle), std::string::npos) << r.err;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
}

// Another user plants links in a sticky world-writable directory (like /tmp): looptrace,
// as root, must neither follow them nor let them redirect its report.
TEST_F(SecurityTest, LinksPlantedByOthersInStickyDirectoriesAreNeverFollowed) {
  const std::string shared = dir_ / "shared";
  mkdir(shared.c_str(), 0777);
  chmod(shared.c_str(), 01777);
  const std::string victim = dir_ / "victim";
  std::ofstream(victim) << "root's file";
  chmod(victim.c_str(), 0600);
  const std::string recording = std::string(LOOPTRACE_SOURCE_DIR) + "/tests/golden/looper/basic/input.events.jsonl";

  // A link at the -o path itself, owned by nobody: refused.
  const std::string report = shared + "/report.txt";
  ASSERT_EQ(symlink(victim.c_str(), report.c_str()), 0);
  ASSERT_EQ(lchown(report.c_str(), 65534, 65534), 0);
  CommandResult r = RunCommand({Looptrace(), "report", recording, "-o", report});
  EXPECT_EQ(r.exit_code, 7) << r.err;
  EXPECT_NE(r.err.find("refusing to follow it"), std::string::npos) << r.err;

  // Links at the temporary names of old versions (PATH.tmp.PID for every likely pid):
  // never touched; the report lands where asked.
  const std::string other = shared + "/other.txt";
  for (int pid = 2; pid < 4096; pid += 1) {
    std::string planted = other + ".tmp." + std::to_string(pid);
    if (symlink(victim.c_str(), planted.c_str()) == 0) lchown(planted.c_str(), 65534, 65534);
  }
  r = RunCommand({Looptrace(), "report", recording, "-o", other});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::ifstream victim_in(victim);
  std::string content((std::istreambuf_iterator<char>(victim_in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(content, "root's file");
  struct stat st;
  ASSERT_EQ(lstat(other.c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_uid, 0u);

  // A FIFO another user planted (with a reader waiting for root's report): refused.
  const std::string fifo = shared + "/fifo.txt";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0666), 0);
  ASSERT_EQ(chown(fifo.c_str(), 65534, 65534), 0);
  int reader = open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  r = RunCommand({Looptrace(), "report", recording, "-o", fifo});
  EXPECT_EQ(r.exit_code, 7) << r.err;
  EXPECT_NE(r.err.find("it is a FIFO owned by uid 65534"), std::string::npos) << r.err;
  char byte;
  EXPECT_LE(read(reader, &byte, 1), 0) << "nothing reached the planted FIFO";
  close(reader);

  // Devices are written in place, never replaced.
  r = RunCommand({Looptrace(), "report", recording, "-o", "/dev/null"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(lstat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  r = RunCommand({Looptrace(), "report", recording, "-o", "/dev/full"});
  EXPECT_EQ(r.exit_code, 7) << r.err;
  EXPECT_NE(r.err.find("cannot write /dev/full: No space left on device"), std::string::npos) << r.err;
  ASSERT_EQ(lstat("/dev/full", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  r = RunCommand({Looptrace(), "report", recording, "-o", "/dev/stdout"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("looptrace report: pid 4242"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace looptrace::testing

namespace looptrace::testing {
namespace {

// A recording that cannot be written (a full disk) is said while the session runs, and the
// report is still written; the exit status says an output failed.
TEST_F(SecurityTest, AFailedRecordingKeepsTheReport) {
  const std::string report = dir_ / "report.txt";
  auto r = RunCommand({Looptrace(), "run", "--profile", SampleProfile(), "--save", "/dev/full", "-o", report, "--",
                       SampleApp(), "--scenario", "messages"},
                      120);
  EXPECT_EQ(r.exit_code, 7) << r.err;
  EXPECT_NE(r.err.find("No space left on device; the recording stops here (the report is still written)"),
            std::string::npos)
      << r.err;
  std::ifstream in(report);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("looptrace report: pid"), std::string::npos) << text.str();
  struct stat st {};
  ASSERT_EQ(lstat("/dev/full", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
}

}  // namespace
}  // namespace looptrace::testing
