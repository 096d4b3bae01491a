#include "looptrace/symbols/proc_maps.h"

#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>

#include "looptrace/symbols/elf_file.h"
#include "symbols_test_util.h"

extern char** environ;

namespace looptrace::symbols {
namespace {

using test_util::FixturePath;
using test_util::ReadFile;
using test_util::TempDir;
using test_util::WriteFile;
using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Optional;

constexpr std::string_view kMaps =
    "55d4a1c00000-55d4a1c02000 r--p 00000000 08:01 1311234                    /usr/bin/app\n"
    "55d4a1c02000-55d4a1c05000 r-xp 00002000 08:01 1311234                    /usr/bin/app\n"
    "55d4a2e4b000-55d4a2e6c000 rw-p 00000000 00:00 0                          [heap]\n"
    "7f0e1c000000-7f0e1c021000 rw-p 00000000 00:00 0 \n"
    "7f0e1c100000-7f0e1c121000 ---p 00000000 00:00 0\n"
    "7f0e20a00000-7f0e20a28000 r--p 00000000 fe:01 2621538                    "
    "/usr/lib/x86_64-linux-gnu/libc.so.6\n"
    "7f0e20a28000-7f0e20b9d000 r-xp 00028000 fe:01 2621538                    "
    "/usr/lib/x86_64-linux-gnu/libc.so.6\n"
    "7f0e20c00000-7f0e20c10000 r-xp 00000000 00:01 4096                       /memfd:jit-code (deleted)\n"
    "7f0e20d00000-7f0e20d10000 r-xp 00001000 103:02 777                       "
    "/opt/app/lib/libplugin.so (deleted)\n"
    "7f0e20e00000-7f0e20e10000 r-xp 00000000 08:01 888                        /opt/my app/libspace y.so\n"
    "7f0e20f00000-7f0e20f10000 r-xp 00000000 08:01 999                        "
    "/usr/lib/x86_64-linux-gnu/libglib-2.0.so.0.7400.6\n"
    "7f0e21000000-7f0e21001000 rw-p 00000000 00:00 0                          [anon:some name]\n"
    "7ffd5e0d2000-7ffd5e0f3000 rw-p 00000000 00:00 0                          [stack]\n"
    "7ffd5e1b8000-7ffd5e1bc000 r--p 00000000 00:00 0                          [vvar]\n"
    "7ffd5e1bc000-7ffd5e1be000 r-xp 00000000 00:00 0                          [vdso]\n"
    "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]";

TEST(ParseProcMaps, ParsesEveryKindOfMapping) {
  size_t malformed = 99;
  const std::vector<MapEntry> maps = ParseProcMaps(kMaps, &malformed);
  EXPECT_EQ(malformed, 0u);
  ASSERT_EQ(maps.size(), 16u);

  const MapEntry& exe_text = maps[1];
  EXPECT_EQ(exe_text.start, 0x55d4a1c02000u);
  EXPECT_EQ(exe_text.end, 0x55d4a1c05000u);
  EXPECT_EQ(exe_text.offset, 0x2000u);
  EXPECT_EQ(exe_text.perms, "r-xp");
  EXPECT_EQ(exe_text.dev_major, 8u);
  EXPECT_EQ(exe_text.dev_minor, 1u);
  EXPECT_EQ(exe_text.inode, 1311234u);
  EXPECT_EQ(exe_text.path, "/usr/bin/app");
  EXPECT_FALSE(exe_text.deleted);
  EXPECT_TRUE(exe_text.is_executable());
  EXPECT_TRUE(exe_text.is_file());
  EXPECT_FALSE(maps[0].is_executable());

  EXPECT_EQ(maps[2].path, "[heap]");
  EXPECT_FALSE(maps[2].is_file());
  EXPECT_EQ(maps[3].path, "");  // anonymous, with a trailing space
  EXPECT_EQ(maps[3].inode, 0u);
  EXPECT_EQ(maps[4].path, "");  // anonymous, no trailing space
  EXPECT_EQ(maps[4].perms, "---p");
  EXPECT_EQ(maps[5].dev_major, 0xfeu);

  const MapEntry& memfd = maps[7];
  EXPECT_EQ(memfd.path, "/memfd:jit-code");
  EXPECT_TRUE(memfd.deleted);

  const MapEntry& plugin = maps[8];
  EXPECT_EQ(plugin.path, "/opt/app/lib/libplugin.so");
  EXPECT_TRUE(plugin.deleted);
  EXPECT_EQ(plugin.dev_major, 0x103u);
  EXPECT_EQ(plugin.dev_minor, 2u);

  EXPECT_EQ(maps[9].path, "/opt/my app/libspace y.so");
  EXPECT_EQ(maps[11].path, "[anon:some name]");
  EXPECT_EQ(maps[12].path, "[stack]");
  EXPECT_EQ(maps[14].path, "[vdso]");
  EXPECT_EQ(maps[15].start, 0xffffffffff600000u);
  EXPECT_EQ(maps[15].path, "[vsyscall]");
}

TEST(ParseProcMaps, CountsMalformedLines) {
  size_t malformed = 0;
  const auto maps = ParseProcMaps(
      "garbage\n"
      "2000-1000 r--p 00000000 08:01 1 /reversed\n"
      "1000-2000 rwx 00000000 08:01 1 /short-perms\n"
      "1000-2000 r-xp zz 08:01 1 /bad-offset\n"
      "1000-2000 r-xp 00000000 0801 1 /bad-dev\n"
      "1000-2000 r-xp 00000000 08:01 x /bad-inode\n"
      "1000 r-xp 00000000 08:01 1 /no-end\n"
      "\n"
      "1000-2000 r-xp 00000000 08:01 1 /good\n",
      &malformed);
  EXPECT_EQ(malformed, 7u);
  ASSERT_EQ(maps.size(), 1u);
  EXPECT_EQ(maps[0].path, "/good");
  EXPECT_TRUE(ParseProcMaps("").empty());
}

TEST(FindMappedFile, MatchesPathsAndBasenames) {
  const std::vector<MapEntry> maps = ParseProcMaps(kMaps);
  EXPECT_THAT(FindMappedFile(maps, "libc.so.6"), Optional(std::string("/usr/lib/x86_64-linux-gnu/libc.so.6")));
  EXPECT_THAT(FindMappedFile(maps, "libglib-2.0.so"),
              Optional(std::string("/usr/lib/x86_64-linux-gnu/libglib-2.0.so.0.7400.6")));
  EXPECT_THAT(FindMappedFile(maps, "libc"), Optional(std::string("/usr/lib/x86_64-linux-gnu/libc.so.6")));
  EXPECT_THAT(FindMappedFile(maps, "/usr/bin/app"), Optional(std::string("/usr/bin/app")));
  EXPECT_THAT(FindMappedFile(maps, "libspace y.so"), Optional(std::string("/opt/my app/libspace y.so")));
  EXPECT_THAT(FindMappedFile(maps, "lib/libplugin.so"), Optional(std::string("/opt/app/lib/libplugin.so")));
  // Only a deleted mapping matches: it is still returned.
  EXPECT_THAT(FindMappedFile(maps, "libplugin.so"), Optional(std::string("/opt/app/lib/libplugin.so")));
  EXPECT_EQ(FindMappedFile(maps, "libnothing.so"), std::nullopt);
  EXPECT_EQ(FindMappedFile(maps, "[heap]"), std::nullopt);
  EXPECT_EQ(FindMappedFile(maps, ""), std::nullopt);
  // Unmapped absolute paths count if they exist.
  EXPECT_THAT(FindMappedFile(maps, "/bin/sh"), Optional(std::string("/bin/sh")));
  EXPECT_EQ(FindMappedFile(maps, "/nonexistent/libx.so"), std::nullopt);
}

TEST(FindMappedFile, PrefersExactBasenameAndLiveFiles) {
  const std::vector<MapEntry> maps = ParseProcMaps(
      "1000-2000 r-xp 00000000 08:01 1 /old/libfoo.so.1 (deleted)\n"
      "3000-4000 r-xp 00000000 08:01 2 /usr/lib/libfoo.so.1.2\n"
      "5000-6000 r-xp 00000000 08:01 3 /usr/lib/libfoo.so.1\n"
      "7000-8000 r-xp 00000000 08:01 4 /usr/lib/libfoobar.so\n");
  EXPECT_THAT(FindMappedFile(maps, "libfoo.so.1"), Optional(std::string("/usr/lib/libfoo.so.1")));
  EXPECT_THAT(FindMappedFile(maps, "libfoo"), Optional(std::string("/usr/lib/libfoo.so.1")));
  EXPECT_THAT(FindMappedFile(maps, "libfoob"), Optional(std::string("/usr/lib/libfoobar.so")));
}

TEST(FindMappedFile, ThroughProcRoot) {
  const std::vector<MapEntry> maps = ParseProcMaps(kMaps);
  EXPECT_THAT(FindMappedFile(maps, "libc.so.6", 1234, true),
              Optional(std::string("/proc/1234/root/usr/lib/x86_64-linux-gnu/libc.so.6")));
  EXPECT_THAT(FindMappedFile(maps, "libc.so.6", 1234, false),
              Optional(std::string("/usr/lib/x86_64-linux-gnu/libc.so.6")));
  EXPECT_THAT(FindMappedFile(maps, "libplugin.so", 1234, true),
              Optional(std::string("/proc/1234/map_files/7f0e20d00000-7f0e20d10000")));
  const std::string self_root = "/proc/" + std::to_string(getpid()) + "/root/bin/sh";
  EXPECT_THAT(FindMappedFile(maps, "/bin/sh", getpid(), true), Optional(self_root));
  EXPECT_EQ(ProcRootPath(7, "/usr/lib/x.so"), "/proc/7/root/usr/lib/x.so");
}

TEST(ReadProcMaps, FindsLibcInThisProcess) {
  auto maps = ReadProcMaps(getpid());
  ASSERT_TRUE(maps.has_value()) << maps.error().message;
  bool executable_libc = false;
  bool stack = false;
  for (const MapEntry& entry : *maps) {
    if (entry.path.ends_with("/libc.so.6") && entry.is_executable()) executable_libc = true;
    if (entry.path == "[stack]") stack = true;
  }
  EXPECT_TRUE(executable_libc);
  EXPECT_TRUE(stack);
  auto libc = FindMappedFile(*maps, "libc.so.6");
  ASSERT_TRUE(libc.has_value());
  EXPECT_THAT(*libc, EndsWith("/libc.so.6"));
  auto elf = ElfFile::Open(*libc);
  ASSERT_TRUE(elf.has_value()) << elf.error().message;
  EXPECT_FALSE(elf->FindFunctions("malloc").empty());

  auto via_root = FindMappedFile(*maps, "libc.so.6", getpid(), true);
  ASSERT_TRUE(via_root.has_value());
  EXPECT_TRUE(ElfFile::Open(*via_root).has_value());
}

TEST(ReadProcMaps, MissingProcessIsAnError) {
  auto maps = ReadProcMaps(INT_MAX);
  ASSERT_FALSE(maps.has_value());
  EXPECT_EQ(maps.error().message, "cannot read /proc/" + std::to_string(INT_MAX) + "/maps: No such file or directory");
  EXPECT_EQ(maps.error().code, ExitCode::kTarget);
}

TEST(ReadProcMaps, SeesLibrariesOfAChildProcess) {
  int to_child[2];
  int from_child[2];
  ASSERT_EQ(pipe(to_child), 0);
  ASSERT_EQ(pipe(from_child), 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, to_child[0], 0);
  posix_spawn_file_actions_adddup2(&actions, from_child[1], 1);
  posix_spawn_file_actions_addclose(&actions, to_child[1]);
  posix_spawn_file_actions_addclose(&actions, from_child[0]);
  const std::string exe = FixturePath("lib_user");
  char arg0[] = "lib_user";
  char arg1[] = "wait";
  char* argv[] = {arg0, arg1, nullptr};
  pid_t pid = 0;
  ASSERT_EQ(posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv, environ), 0);
  posix_spawn_file_actions_destroy(&actions);
  close(to_child[0]);
  close(from_child[1]);
  char ready[6] = {};
  ASSERT_EQ(read(from_child[0], ready, 6), 6);

