// Output files as an attacker sees them: planted links and temporary names, devices,
// FIFOs, a full disk; and the bounded line reader of recordings.
#include "loader/session/output_file.h"

#include "loader/session/line_reader.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace looptrace::loader {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

// The temporary a file system without O_TMPFILE gets, or the usual one.
OutputFile::Temporary TemporaryOf(bool named) {
  return named ? OutputFile::Temporary::kNamed : OutputFile::Temporary::kAnonymous;
}

class ScratchDir {
 public:
  ScratchDir() {
    char templ[] = "/tmp/looptrace-output-XXXXXX";
    path_ = mkdtemp(templ);
  }
  ~ScratchDir() { fs::remove_all(path_); }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }
  std::vector<std::string> Names() const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(path_)) names.push_back(entry.path().filename());
    std::sort(names.begin(), names.end());
    return names;
  }

 private:
  std::string path_;
};

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(OutputFile, NewFileAppearsOnlyAtCommit) {
  ScratchDir dir;
  auto out = OutputFile::Create(dir / "report.txt");
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ((*out)->kind(), OutputFile::Kind::kReplace);
  (*out)->stream() << "the report\n";
  (*out)->stream().flush();
  EXPECT_EQ(dir.Names(), std::vector<std::string>{});  // O_TMPFILE: no name before Commit()
  ASSERT_TRUE((*out)->Commit());
  EXPECT_EQ(dir.Names(), std::vector<std::string>{"report.txt"});
  EXPECT_EQ(ReadAll(dir / "report.txt"), "the report\n");
}

TEST(OutputFile, ReplacesAnExistingFileAtomically) {
  ScratchDir dir;
  std::ofstream(dir / "report.txt") << "old";
  auto out = OutputFile::Create(dir / "report.txt");
  ASSERT_TRUE(out) << out.error().message;
  (*out)->stream() << "new";
  EXPECT_EQ(ReadAll(dir / "report.txt"), "old");  // untouched until Commit()
  ASSERT_TRUE((*out)->Commit());
  EXPECT_EQ(ReadAll(dir / "report.txt"), "new");
  EXPECT_EQ(dir.Names(), std::vector<std::string>{"report.txt"});
}

