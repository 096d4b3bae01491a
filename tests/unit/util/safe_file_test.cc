#include "looptrace/util/safe_file.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace looptrace {
namespace {

using ::testing::HasSubstr;

class ScratchDir {
 public:
  ScratchDir() {
    char templ[] = "/tmp/looptrace-safe-file-XXXXXX";
    path_ = mkdtemp(templ);
  }
  ~ScratchDir() { std::filesystem::remove_all(path_); }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

TEST(SafeFile, ReadsARegularFile) {
  ScratchDir dir;
  std::ofstream(dir / "a.txt") << "hello\n";
  auto text = ReadRegularFile(dir / "a.txt", "profile", 1024);
  ASSERT_TRUE(text) << text.error().message;
  EXPECT_EQ(*text, "hello\n");
}

TEST(SafeFile, MissingFileNamesTheFileAndTheErrno) {
  int err = -1;
  auto text = ReadRegularFile("/nonexistent/x.profile", "profile", 1024, ExitCode::kProfile, "", &err);
  ASSERT_FALSE(text);
  EXPECT_EQ(text.error().message, "cannot read profile /nonexistent/x.profile: No such file or directory");
  EXPECT_EQ(text.error().code, ExitCode::kProfile);
  EXPECT_EQ(err, ENOENT);
}

// A FIFO nobody writes to would block a plain open(2) forever.
TEST(SafeFile, FifoIsRefusedWithoutBlocking) {
  ScratchDir dir;
  ASSERT_EQ(mkfifo((dir / "fifo").c_str(), 0600), 0);
  const auto start = std::chrono::steady_clock::now();
  auto text = ReadRegularFile(dir / "fifo", "profile", 1024, ExitCode::kProfile);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  ASSERT_FALSE(text);
  EXPECT_THAT(text.error().message, HasSubstr("it is a FIFO, not a regular file"));
  EXPECT_EQ(text.error().code, ExitCode::kProfile);
}

// /dev/zero never ends: reading it until EOF would exhaust memory.
TEST(SafeFile, EndlessDeviceIsRefused) {
  auto text = ReadRegularFile("/dev/zero", "profile", 1024);
  ASSERT_FALSE(text);
  EXPECT_THAT(text.error().message, HasSubstr("/dev/zero: it is a character device"));
}

TEST(SafeFile, DirectoryIsAnError) {
  ScratchDir dir;
  std::filesystem::create_directory(dir / "d");
  auto text = ReadRegularFile(dir / "d", "", 1024);
  ASSERT_FALSE(text);
  EXPECT_THAT(text.error().message, HasSubstr("Is a directory"));
}

TEST(SafeFile, FileOverTheCapIsRefusedBeforeReading) {
  ScratchDir dir;
  { std::ofstream out(dir / "big"); }
  ASSERT_EQ(truncate((dir / "big").c_str(), 3 * 1024 * 1024), 0);  // sparse, 3 MiB
  auto text = ReadRegularFile(dir / "big", "profile", kMaxProfileBytes, ExitCode::kProfile);
  ASSERT_FALSE(text);
  EXPECT_THAT(text.error().message, HasSubstr("3 MiB is over the 1 MiB limit for profile"));
  EXPECT_EQ(text.error().code, ExitCode::kProfile);
}

// /proc files report size 0 and are still read in full (and capped while read).
TEST(SafeFile, ProcFilesAreReadAndCapped) {
  auto status = ReadRegularFile("/proc/self/status", "", kMaxProcFileBytes);
  ASSERT_TRUE(status) << status.error().message;
  EXPECT_THAT(*status, HasSubstr("Pid:"));
  auto capped = ReadRegularFile("/proc/self/status", "", 16);
  ASSERT_FALSE(capped);
  EXPECT_THAT(capped.error().message, HasSubstr("over the 16 bytes limit"));
}

TEST(SafeFile, OpenRegularFileGivesABlockingDescriptor) {
  ScratchDir dir;
  std::ofstream(dir / "x") << "abc";
  auto file = OpenRegularFile(dir / "x", "", 100);
  ASSERT_TRUE(file) << file.error().message;
  EXPECT_EQ(file->size, 3u);
  EXPECT_EQ(fcntl(file->fd.get(), F_GETFL) & O_NONBLOCK, 0);
  EXPECT_NE(fcntl(file->fd.get(), F_GETFD) & FD_CLOEXEC, 0);
}

TEST(SafeFile, FormatBytes) {
  EXPECT_EQ(FormatBytes(300), "300 bytes");
  EXPECT_EQ(FormatBytes(2048), "2 KiB");
  EXPECT_EQ(FormatBytes(kMaxProfileBytes), "1 MiB");
  EXPECT_EQ(FormatBytes(kMaxRecordingBytes), "64 GiB");
  EXPECT_EQ(FormatBytes(1536 * kMiB), "1.5 GiB");
}

}  // namespace
}  // namespace looptrace
