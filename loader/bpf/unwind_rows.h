// Keeps the BPF stack walker's .eh_frame rows (events.h: lt_unwind_row) in step with the
// target's executable mappings: each module's rows compiled once (symbols/unwind_table.h)
// and appended to the unwind_rows array, then the sorted list of mappings that use them.
// Code without rows (JIT, anonymous mappings, a module's code its .eh_frame leaves out) is
// walked by frame pointers in BPF.
//
// The array is sized before the BPF programs load, from the modules compiled by then: the
// running target's mappings, or for a command not started yet its executable and the
// libraries it needs; libraries loaded later take the room left (RowCapacity).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "loader/bpf/bpf_session.h"
#include "looptrace/symbols/unwind_table.h"

namespace looptrace::loader {

class UnwindRowsPublisher {
 public:
  explicit UnwindRowsPublisher(int pid) : pid_(pid) {}

  // Before the BPF programs load. A running target: the tables of its executable mappings.
  void CompileMapped();
  // A command not started yet (run): `exe_path` and the libraries it needs, as ld.so would
  // find them, so the first Sync after its exec only copies rows.
  void Precompile(const std::string& exe_path, const std::string& ld_library_path);
  // Entries for unwind_rows: what was compiled, with room for modules loaded later.
  size_t RowCapacity() const;

  // After the BPF programs load: where rows go.
  void SetBpf(BpfSession* bpf, size_t capacity) {
    bpf_ = bpf;
    capacity_ = capacity;
  }
  // Modules (by basename) that are the interpreter's own code, whose frames the runtime's
  // default view replaces by its own: flagged LT_MODULE_INTERPRETER, so BPF stops a walk
  // there. Published at the next Sync.
  using ModulePredicate = std::function<bool(std::string_view basename)>;
  void SetInterpreterModules(ModulePredicate is_interpreter) {
    is_interpreter_ = std::move(is_interpreter);
    published_.clear();
  }

  // Re-reads the target's mappings and publishes them when they changed (first call: all).
  // A held child that has not exec'd yet (still a copy of looptrace) is skipped.
  void Sync();

  size_t modules() const { return modules_published_; }
  size_t rows() const { return next_row_; }
  // Modules whose rows did not fit: stacks through their code stop there.
  size_t modules_without_room() const { return without_room_.size(); }

 private:
  using MappingKey = std::tuple<uint64_t, uint64_t, uint64_t>;  // start, end, inode

  // Where the rows of `module` start in unwind_rows, written on first use; -1 without room.
  int64_t FirstRowOf(const symbols::TableUnwinder::MappedModule& module);

  int pid_;
  BpfSession* bpf_ = nullptr;
  size_t capacity_ = 0;
  symbols::TableUnwinder tables_;
  size_t compiled_rows_ = 0;
  std::map<const symbols::UnwindTable*, uint32_t> first_rows_;
  uint32_t next_row_ = 0;
  ModulePredicate is_interpreter_;
  std::vector<MappingKey> published_;
  size_t modules_published_ = 0;
  std::set<const symbols::UnwindTable*> without_room_;
};

}  // namespace looptrace::loader
