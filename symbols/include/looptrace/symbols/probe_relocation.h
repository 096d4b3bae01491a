// Equivalent probe points for functions whose first instruction the kernel single-steps
// (x86-64), found by disassembling the binary with capstone.
//
// A uprobe costs one trap; when the probed instruction is not one the kernel emulates
// (nop, push, call, jmp, jcc: probe_cost.h) it is also single-stepped out of line, about
// 15x the cost here. Optimized code (-O2, no frame pointers) mostly starts functions with
// mov/sub/test, and the empty hooks of -finstrument-functions are a lone ret. Two kinds of
// equivalent points exist:
//
// - later in the entry block: the first emulated instruction of the entry basic block,
//   when nothing can reach the skipped instructions except the function's entry and they
//   write none of the argument registers the profile reads;
// - the call sites: a direct `call <fn>` (or tail-call `jmp <fn>`) has the callee's
//   arguments in their registers and is emulated; the instruction after a call sees the
//   return value in %rax, like a uretprobe, without a trap at the callee's entry.
//
// Every conclusion is conservative: whatever cannot be proven from the bytes falls back
// to the exact entry, with the reason.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "looptrace/symbols/elf_file.h"
#include "looptrace/symbols/probe_cost.h"
#include "looptrace/util/result.h"

namespace looptrace::symbols {

// One instruction where a probe can be attached.
struct CodeLocation {
  uint64_t address = 0;      // virtual address in the ELF
  uint64_t file_offset = 0;  // what the kernel's uprobe wants
  InstructionInfo instruction;
};

// Bit i: argument register i+1 of the SysV x86-64 calling convention
// (%rdi, %rsi, %rdx, %rcx, %r8, %r9); bit 6: %rax, the return value.
using ArgumentMask = uint32_t;
inline constexpr ArgumentMask kReturnRegister = 1u << 6;

// "%rdi" for index 0 .. "%r9" for index 5, "%rax" for 6.
const char* ArgumentRegisterName(int index);

// The first emulated instruction of a function's entry block.
struct EntryBlockPoint {
  // Set when usable: an instruction after the entry, in the entry basic block (no
  // control transfer before it), that the kernel emulates, such that no branch, call,
  // address reference or other symbol lands on the skipped instructions or on it, the
  // function has no indirect jump (a jump table could), and no code can fall through
  // into the function's entry. Check `written_arguments` against the registers a probe
  // reads before using it.
  std::optional<CodeLocation> point;
  std::string skipped;                 // the skipped instructions, "mov, sub"
  ArgumentMask written_arguments = 0;  // argument registers the skipped instructions write
  bool writes_memory = false;          // they store to memory not addressed through %rsp
  std::string why_not;                 // set when `point` is empty
};

struct CallSite {
  CodeLocation site;       // the call (or tail-call jmp) instruction
  bool tail_call = false;  // an unconditional `jmp <fn>`
  std::string caller;      // demangled name of the function containing the site, "" if none
  // The instruction after a call, where the callee returned and %rax holds its return
  // value. Empty for a tail call and whenever anything else can reach that address (a
  // branch or reference to it, an indirect jump in the caller, the end of the caller).
  std::optional<CodeLocation> after;
  std::string after_why_not;
  // When `after` is single-stepped: the first emulated instruction of the block it starts,
  // if no control transfer comes first and nothing but that return reaches the skipped
  // instructions or it. Check `after_written` against the registers a probe reads.
  std::optional<CodeLocation> after_emulated;
  std::string after_skipped;         // "mov, add"
  ArgumentMask after_written = 0;    // registers the skipped instructions write
  bool after_writes_memory = false;  // they store to memory not addressed through %rsp
};

struct CallSites {
  // True when every entry into the function is one of `sites`: no other module can call
  // it (it is not in .dynsym, or it is and none of the target's other modules imports its
  // name, see OtherModules), it is not the program's entry point or a DT_INIT/DT_FINI
  // function, no instruction, datum or relocation holds its address, no conditional
  // branch reaches it, and no code can fall through into it.
  bool complete = false;
  std::string why_not;  // set when !complete
  std::string note;     // a condition the conclusion rests on ("exported, but ...")
  std::vector<CallSite> sites;
};

// The other modules of the target process and the symbol names each imports (undefined
// in its .dynsym): an exported function may be called by a module that imports its name.
// A library loaded later (dlopen) is not known here.
struct OtherModules {
  std::vector<std::pair<std::string, std::vector<std::string>>> imports;  // (path, sorted names)
};

// Names of the undefined symbols of `path`'s .dynsym (what it imports), sorted.
Result<std::vector<std::string>> ReadDynamicImports(const std::string& path);

struct RelocationAnalysis {
  EntryBlockPoint entry_block;
  CallSites call_sites;
};

// Analyses functions of one ELF file. Not thread-safe; `elf` must outlive it.
class ProbeRelocator {
 public:
  static Result<std::unique_ptr<ProbeRelocator>> Create(const ElfFile& elf);
  ~ProbeRelocator();
  ProbeRelocator(const ProbeRelocator&) = delete;
  ProbeRelocator& operator=(const ProbeRelocator&) = delete;

  // One result per function, in order. The binary's code is scanned twice whatever the
  // number of functions (for references to their entries and entry blocks, then to the
  // instructions after their call sites), so pass them in one batch.
  // `others`: the target's other modules; without it every exported function keeps
  // its entry.
  std::vector<RelocationAnalysis> Analyze(std::span<const Symbol* const> functions,
                                          const OtherModules* others = nullptr);

 private:
  struct Impl;
  explicit ProbeRelocator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace looptrace::symbols