  auto maps = ReadProcMaps(pid);
  auto lib = maps ? FindMappedFile(*maps, "libltfixture.so") : std::nullopt;
  auto lib_root = maps ? FindMappedFile(*maps, "libltfixture.so", pid, true) : std::nullopt;
  std::optional<size_t> lib_functions;
  if (lib_root) {
    if (auto elf = ElfFile::Open(*lib_root)) lib_functions = elf->FindFunctions("lt_lib_new_api").size();
  }
  close(to_child[1]);
  close(from_child[0]);
  int status = 0;
  waitpid(pid, &status, 0);

  ASSERT_TRUE(maps.has_value()) << maps.error().message;
  EXPECT_THAT(lib, Optional(EndsWith("/libltfixture.so.1.2.3")));
  EXPECT_THAT(lib_root, Optional(HasSubstr("/proc/" + std::to_string(pid) + "/root/")));
  EXPECT_THAT(lib_functions, Optional(1u));
}

TEST(FindMappedFile, DeletedLibraryIsReachableThroughMapFiles) {
  TempDir dir;
  const std::string copy = dir.File("libltdeleted.so");
  WriteFile(copy, ReadFile(FixturePath("libltfixture.so")));
  void* handle = dlopen(copy.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  ASSERT_EQ(unlink(copy.c_str()), 0);

  auto maps = ReadProcMaps(getpid());
  std::optional<std::string> path;
  bool deleted_entry = false;
  if (maps) {
    for (const MapEntry& entry : *maps) {
      if (entry.path == copy && entry.deleted) deleted_entry = true;
    }
    path = FindMappedFile(*maps, "libltdeleted.so", getpid(), true);
  }
  std::optional<size_t> functions;
  if (path) {
    if (auto elf = ElfFile::Open(*path)) functions = elf->FindFunctions("lt_lib_new_api").size();
  }
  dlclose(handle);

  ASSERT_TRUE(maps.has_value());
  EXPECT_TRUE(deleted_entry);
  EXPECT_THAT(path, Optional(HasSubstr("/map_files/")));
  EXPECT_THAT(functions, Optional(1u));
}

TEST(SearchLibrary, FindsSystemLibraries) {
  EXPECT_THAT(SearchLibrary("libc.so.6", "", ""), Optional(EndsWith("/libc.so.6")));
  // libc.so in the -dev package is a linker script: skipped for the real library.
  EXPECT_THAT(SearchLibrary("libc.so", "", ""), Optional(EndsWith("/libc.so.6")));
  EXPECT_THAT(SearchLibrary("libelf", "", ""), Optional(HasSubstr("/libelf")));
  EXPECT_EQ(SearchLibrary("libdoes-not-exist.so", "", ""), std::nullopt);
  EXPECT_EQ(SearchLibrary("", "", ""), std::nullopt);
}

TEST(SearchLibrary, PathsAreReturnedIfTheyExist) {
  EXPECT_THAT(SearchLibrary("/bin/sh", "", ""), Optional(std::string("/bin/sh")));
  EXPECT_EQ(SearchLibrary("/nonexistent/libx.so", "", ""), std::nullopt);
}

TEST(SearchLibrary, UsesLdLibraryPathFirst) {
  const std::string fixtures = LOOPTRACE_FIXTURE_DIR;
  EXPECT_THAT(SearchLibrary("libltfixture.so.1", fixtures, ""), Optional(fixtures + "/libltfixture.so.1"));
  // Prefix match: the shortest .so name starting with the prefix.
  EXPECT_THAT(SearchLibrary("libltfix", "/nonexistent:" + fixtures, ""), Optional(fixtures + "/libltfixture.so"));

  TempDir dir;
  WriteFile(dir.File("libltfixture.so.1"), ReadFile(fixtures + "/libltfixture.so.1.2.3"));
  EXPECT_THAT(SearchLibrary("libltfixture.so.1", dir.path() + ":" + fixtures, ""),
              Optional(dir.File("libltfixture.so.1")));
  EXPECT_THAT(SearchLibrary("libltfixture.so.1", fixtures + ":" + dir.path(), ""),
              Optional(fixtures + "/libltfixture.so.1"));

  // Non-ELF files are skipped.
  WriteFile(dir.File("libfake.so.1"), "not an ELF file");
  EXPECT_EQ(SearchLibrary("libfake.so.1", dir.path(), ""), std::nullopt);
}

TEST(SearchLibrary, UsesTheExecutablesRunpath) {
  const std::string fixtures = LOOPTRACE_FIXTURE_DIR;
  EXPECT_EQ(SearchLibrary("libltfixture.so.1", "", ""), std::nullopt);
  EXPECT_THAT(SearchLibrary("libltfixture.so.1", "", fixtures + "/lib_user"),
              Optional(fixtures + "/libltfixture.so.1"));
  EXPECT_THAT(SearchLibrary("libc.so.6", "", fixtures + "/lib_user"), Optional(EndsWith("/libc.so.6")));
  // A missing exe is not an error: only its run path is lost.
  EXPECT_THAT(SearchLibrary("libc.so.6", "", "/nonexistent/exe"), Optional(EndsWith("/libc.so.6")));
}

}  // namespace
}  // namespace looptrace::symbols
