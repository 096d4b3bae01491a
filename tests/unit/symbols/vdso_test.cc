#include "looptrace/symbols/vdso.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "looptrace/symbols/proc_maps.h"
#include "looptrace/symbols/unwind_table.h"

namespace looptrace::symbols {
namespace {

std::optional<MapEntry> VdsoOf(int pid) {
  auto maps = ReadProcMaps(pid);
  if (!maps) return std::nullopt;
  for (const MapEntry& map : *maps)
    if (map.path == "[vdso]") return map;
  return std::nullopt;
}

// A child that waits to be killed (it keeps the vDSO it was started with).
class IdleChild {
 public:
  IdleChild() : pid_(fork()) {
    if (pid_ == 0) {
      pause();
      _exit(0);
    }
  }
  ~IdleChild() {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  IdleChild(const IdleChild&) = delete;
  IdleChild& operator=(const IdleChild&) = delete;
  int pid() const { return pid_; }

 private:
  int pid_;
};

// The unwind rows of a target's [vdso] come from the image the target maps, read from its
// memory; the same bytes as looptrace's own share its copy (compiled once).
TEST(VdsoTest, ATargetsImageIsReadFromItsMemory) {
  if (VdsoImagePath().empty()) GTEST_SKIP() << "no vDSO";
  IdleChild child;
  ASSERT_GT(child.pid(), 0);
  const std::optional<MapEntry> vdso = VdsoOf(child.pid());
  ASSERT_TRUE(vdso.has_value());
  EXPECT_EQ(TargetVdsoImagePath(child.pid(), vdso->start, vdso->end), VdsoImagePath());

  TableUnwinder tables;
  const TableUnwinder::MappedModule* module = tables.ModuleOf(child.pid(), *vdso);
  ASSERT_NE(module, nullptr);
  ASSERT_NE(module->table, nullptr);
  EXPECT_EQ(module->bias, vdso->start);
  EXPECT_GE(module->table->fdes, 2u) << "clock_gettime, gettimeofday, ...";
  EXPECT_GT(module->table->covered_bytes, 0u);
}

TEST(VdsoTest, WhatIsNoImageIsRefused) {
  IdleChild child;
  ASSERT_GT(child.pid(), 0);
  const std::optional<MapEntry> vdso = VdsoOf(child.pid());
  ASSERT_TRUE(vdso.has_value());
  // Too large, empty, unmapped, or bytes that are not an ELF header (the middle of the image).
  EXPECT_EQ(TargetVdsoImagePath(child.pid(), vdso->start, vdso->start + kMaxVdsoBytes + 4096), "");
  EXPECT_EQ(TargetVdsoImagePath(child.pid(), vdso->start, vdso->start), "");
  EXPECT_EQ(TargetVdsoImagePath(child.pid(), 0x1000, 0x3000), "");
  EXPECT_EQ(TargetVdsoImagePath(child.pid(), vdso->start + 64, vdso->end), "");
  EXPECT_EQ(TargetVdsoImagePath(999999999, vdso->start, vdso->end), "");
}

}  // namespace
}  // namespace looptrace::symbols