TEST(OutputFile, AbandonedOutputLeavesNothing) {
  ScratchDir dir;
  for (bool named : {false, true}) {
    {
      auto out = OutputFile::Create(dir / "report.txt", TemporaryOf(named));
      ASSERT_TRUE(out) << out.error().message;
      (*out)->stream() << std::string(200'000, 'x');
      if (named) {
        EXPECT_EQ(dir.Names().size(), 1u);  // the named temporary exists meanwhile
      }
    }
    EXPECT_EQ(dir.Names(), std::vector<std::string>{}) << "named temporaries: " << named;
  }
}

TEST(OutputFile, NamedTemporariesAreUnpredictableAndRenamed) {
  ScratchDir dir;
  auto a = OutputFile::Create(dir / "r.txt", OutputFile::Temporary::kNamed);
  auto b = OutputFile::Create(dir / "r.txt", OutputFile::Temporary::kNamed);
  ASSERT_TRUE(a && b);
  auto names = dir.Names();
  ASSERT_EQ(names.size(), 2u);
  EXPECT_NE(names[0], names[1]);
  for (const auto& n : names) EXPECT_TRUE(n.starts_with(".r.txt.looptrace-")) << n;
  (*a)->stream() << "a";
  (*b)->stream() << "b";
  ASSERT_TRUE((*a)->Commit());
  ASSERT_TRUE((*b)->Commit());
  EXPECT_EQ(dir.Names(), std::vector<std::string>{"r.txt"});
  EXPECT_EQ(ReadAll(dir / "r.txt"), "b");
}

// The old scheme wrote to PATH.tmp.PID: a link planted there must not be followed, nor
// anything planted at names looptrace's temporaries could take.
TEST(OutputFile, PlantedTemporaryNamesAreNeverOpened) {
  ScratchDir dir;
  std::ofstream(dir / "victim") << "precious";
  for (const std::string& planted : {fmt::format("report.txt.tmp.{}", getpid()), std::string(".report.txt.looptrace-")})
    ASSERT_EQ(symlink((dir / "victim").c_str(), (dir / planted).c_str()), 0);
  for (bool named : {false, true}) {
    auto out = OutputFile::Create(dir / "report.txt", TemporaryOf(named));
    ASSERT_TRUE(out) << out.error().message;
    (*out)->stream() << "report";
    ASSERT_TRUE((*out)->Commit());
  }
  EXPECT_EQ(ReadAll(dir / "victim"), "precious");
  EXPECT_EQ(ReadAll(dir / "report.txt"), "report");
  EXPECT_TRUE(fs::is_symlink(dir / fmt::format("report.txt.tmp.{}", getpid())));
}

// A run killed with SIGKILL mid-write: with O_TMPFILE nothing is left; a named temporary
// (file systems without O_TMPFILE) stays, and the next run neither reuses nor touches it.
TEST(OutputFile, SigkilledRunLeavesNothingOrAFileThatIsNeverReused) {
  ScratchDir dir;
  for (bool named : {false, true}) {
    int ready[2];
    ASSERT_EQ(pipe(ready), 0);
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      auto out = OutputFile::Create(dir / "report.txt", TemporaryOf(named));
      if (!out) _exit(1);
      (*out)->stream() << std::string(100'000, 'k');  // partly written
      (void)!write(ready[1], "x", 1);
      pause();
      _exit(0);
    }
    char byte;
    ASSERT_EQ(read(ready[0], &byte, 1), 1);
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
    close(ready[0]);
    close(ready[1]);
    auto leftovers = dir.Names();
    if (!named) {
      EXPECT_EQ(leftovers, std::vector<std::string>{});
      continue;
    }
    ASSERT_EQ(leftovers.size(), 1u);
    const std::string leftover = dir / leftovers[0];
    const std::string before = ReadAll(leftover);
    auto out = OutputFile::Create(dir / "report.txt", OutputFile::Temporary::kNamed);
    ASSERT_TRUE(out);
    (*out)->stream() << "fresh";
    ASSERT_TRUE((*out)->Commit());
    EXPECT_EQ(ReadAll(dir / "report.txt"), "fresh");
    EXPECT_EQ(ReadAll(leftover), before);  // untouched, not reused
  }
}

// A link of our own (or root's) is followed: the file it points to is replaced and the
// link stays a link.
TEST(OutputFile, TrustedSymlinkIsFollowed) {
  ScratchDir dir;
  fs::create_directory(dir / "real");
  std::ofstream(dir / "real/report.txt") << "old";
  ASSERT_EQ(symlink((dir / "real/report.txt").c_str(), (dir / "latest").c_str()), 0);
  auto out = OutputFile::Create(dir / "latest");
  ASSERT_TRUE(out) << out.error().message;
  (*out)->stream() << "new";
  ASSERT_TRUE((*out)->Commit());
  EXPECT_TRUE(fs::is_symlink(dir / "latest"));
  EXPECT_EQ(ReadAll(dir / "real/report.txt"), "new");
}

TEST(OutputFile, DanglingSymlinkIsAnError) {
  ScratchDir dir;
  ASSERT_EQ(symlink((dir / "missing/x").c_str(), (dir / "link").c_str()), 0);
  auto out = OutputFile::Create(dir / "link");
  ASSERT_FALSE(out);
  EXPECT_THAT(out.error().message, HasSubstr("cannot resolve the symbolic link"));
  EXPECT_EQ(out.error().code, ExitCode::kOutput);
}

TEST(OutputFile, DevNullIsWrittenInPlaceAndStaysADevice) {
  auto out = OutputFile::Create("/dev/null");
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ((*out)->kind(), OutputFile::Kind::kDirect);
  (*out)->stream() << std::string(300'000, 'x');
  ASSERT_TRUE((*out)->Commit());
  struct stat st;
  ASSERT_EQ(lstat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
}

// A full disk: the failure is seen at the first failed write (with ENOSPC, not the errno of
// some later call), reported once through the callback, and returned by Commit().
TEST(OutputFile, DevFullFailsWithEnospcAsSoonAsAWriteFails) {
  auto out = OutputFile::Create("/dev/full");
  ASSERT_TRUE(out) << out.error().message;
  int failures = 0;
  (*out)->set_on_failure([&](const Error& e) {
    ++failures;
    EXPECT_EQ(e.message, "cannot write /dev/full: No space left on device");
  });
  (*out)->stream() << std::string(100'000, 'x');  // more than the buffer: a write happens now
  EXPECT_EQ(failures, 1);
  EXPECT_TRUE((*out)->failed());
  (*out)->stream() << std::string(100'000, 'y');
  auto ok = (*out)->Commit();
  ASSERT_FALSE(ok);
  EXPECT_EQ(ok.error().message, "cannot write /dev/full: No space left on device");
  EXPECT_EQ(ok.error().code, ExitCode::kOutput);
  EXPECT_THAT(ok.error().hint, HasSubstr("full"));
  EXPECT_EQ(failures, 1);
}

TEST(OutputFile, SmallReportToDevFullFailsAtCommit) {
  auto out = OutputFile::Create("/dev/full");
  ASSERT_TRUE(out);
  (*out)->stream() << "short";
  auto ok = (*out)->Commit();
  ASSERT_FALSE(ok);
  EXPECT_EQ(ok.error().message, "cannot write /dev/full: No space left on device");
}

TEST(OutputFile, FifoWithoutReaderIsRefusedWithoutBlocking) {
  ScratchDir dir;
  ASSERT_EQ(mkfifo((dir / "fifo").c_str(), 0600), 0);
  const auto start = std::chrono::steady_clock::now();
  auto out = OutputFile::Create(dir / "fifo");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  ASSERT_FALSE(out);
  EXPECT_THAT(out.error().message, HasSubstr("the FIFO has no reader"));
  EXPECT_EQ(out.error().code, ExitCode::kOutput);
  struct stat st;
  ASSERT_EQ(lstat((dir / "fifo").c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));  // not replaced by a regular file
}

TEST(OutputFile, FifoWithReaderGetsTheData) {
  ScratchDir dir;
  ASSERT_EQ(mkfifo((dir / "fifo").c_str(), 0600), 0);
  int reader = open((dir / "fifo").c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  auto out = OutputFile::Create(dir / "fifo");
  ASSERT_TRUE(out) << out.error().message;
  (*out)->stream() << "through the pipe\n";
  ASSERT_TRUE((*out)->Commit());
  char buf[64] = {};
  EXPECT_EQ(read(reader, buf, sizeof(buf)), 17);
  EXPECT_STREQ(buf, "through the pipe\n");
  close(reader);
}

TEST(OutputFile, DescriptorPathsWriteToThatDescriptor) {
  ScratchDir dir;
  int fd = open((dir / "captured").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  for (std::string path : {fmt::format("/dev/fd/{}", fd), fmt::format("/proc/self/fd/{}", fd)}) {
    auto out = OutputFile::Create(path);
    ASSERT_TRUE(out) << out.error().message;
    EXPECT_EQ((*out)->kind(), OutputFile::Kind::kDirect);
    (*out)->stream() << "via " << path.substr(0, 5) << "\n";
    ASSERT_TRUE((*out)->Commit());
  }
  close(fd);
  EXPECT_EQ(ReadAll(dir / "captured"), "via /dev/\nvia /proc\n");
  auto stdout_out = OutputFile::Create("/dev/stdout");
  ASSERT_TRUE(stdout_out) << stdout_out.error().message;
  EXPECT_EQ((*stdout_out)->kind(), OutputFile::Kind::kDirect);
  auto closed = OutputFile::Create("/dev/fd/987");
  ASSERT_FALSE(closed);
  EXPECT_THAT(closed.error().message, HasSubstr("Bad file descriptor"));
}

TEST(OutputFile, DirectoriesAndBlockDevicesAreRefused) {
  ScratchDir dir;
  auto d = OutputFile::Create(dir.path());
  ASSERT_FALSE(d);
  EXPECT_THAT(d.error().message, HasSubstr("Is a directory"));
  auto missing_dir = OutputFile::Create(dir / "no/such/dir/r.txt");
  ASSERT_FALSE(missing_dir);
  EXPECT_THAT(missing_dir.error().message, HasSubstr("No such file or directory"));
  EXPECT_EQ(missing_dir.error().code, ExitCode::kOutput);
  for (const auto& entry : fs::directory_iterator("/dev")) {
    if (!entry.is_block_file() || entry.is_symlink()) continue;
    auto block = OutputFile::Create(entry.path());
    ASSERT_FALSE(block) << entry.path();
    EXPECT_THAT(block.error().message, HasSubstr("it is a block device"));
    break;
  }
}

TEST(OutputFile, GzipOutputRoundTrips) {
  ScratchDir dir;
  auto out = OutputFile::Create(dir / "r.jsonl.gz");
  ASSERT_TRUE(out);
  std::string expected;
  for (int i = 0; i < 20000; ++i) expected += fmt::format("{{\"line\":{}}}\n", i);
  (*out)->stream() << expected;
  ASSERT_TRUE((*out)->Commit());
  gzFile gz = gzopen((dir / "r.jsonl.gz").c_str(), "rb");
  ASSERT_NE(gz, nullptr);
  std::string got;
  char buf[65536];
  for (int n; (n = gzread(gz, buf, sizeof(buf))) > 0;) got.append(buf, n);
  gzclose(gz);
  EXPECT_EQ(got, expected);
  EXPECT_LT(fs::file_size(dir / "r.jsonl.gz"), expected.size() / 4);
}

TEST(LineReader, ReadsLinesOfPlainAndGzipFiles) {
  ScratchDir dir;
  std::ofstream(dir / "plain") << "one\ntwo with \\0 nothing\n\nlast without newline";
  auto gz_out = OutputFile::Create(dir / "z.gz");
  ASSERT_TRUE(gz_out);
  (*gz_out)->stream() << "one\ntwo with \\0 nothing\n\nlast without newline";
  ASSERT_TRUE((*gz_out)->Commit());
  for (const char* name : {"plain", "z.gz"}) {
    auto reader = LineReader::Open(dir / name);
    ASSERT_TRUE(reader) << reader.error().message;
    std::vector<std::string> lines;
    std::string line;
    while (true) {
      auto more = (*reader)->Next(&line);
      ASSERT_TRUE(more) << more.error().message;
      if (!*more) break;
      lines.push_back(line);
    }
    EXPECT_EQ(lines, (std::vector<std::string>{"one", "two with \\0 nothing", "", "last without newline"}));
  }
}

TEST(LineReader, KeepsNulBytesInsideALine) {
  ScratchDir dir;
  std::ofstream(dir / "nul", std::ios::binary) << std::string("a\0b\n", 4);
  auto reader = LineReader::Open(dir / "nul");
  ASSERT_TRUE(reader);
  std::string line;
  ASSERT_TRUE((*reader)->Next(&line).value_or(false));
  EXPECT_EQ(line, std::string("a\0b", 3));
}

TEST(LineReader, EndlessAndBlockingInputsAreRefused) {
  ScratchDir dir;
  ASSERT_EQ(mkfifo((dir / "fifo").c_str(), 0600), 0);
  const auto start = std::chrono::steady_clock::now();
  for (std::string path : {std::string("/dev/zero"), dir / "fifo"}) {
    auto reader = LineReader::Open(path);
    ASSERT_FALSE(reader) << path;
    EXPECT_THAT(reader.error().message, HasSubstr("not a regular file"));
    EXPECT_EQ(reader.error().code, ExitCode::kUsage);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(LineReader, LongLinesAndHugeFilesHitTheirCaps) {
  ScratchDir dir;
  std::ofstream(dir / "long") << std::string(5000, 'x') << "\nshort\n";
  auto reader = LineReader::Open(dir / "long", /*max_line_bytes=*/1024);
  ASSERT_TRUE(reader);
  std::string line;
  auto next = (*reader)->Next(&line);
  ASSERT_FALSE(next);
  EXPECT_THAT(next.error().message, HasSubstr("a line is longer than the 1 KiB limit"));

  // A gzip bomb: 64 MiB of newlines-free zeros in a small file stops at the line cap,
  // with bounded memory.
  gzFile gz = gzopen((dir / "bomb.gz").c_str(), "wb9");
  std::string zeros(1 << 20, '0');
  for (int i = 0; i < 64; ++i) gzwrite(gz, zeros.data(), zeros.size());
  gzclose(gz);
  EXPECT_LT(fs::file_size(dir / "bomb.gz"), 1u << 20);
  reader = LineReader::Open(dir / "bomb.gz", /*max_line_bytes=*/4 << 20);
  ASSERT_TRUE(reader);
  next = (*reader)->Next(&line);
  ASSERT_FALSE(next);
  EXPECT_THAT(next.error().message, HasSubstr("longer than the 4 MiB limit"));

  std::ofstream(dir / "many") << std::string(10, 'x') << "\n" << std::string(10, 'y') << "\n";
  reader = LineReader::Open(dir / "many", 1024, /*max_total_bytes=*/15);
  ASSERT_FALSE(reader);  // the file itself is over the total cap
  EXPECT_THAT(reader.error().message, HasSubstr("over the 15 bytes limit"));

  gz = gzopen((dir / "lines.gz").c_str(), "wb9");
  for (int i = 0; i < 3; ++i) gzputs(gz, (std::string(100, 'z') + "\n").c_str());
  gzclose(gz);
  reader = LineReader::Open(dir / "lines.gz", 1024, /*max_total_bytes=*/150);
  ASSERT_TRUE(reader) << reader.error().message;  // small on disk, bigger decompressed
  next = (*reader)->Next(&line);
  ASSERT_FALSE(next);
  EXPECT_THAT(next.error().message, HasSubstr("decompresses to more than the 150 bytes limit"));
}

// A .gz cut short: the complete lines come back, the cut one does not, and the reader says
// it was truncated (zlib reports it as Z_BUF_ERROR, not as a failed read: it went unseen).
TEST(LineReader, SaysWhenAGzipFileIsTruncated) {
  ScratchDir dir;
  gzFile gz = gzopen((dir / "cut.gz").c_str(), "wb1");
  for (int i = 0; i < 20000; ++i) gzprintf(gz, "line %d with some text to compress\n", i);
  gzclose(gz);
  const auto size = fs::file_size(dir / "cut.gz");
  fs::copy_file(dir / "cut.gz", dir / "whole.gz");
  fs::resize_file(dir / "cut.gz", size / 2);
  for (const char* name : {"whole.gz", "cut.gz"}) {
    auto reader = LineReader::Open(dir / name);
    ASSERT_TRUE(reader) << reader.error().message;
    std::string line, last;
    size_t lines = 0;
    for (;;) {
      auto more = (*reader)->Next(&line);
      ASSERT_TRUE(more) << more.error().message;
      if (!*more) break;
      ++lines;
      last = line;
    }
    const bool cut = std::string(name) == "cut.gz";
    EXPECT_EQ((*reader)->truncated(), cut) << name;
    if (cut) {
      EXPECT_GT(lines, 0u);
      EXPECT_LT(lines, 20000u);
      EXPECT_EQ(last, fmt::format("line {} with some text to compress", lines - 1));  // complete
    } else {
      EXPECT_EQ(lines, 20000u);
    }
  }
}

// A one-line gzip bomb costs at most the line cap: the line stops growing at the cap
// (before, a string doubling past it took twice the cap). Measured in a child's peak RSS.
TEST(LineReader, AOneLineBombCostsTheCapNotTwice) {
  ScratchDir dir;
  gzFile gz = gzopen((dir / "bomb.gz").c_str(), "wb9");
  std::string zeros(1 << 20, '0');
  for (int i = 0; i < 200; ++i) gzwrite(gz, zeros.data(), zeros.size());
  gzclose(gz);
  constexpr uint64_t kCap = 128 << 20;
  const pid_t child = fork();
  if (child == 0) {
    auto reader = LineReader::Open(dir / "bomb.gz", kCap);
    std::string line;
    auto next = reader ? (*reader)->Next(&line) : Result<bool>(false);
    _exit(!next && next.error().message.find("longer than the 128 MiB limit") != std::string::npos ? 0 : 1);
  }
  int status = 0;
  rusage usage{};
  ASSERT_EQ(wait4(child, &status, 0, &usage), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  rusage self{};
  getrusage(RUSAGE_SELF, &self);
  // The child starts as a copy of this process; the line may add the cap, not twice it.
  EXPECT_LT(static_cast<uint64_t>(usage.ru_maxrss) * 1024,
            static_cast<uint64_t>(self.ru_maxrss) * 1024 + kCap + kCap / 4);
}

}  // namespace
}  // namespace looptrace::loader
